// OneTrainer's migration chain (onetrainer_migrate.cpp), used by its config reader.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "segadvise/trainers/facts.hpp"

namespace segadvise::readers {

struct OneTrainerMigration {
  nlohmann::ordered_json data;     // the dict the fields receive (the file as written when a migration fails)
  std::vector<std::string> notes;  // what the migrations changed that segadvise reads
  std::string failure;             // the migration that raises on this file, and why ("" when none)
};

// A built-in preset: OneTrainer loads it without migration (TopBarController.py load_config_from_file,
// scripts/train.py --preset-path): a file name starting with '#', not "#.json".
bool onetrainer_built_in_preset(const std::string& path);

// The migrations from `version` (0 when __version is absent) to the current one, on the file's raw dict,
// as BaseConfig.from_dict runs them (BaseConfig.py:66-74).
OneTrainerMigration migrate_onetrainer(const nlohmann::ordered_json& raw, int version, const TrainerFacts& facts);

}  // namespace segadvise::readers
