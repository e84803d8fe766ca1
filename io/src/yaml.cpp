#include "segadvise/io/yaml.hpp"

#include <unordered_set>
#include <vector>

#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise {

namespace {

constexpr std::size_t kMaxYamlNodes = 1000000;

struct PyYamlView {
  std::string name;  // what 'path'
  std::size_t nodes = 0;

  std::size_t keys = 0;

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    const YAML::Mark m = n.Mark();
    throw InputError(name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + what);
  }
  // the JSON loader's key limits: kMaxJsonKeys in the document, kMaxKeysPerObject in one mapping
  void count_keys(const YAML::Node& map) {
    std::size_t here = 0;
    for (const auto& kv : map) {
      if (++keys > kMaxJsonKeys) fail(kv.first, "more than " + std::to_string(kMaxJsonKeys) + " keys");
      if (++here > kMaxKeysPerObject) fail(kv.first, "more than " + std::to_string(kMaxKeysPerObject) + " keys in one mapping");
    }
  }
  bool needs_rebuild(const YAML::Node& map) const {
    std::unordered_set<std::string> seen;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) continue;
      const std::string& k = kv.first.Scalar();
      if (k == "<<" || !seen.insert(k).second) return true;
    }
    return false;
  }
  // `n` with every map resolved as PyYAML resolves it (the same node when nothing changes)
  YAML::Node resolve(const YAML::Node& n, int depth) {
    if (++nodes > kMaxYamlNodes)
      fail(n, "more than " + std::to_string(kMaxYamlNodes) + " nodes once aliases are expanded");
    if (depth > kMaxJsonDepth) fail(n, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (n.IsSequence()) {
      YAML::Node out = n;
      for (std::size_t i = 0; i < n.size(); ++i) {
        YAML::Node child = resolve(n[i], depth + 1);
        if (!child.is(n[i])) out[i] = child;
      }
      return out;
    }
    if (!n.IsMap()) return n;
    count_keys(n);
    if (!needs_rebuild(n)) {
      YAML::Node out = n;
      for (const auto& kv : n) {
        YAML::Node child = resolve(kv.second, depth + 1);
        if (!child.is(kv.second)) out[kv.first] = child;
      }
      return out;
    }
    YAML::Node out(YAML::NodeType::Map);
    auto put = [&](const YAML::Node& key, const YAML::Node& value) {
      if (key.IsScalar()) out[key.Scalar()] = value;
      else out.force_insert(key, value);
    };
    // merged maps first (a list's earlier maps win), then the explicit keys in order (the last wins)
    for (const auto& kv : n) {
      if (!kv.first.IsScalar() || kv.first.Scalar() != "<<") continue;
      std::vector<YAML::Node> maps;
      if (kv.second.IsMap()) maps.push_back(kv.second);
      else if (kv.second.IsSequence())
        for (const auto& m : kv.second) maps.push_back(m);
      for (const auto& m : maps)
        if (!m.IsMap()) fail(m, "a '<<' merge key takes a map or a list of maps");
      for (auto it = maps.rbegin(); it != maps.rend(); ++it) {
        const YAML::Node m = resolve(*it, depth + 1);
        for (const auto& mkv : m) put(mkv.first, mkv.second);
      }
    }
    for (const auto& kv : n) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "<<") continue;
      put(kv.first, resolve(kv.second, depth + 1));
    }
    return out;
  }
};

}  // namespace

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  const std::string text = read_text_file(path, what);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": not valid YAML: " + e.msg);
  }
  PyYamlView view{what + " '" + brief_text(path) + "'"};
  return view.resolve(root, 0);
}

}  // namespace segadvise
