#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

class TableLayout final : public TextFormat {
 public:
  std::string section(int, const std::string&, const std::string& table_line) const override { return table_line; }
  std::string item(const std::string& table_mark) const override { return table_mark; }
  std::string strong(const std::string& text) const override { return text; }
  std::string code(const std::string& text) const override { return text; }
  std::string code_block(const std::string&, const std::string& text) const override { return text; }
  std::string gap() const override { return ""; }
  std::string either(const std::string& table_text, const std::string&) const override { return table_text; }
  void table(std::ostream& out, const Table& t) const override { t.print(out, false); }
};

class MarkdownLayout final : public TextFormat {
 public:
  std::string section(int level, const std::string& title, const std::string&) const override {
    return std::string(static_cast<std::size_t>(level), '#') + " " + title + "\n\n";
  }
  std::string item(const std::string&) const override { return "- "; }
  std::string strong(const std::string& text) const override { return "**" + text + "**"; }
  std::string code(const std::string& text) const override { return "`" + text + "`"; }
  std::string code_block(const std::string& lang, const std::string& text) const override {
    return "```" + lang + "\n" + text + "```\n";
  }
  std::string gap() const override { return "\n"; }
  std::string either(const std::string&, const std::string& markdown_text) const override { return markdown_text; }
  void table(std::ostream& out, const Table& t) const override { t.print(out, true); }
};

}  // namespace

const TextFormat& table_format() {
  static const TableLayout f;
  return f;
}

const TextFormat& markdown_format() {
  static const MarkdownLayout f;
  return f;
}

}  // namespace segadvise::cli
