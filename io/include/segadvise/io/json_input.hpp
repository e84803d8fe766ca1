// Reading JSON input: one file loader and one typed, checked field reader for every loader
// (families, GPUs, coefficients, profiles, plans, measured runs, trainer configs and backends).
// Every failure is an InputError naming the file, the field and (a short prefix of) the value.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/io/error.hpp"
#include "segadvise/io/limits.hpp"

namespace segadvise {

// The bytes of `path`: only a regular file (not a directory, FIFO or device), at most
// kMaxInputFileBytes. `what` names the input in messages ("--profile", "config").
std::string read_input_file(const std::string& path, const std::string& what);

// The text of a YAML, TOML or command-line file: read_input_file's rules, then no NUL byte and
// well-formed UTF-8. Every message names `what`, the file and the line.
std::string read_text_input(const std::string& path, const std::string& what);

// A JSON document from a file or from text. Before nlohmann parses it, one scan checks nesting
// (kMaxJsonDepth), key counts (kMaxJsonKeys, kMaxKeysPerObject) and numbers past double's range;
// every parse error names `origin`, the line and the column.
nlohmann::json load_json_file(const std::string& path, const std::string& what);
nlohmann::ordered_json load_ordered_json_file(const std::string& path, const std::string& what);
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);
nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& origin);

// `s` cut to kMaxEchoChars (on a UTF-8 boundary) followed by "…".
std::string brief_text(const std::string& s);
// InputError "<where>: invalid UTF-8 at byte N" unless `text` is well-formed UTF-8 (text read from
// files that is later echoed into JSON, which requires it)
void require_utf8(const std::string& text, const std::string& where);

// A value for a message: dumped at most 4 levels deep and cut to kMaxEchoChars.
template <class J>
std::string brief(const J& v);

// Integers and numbers from text (digit strings in configs, flag values). `where` names the input
// ("config.json: train_batch_size"). Overflow, NaN, infinities and values outside [lo, hi] throw.
long long parse_integer_text(const std::string& text, const std::string& where, long long lo, long long hi);
double parse_number_text(const std::string& text, const std::string& where, double lo, double hi);

enum class NumericText { Reject, Accept };  // whether "16" is read as 16

// A JSON value as an integer in [lo, hi]: JSON integers, floats with an integral value and (with
// NumericText::Accept) digit strings. Never wraps: 2^32+1 is out of range, not 1.
template <class J>
long long checked_integer(const J& v, const std::string& where, long long lo, long long hi,
                          NumericText text = NumericText::Reject);
// A JSON value as a finite number in [lo, hi] (numeric strings too with NumericText::Accept).
template <class J>
double checked_number(const J& v, const std::string& where, double lo, double hi,
                      NumericText text = NumericText::Reject);

[[noreturn]] void throw_range(const std::string& where, const std::string& value, double lo, double hi,
                              bool integer);

// Field reader over one JSON object: `origin` is the file, `path` the prefix of field names
// ("block_lists[2]."). Messages read "<origin>: field '<path><field>' ...".
template <class J>
struct BasicFieldReader {
  const J& j;
  std::string origin, path;

  std::string where(const std::string& field) const { return origin + ": field '" + path + field + "'"; }
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(where(field) + " " + what);
  }
  const J* get(const std::string& field, bool required) const {
    if (!j.is_object()) throw InputError(origin + ": '" + (path.empty() ? "<top>" : path) + "' must be an object");
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) {
      if (required) fail(field, "is missing");
      return nullptr;
    }
    return &*it;
  }
  std::string str(const std::string& field, const std::string& def = "", bool required = false) const {
    const J* v = get(field, required);
    if (!v) return def;
    if (!v->is_string()) fail(field, "must be a string, got " + brief(*v));
    return v->template get<std::string>();
  }
  double num(const std::string& field, double def = 0, bool required = false,
             double lo = -std::numeric_limits<double>::max(), double hi = std::numeric_limits<double>::max()) const {
    const J* v = get(field, required);
    return v ? checked_number(*v, where(field), lo, hi) : def;
  }
  int integer(const std::string& field, int def = 0, bool required = false,
              long long lo = std::numeric_limits<int>::min(), long long hi = std::numeric_limits<int>::max()) const {
    const J* v = get(field, required);
    return v ? static_cast<int>(checked_integer(*v, where(field), lo, hi)) : def;
  }
  bool boolean(const std::string& field, bool def = false) const {
    const J* v = get(field, false);
    if (!v) return def;
    if (!v->is_boolean()) fail(field, "must be true or false, got " + brief(*v));
    return v->template get<bool>();
  }
  std::vector<std::string> strings(const std::string& field) const {
    const J* v = get(field, false);
    std::vector<std::string> out;
    if (!v) return out;
    if (v->is_string()) return {v->template get<std::string>()};
    if (!v->is_array()) fail(field, "must be a list of strings, got " + brief(*v));
    for (const auto& e : *v) {
      if (!e.is_string()) fail(field, "must be a list of strings, got " + brief(e));
      out.push_back(e.template get<std::string>());
    }
    return out;
  }
  BasicFieldReader sub(const std::string& field, bool required) const {
    const J* v = get(field, required);
    static const J empty = J::object();
    if (v && !v->is_object()) fail(field, "must be an object, got " + brief(*v));
    return BasicFieldReader{v ? *v : empty, origin, path + field + "."};
  }
  void one_of(const std::string& field, const std::string& value, const std::vector<std::string>& allowed) const {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(field, "is '" + brief_text(value) + "'; expected one of " + list);
  }
};
using FieldReader = BasicFieldReader<nlohmann::json>;

// ---- template definitions ----

namespace detail {
template <class J>
void brief_into(const J& v, std::string& out, int depth) {
  if (out.size() > kMaxEchoChars) return;
  if (v.is_string()) {
    const auto& s = v.template get_ref<const std::string&>();
    out += J(s.substr(0, kMaxEchoChars + 1)).dump(-1, ' ', false, J::error_handler_t::replace);
    return;
  }
  if (!v.is_structured()) {
    out += v.dump();
    return;
  }
  const bool obj = v.is_object();
  if (depth >= 4) {
    out += obj ? "{…}" : "[…]";
    return;
  }
  out += obj ? '{' : '[';
  bool first = true;
  for (auto it = v.begin(); it != v.end() && out.size() <= kMaxEchoChars; ++it) {
    if (!first) out += ", ";
    first = false;
    if (obj) out += J(it.key().substr(0, kMaxEchoChars + 1)).dump(-1, ' ', false, J::error_handler_t::replace) + ": ";
    brief_into(*it, out, depth + 1);
  }
  out += obj ? '}' : ']';
}
}  // namespace detail

template <class J>
std::string brief(const J& v) {
  std::string out;
  detail::brief_into(v, out, 0);
  return brief_text(out);
}

template <class J>
long long checked_integer(const J& v, const std::string& where, long long lo, long long hi, NumericText text) {
  if (v.is_number_unsigned()) {
    const auto u = v.template get<unsigned long long>();
    if (u > static_cast<unsigned long long>(std::numeric_limits<long long>::max()) || static_cast<long long>(u) > hi ||
        static_cast<long long>(u) < lo)
      throw_range(where, v.dump(), static_cast<double>(lo), static_cast<double>(hi), true);
    return static_cast<long long>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.template get<long long>();
    if (i < lo || i > hi) throw_range(where, v.dump(), static_cast<double>(lo), static_cast<double>(hi), true);
    return i;
  }
  if (v.is_number_float()) {
    const double d = v.template get<double>();
    // compare as doubles before any cast: a cast of a value past long long is undefined
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)))
      throw_range(where, v.dump(), static_cast<double>(lo), static_cast<double>(hi), true);
    if (std::floor(d) != d) throw InputError(where + ": expected an integer, got " + brief(v));
    return static_cast<long long>(d);
  }
  if (v.is_string() && text == NumericText::Accept)
    return parse_integer_text(v.template get<std::string>(), where, lo, hi);
  throw InputError(where + ": expected an integer, got " + std::string(v.type_name()) + " " + brief(v));
}

template <class J>
double checked_number(const J& v, const std::string& where, double lo, double hi, NumericText text) {
  if (v.is_number()) {
    const double d = v.template get<double>();
    if (!(d >= lo && d <= hi)) throw_range(where, v.dump(), lo, hi, false);
    return d;
  }
  if (v.is_string() && text == NumericText::Accept) return parse_number_text(v.template get<std::string>(), where, lo, hi);
  throw InputError(where + ": expected a number, got " + std::string(v.type_name()) + " " + brief(v));
}

}  // namespace segadvise
