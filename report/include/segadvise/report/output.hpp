// Printers, apart from computation: the same results as a table, markdown or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/planner/advisor.hpp"
#include "segadvise/report/format.hpp"

namespace segadvise::cli {

// A simple aligned table, or a markdown one (TextFormat::table picks).
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out, bool markdown) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Printed width of a UTF-8 string: code points, not bytes ("14.8–18.9": the dash is 3 bytes, one column).
std::size_t columns(const std::string& s);

class TextFormat;  // text_format.hpp

void print_setup(std::ostream& out, const Context& ctx, const TextFormat& fmt);
// `verdict`: the prediction's 90% range against the card (the first line's fits / borderline / does NOT fit)
void print_prediction(std::ostream& out, const Prediction& p, FitVerdict verdict, const TextFormat& fmt);

}  // namespace segadvise::cli
