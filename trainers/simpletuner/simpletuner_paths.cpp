// Where SimpleTuner finds a path written in its config (data_backend_config, lycoris_config, a
// DeepSpeed or accelerate file), and the file beside the config when the path is the author's.
// SimpleTuner bc8e6ab: the config is found at config/config.json (or config/<ENV>/…) relative to the
// working directory (helpers/configuration/json_file.py:62-103, toml_file.py:24-30, loader.py:36-52),
// which train.sh makes the repository root (simpletuner/train.sh:3-7); factory.py:1839-1843 opens
// data_backend_config as given, so relative to that root; lycoris_config goes through
// resolve_config_path (cmd_args.py:1123-1130 -> simpletuner_sdk/server/utils/paths.py:141-240: the
// config dir, the value with a leading `config/` trimmed, then the working directory).
#include "segadvise/trainers/simpletuner_reader.hpp"

#include <algorithm>
#include <filesystem>

#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise {

namespace fs = std::filesystem;

namespace {

bool file_exists(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// at most this many folders above a config are searched (ENV may nest: config/<env>/config.json)
constexpr int kMaxLevelsUp = 4;
// and at most this many trailing parts of an author's path are matched (dir/sub/x.json …)
constexpr std::size_t kMaxTailParts = 4;

fs::path config_dir(const std::string& config_path) {
  std::error_code ec;
  return fs::absolute(fs::path(config_path), ec).parent_path().lexically_normal();
}

// `value` with a leading `config/`, `configs/` or the config folder's own name trimmed
// (paths.py:187-203); "" when it has none
std::string trimmed(const std::string& value, const fs::path& dir) {
  const fs::path v(value);
  if (v.begin() == v.end() || std::next(v.begin()) == v.end()) return "";
  std::string first = lower(v.begin()->string());
  std::string base = lower(dir.filename().string());
  const bool match = first == "config" || first == "configs" || first == base ||
                     (base.size() > 1 && base.back() == 's' && first == base.substr(0, base.size() - 1));
  if (!match) return "";
  fs::path rest;
  for (auto it = std::next(v.begin()); it != v.end(); ++it) rest /= *it;
  return rest.string();
}

// the parts of a path written on any machine: split on `/` and `\`, without a drive (`G:`) and `.`
std::vector<std::string> path_parts(const std::string& value) {
  std::vector<std::string> parts;
  std::string cur;
  for (const char c : value + "/") {
    if (c != '/' && c != '\\') {
      cur += c;
      continue;
    }
    const bool drive = parts.empty() && cur.size() == 2 && cur[1] == ':';
    if (!cur.empty() && cur != "." && !drive) parts.push_back(cur);
    cur.clear();
  }
  return parts;
}

}  // namespace

std::string implied_repo_root(const std::string& config_path) {
  fs::path dir = config_dir(config_path);
  for (int up = 0; up < kMaxLevelsUp && !dir.empty(); ++up) {
    if (dir.filename() == "config") return dir.parent_path().string();
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  return "";
}

std::vector<std::string> candidate_paths(const std::string& value, const std::string& config_path,
                                         const std::string& cwd, const std::string& key) {
  std::vector<std::string> out;
  auto add = [&out](const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  const fs::path v(value);
  if (v.is_absolute()) {
    add(v);
    return out;
  }
  // a value under config/examples/ names the packaged simpletuner/examples/ file (json_file.py:143-158)
  std::vector<fs::path> rels;
  const std::string prefix = "config/examples/";
  if (value.rfind(prefix, 0) == 0) rels.push_back(fs::path("simpletuner/examples") / value.substr(prefix.size()));
  rels.push_back(v);
  const fs::path dir = config_dir(config_path);
  const std::string cut = trimmed(value, dir);
  auto in_config_dir = [&] {
    add(dir / v);
    if (!cut.empty()) add(dir / cut);
  };
  // the trainer's working directory: the folder holding the config's `config` folder
  const std::string root = implied_repo_root(config_path);
  if (key == "lycoris_config") in_config_dir();  // resolve_config_path: the config dir first (paths.py:180-203)
  if (!root.empty())
    for (const auto& r : rels) add(fs::path(root) / r);
  // the user's working directory, then beside the config and in the folders above it
  const fs::path base = cwd.empty() ? fs::current_path() : fs::path(cwd);
  for (const auto& r : rels) add(base / r);
  fs::path up = dir;
  for (bool first = true; !up.empty(); first = false) {
    for (const auto& r : rels) add(up / r);
    if (first && !cut.empty()) add(up / cut);
    if (up == up.root_path() || up.parent_path() == up) break;
    up = up.parent_path();
  }
  return out;
}

namespace {

// The file an author's path names, looked for where the config's own folders put it: its last parts
// (longest first) under the config's folder, the implied repository root and the folders above the
// config. `tried` gets every path looked at.
std::string beside_the_config(const std::string& value, const std::string& config_path, std::vector<std::string>& tried) {
  const std::vector<std::string> parts = path_parts(value);
  if (parts.empty()) return "";
  std::vector<fs::path> bases;
  fs::path dir = config_dir(config_path);
  for (int up = 0; up < kMaxLevelsUp && !dir.empty(); ++up) {
    bases.push_back(dir);
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  const std::size_t most = std::min(kMaxTailParts, parts.size());
  for (std::size_t n = most; n >= 1; --n) {
    fs::path tail;
    for (std::size_t i = parts.size() - n; i < parts.size(); ++i) tail /= parts[i];
    for (const fs::path& b : bases) {
      const std::string c = (b / tail).lexically_normal().string();
      if (std::find(tried.begin(), tried.end(), c) != tried.end()) continue;
      tried.push_back(c);
      if (file_exists(c)) return c;
    }
  }
  return "";
}

}  // namespace

std::string resolve_config_path(const std::string& value, const std::string& key, const std::string& config_path,
                                const std::string& cwd, std::vector<std::string>* warnings) {
  std::vector<std::string> cands = candidate_paths(value, config_path, cwd, key);
  for (const auto& c : cands)
    if (file_exists(c)) return c;
  // a path of the author's machine (/workspace/…, G:/…, C:\Users\…) or a layout this machine lacks:
  // the file it names where the config's folders put it, said in a warning
  if (warnings) {
    const std::string found = beside_the_config(value, config_path, cands);
    if (!found.empty()) {
      const std::string root = implied_repo_root(config_path);
      warnings->push_back(config_path + ": " + key + " '" + brief_text(value) + "' does not exist here (a path on the author's machine, or a layout this checkout lacks" +
                          (root.empty() ? "" : "; the trainer, run from " + root + ", would not find it") +
                          "): using " + found + ", the file of that name in the config's folders");
      return found;
    }
  }
  std::string tried;
  for (const auto& c : cands) tried += "\n  " + c;
  // a relative path inside the trainer's own repository (the folder above the config that holds
  // simpletuner/examples; config/examples/ is that folder under its other name): the repository does not
  // ship the file the example names, which no path of this machine mends
  std::string why;
  std::error_code ec;
  if (!fs::path(value).is_absolute())
    for (fs::path dir = config_dir(config_path); !dir.empty(); dir = dir.parent_path()) {
      if (fs::is_directory(dir / "simpletuner" / "examples", ec)) {
        why = ": the trainer's repository (" + dir.lexically_normal().string() + ") does not ship it" +
              (value.rfind("config/examples/", 0) == 0 ? " (config/examples/ is its simpletuner/examples/)" : "") +
              "; pass --data-backend FILE with your own";
        break;
      }
      if (dir == dir.root_path() || dir.parent_path() == dir) break;
    }
  if (key != "data_backend_config" && !why.empty()) why = ": the trainer's repository does not ship it";
  throw InputError(config_path + ": " + key + " '" + brief_text(value) + "' not found" + why + "; tried:" + tried);
}

}  // namespace segadvise
