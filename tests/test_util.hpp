// Helpers shared by the doctest suites.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise::test {

// The message of the InputError `f` throws, "" when it throws none.
template <class F>
std::string input_error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Whether any of `v` (warnings, notes, rejections) contains `part`.
inline bool any_has(const std::vector<std::string>& v, const std::string& part) {
  for (const auto& s : v)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

// The whole text of the file at `path` ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The TOML samples of musubi-tuner's docs/dataset_config.md (each ```toml block), written as
// sample0.toml, sample1.toml, … under `dir` (created); their paths in the document's order.
inline std::vector<std::string> musubi_doc_samples(const std::string& doc_path, const std::filesystem::path& dir) {
  const std::string doc = slurp(doc_path);
  const std::regex block("```toml\n([^`]*)```");
  std::filesystem::create_directories(dir);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), block); it != std::sregex_iterator(); ++it) {
    const std::string f = (dir / ("sample" + std::to_string(out.size()) + ".toml")).string();
    std::ofstream(f) << (*it)[1].str();
    out.push_back(f);
  }
  return out;
}

}  // namespace segadvise::test
