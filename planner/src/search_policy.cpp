#include "segadvise/planner/search_policy.hpp"

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

// The array `field` of `r`, each element read by `each(reader of the array, "field[i]", element)`.
template <class Each>
void each_element(const FieldReader& r, const std::string& field, Each each) {
  const json* v = r.get(field, true);
  if (!v->is_array() || v->empty()) r.fail(field, "must be a non-empty list, got " + brief(*v));
  for (std::size_t i = 0; i < v->size(); ++i) each(r.where(field + "[" + std::to_string(i) + "]"), (*v)[i]);
}

WhatWouldFitPolicy parse_what_would_fit(const FieldReader& r) {
  WhatWouldFitPolicy p;
  p.batch_divisor = r.integer("batch_divisor", 0, true, 2, 1 << 16);
  each_element(r, "resolution_scales", [&](const std::string& where, const json& e) {
    const double f = checked_number(e, where, 0, 1);
    if (!(f > 0 && f < 1)) throw InputError(where + ": a scale must lie strictly between 0 and 1, got " + brief(e));
    p.resolution_scales.push_back(f);
  });
  each_element(r, "frame_fractions", [&](const std::string& where, const json& e) {
    if (!e.is_array() || e.size() != 2) throw InputError(where + ": expected [numerator, denominator], got " + brief(e));
    const int num = static_cast<int>(checked_integer(e[0], where + "[0]", 1, 1 << 16));
    const int den = static_cast<int>(checked_integer(e[1], where + "[1]", 2, 1 << 16));
    if (num >= den) throw InputError(where + ": the fraction must be below 1, got " + brief(e));
    p.frame_fractions.push_back({num, den});
  });
  each_element(r, "quantized_precisions", [&](const std::string& where, const json& e) {
    if (!e.is_string()) throw InputError(where + ": expected a base_model_precision, got " + brief(e));
    const std::string name = e.get<std::string>();
    if (!precision_info(name).quantized)
      throw InputError(where + ": '" + brief_text(name) + "' is not a quantized base_model_precision");
    p.quantized_precisions.push_back(name);
  });
  p.ramtorch_percent = r.num("ramtorch_percent", 0, true, 1, 100);
  return p;
}

}  // namespace

SearchPolicy parse_search_policy(const json& j, const std::string& origin) {
  const FieldReader r{j, origin, ""};
  SearchPolicy p;
  p.source = r.str("source", "", true);
  p.what_would_fit = parse_what_would_fit(r.sub("what_would_fit", true));
  const FieldReader ls = r.sub("long_sequence", true);
  p.long_sequence_blocks = ls.integer("blocks", 0, true, 1, 1 << 20);
  p.long_sequence_max_interval = ls.integer("max_interval", 0, true, 2, 1 << 20);
  return p;
}

const SearchPolicy& search_policy() {
  static const SearchPolicy policy = [] {
    const std::string origin = "planner/data/search.json";
    for (std::size_t i = 0; i < kPlannerDataCount; ++i)
      if (std::string(kPlannerData[i].name) == "search.json")
        return parse_search_policy(parse_json_text(kPlannerData[i].text, origin), origin);
    throw InputError(origin + ": not compiled in");
  }();
  return policy;
}

}  // namespace segadvise
