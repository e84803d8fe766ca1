// The scanning pieces the log reader's files share (log_reader.cpp: messages, bars, tables; log_memory.cpp:
// the other memory readouts). Hand-written, each call bounded by the text it is given.
#pragma once

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace segadvise::log_text {

// Device indices read from a log are converted to integers only inside this bound
constexpr double kMaxGpuIndex = 1 << 20;
inline bool in_range(double v, double max) { return v >= 0 && v <= max; }
inline int small_index(const char* s) {
  const long v = std::strtol(s, nullptr, 10);
  return v >= 0 && v <= static_cast<long>(kMaxGpuIndex) ? static_cast<int>(v) : 0;
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

inline bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }
inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A decimal number at s[i] ("23.65", "1e-4" not taken): its value and the end.
inline bool number_at(std::string_view s, std::size_t i, double& value, std::size_t& end) {
  std::size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  if (j == i) return false;
  if (j < s.size() && s[j] == '.' && j + 1 < s.size() && is_digit(s[j + 1])) {
    ++j;
    while (j < s.size() && is_digit(s[j])) ++j;
  }
  value = std::strtod(std::string(s.substr(i, j - i)).c_str(), nullptr);
  end = j;
  return true;
}

// A unit at s[i] (lower case): its factor and length; 0 when none.
inline double unit_at(std::string_view s, std::size_t i, std::size_t& len) {
  struct Unit {
    std::string_view name;
    double factor;
  };
  static const Unit units[] = {{"tib", 1099511627776.0}, {"gib", 1073741824.0}, {"mib", 1048576.0}, {"kib", 1024.0},
                               {"bytes", 1.0},          {"tb", 1e12},          {"gb", 1e9},         {"mb", 1e6},
                               {"kb", 1e3}};
  for (const Unit& u : units)
    if (starts_with(s.substr(i), u.name)) {
      len = u.name.size();
      return u.factor;
    }
  len = 0;
  return 0;
}

// A size in bytes, or none past 2^60 (an exabyte is no GPU's memory; llround of a value past
// long long's range is undefined).
inline std::optional<long long> to_bytes(double value, double factor) {
  const double b = value * factor;
  if (!std::isfinite(b) || b < 0 || b > 1152921504606846976.0) return std::nullopt;
  return std::llround(b);
}

inline std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == ':')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == ':')) --b;
  return std::string(s.substr(a, b - a));
}

// The comma-separated fields of a line, lower case, spaces around each removed
inline std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') {
      std::string f = lower(s.substr(start, i - start));
      std::size_t a = f.find_first_not_of(' '), b = f.find_last_not_of(' ');
      out.push_back(a == std::string::npos ? "" : f.substr(a, b - a + 1));
      start = i + 1;
    }
  return out;
}

}  // namespace segadvise::log_text
