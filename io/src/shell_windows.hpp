// What the PowerShell and cmd readers share (shell_powershell.cpp, shell_cmd.cpp): the variables, whose
// names both read case-insensitively, the warnings, and small text helpers. Internal to the io library.
#pragma once

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "segadvise/io/error.hpp"
#include "segadvise/io/limits.hpp"
#include "segadvise/io/shell_script.hpp"
#include "segadvise/io/text.hpp"
#include "shell_text.hpp"

namespace segadvise::shell_detail {

// What PowerShell and cmd readers share: the variables (names case-insensitive in both), the warnings
struct State {
  ShellScript& out;
  std::string path;
  std::map<std::string, std::vector<std::string>> vars;  // lower-cased name -> value (an array: several)
  std::set<std::string> warned;
  void warn(int line, const std::string& what) { out.warnings.push_back(path + ":" + std::to_string(line) + ": " + what); }
  void warn_once(const std::string& key, int line, const std::string& what) {
    if (warned.insert(key).second) warn(line, what);
  }
  // the value of `name` as written (`shown`, for the warning); nullptr when never set
  const std::vector<std::string>* get(const std::string& name, const std::string& shown, int line, std::vector<std::string>& unset) {
    const auto it = vars.find(lower(name));
    if (it != vars.end()) return &it->second;
    unset.push_back(shown);
    warn_once(lower(shown), line, shown + " is not set in the script: read as empty");
    return nullptr;
  }
  void set(const std::string& name, std::vector<std::string> v, int line) {
    std::size_t total = 0;
    for (const auto& s : v) total += s.size();
    if (total > kMaxShellValueBytes)
      throw InputError(path + ":" + std::to_string(line) + ": " + name + " grows past " + std::to_string(kMaxShellValueBytes >> 20) +
                       " MiB: no launch script's variable is that long");
    vars[lower(name)] = std::move(v);
  }
};


}  // namespace segadvise::shell_detail
