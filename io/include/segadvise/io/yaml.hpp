// YAML inputs (ai-toolkit jobs, accelerate configs), read under the same file and size rules as JSON.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace segadvise {

// A YAML file read as PyYAML reads it (ai-toolkit and accelerate load theirs with PyYAML): of
// duplicate keys the last wins, `<<` merge keys are followed (explicit keys override merged ones,
// earlier maps of a merge list override later ones). Nesting past kMaxJsonDepth and aliases that
// expand past kMaxYamlNodes are InputErrors naming `what`, the file and the line.
YAML::Node load_yaml_file(const std::string& path, const std::string& what);

}  // namespace segadvise
