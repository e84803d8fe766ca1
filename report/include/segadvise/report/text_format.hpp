// The two text layouts of a report, the aligned table layout for a terminal and markdown, as one
// abstraction: every text helper writes through a TextFormat, never by testing which one it is.
#pragma once

#include <ostream>
#include <string>

#include "segadvise/report/output.hpp"

namespace segadvise::cli {

class TextFormat {
 public:
  virtual ~TextFormat() = default;
  // A section title: "### title\n\n" in markdown (level 3); `table_line` as given in the table layout,
  // which words its titles for a terminal ("Recommendation: ", "Setup (assumed …):\n", or nothing).
  virtual std::string section(int level, const std::string& title, const std::string& table_line) const = 0;
  // The start of a list item: "- " in markdown, `table_mark` in the table layout.
  virtual std::string item(const std::string& table_mark = "  ") const = 0;
  virtual std::string strong(const std::string& text) const = 0;  // **text** | text
  virtual std::string code(const std::string& text) const = 0;    // `text` | text
  // Lines of code or config (ending in a newline): fenced as `lang` in markdown, as they are otherwise.
  virtual std::string code_block(const std::string& lang, const std::string& text) const = 0;
  // The blank line markdown needs between a block (a table, a list) and the paragraph after it.
  virtual std::string gap() const = 0;
  // Where the two layouts word a thing differently.
  virtual std::string either(const std::string& table_text, const std::string& markdown_text) const = 0;
  virtual void table(std::ostream& out, const Table& t) const = 0;
};

const TextFormat& table_format();
const TextFormat& markdown_format();

}  // namespace segadvise::cli
