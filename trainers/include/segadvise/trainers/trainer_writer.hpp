// Round trip: the user's own trainer config written back with only the memory knobs changed
// (`segadvise check FILE --advise --emit SAME_TRAINER --output NEW`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise {

struct Rewritten {
  std::string text;
  std::vector<std::string> notes;  // what could not be kept (comments), keys added or removed
};

// Each trainer's rewriter is its component's Trainer::rewrite (trainer.hpp), with `knobs` as its
// emitter names them: musubi flags (gradient_checkpointing, blocks_to_swap, …), ai-toolkit "model.x" /
// "train.x", OneTrainer "<part>.x" and top-level keys, diffusers flags. A false boolean flag is removed
// from a command line; so is every key of r.refused_keys `knobs` does not set, and r.fixed_keys are set
// to the values they were predicted with.

// The keys among `knobs` a rewrite of `r` cannot switch off: store_true flags its --config_file sets
// that the plan turns off (a command-line flag cannot unset them; musubi). A plan needing one does not
// run as planned from the written file.
std::vector<std::string> keys_kept_on(const TrainerRead& r, const nlohmann::ordered_json& knobs);

// Command-line and TOML text edits, kept apart for tests. An absent flag goes right after the training
// script `script` (its file name; "": the first *.py), so not into a caching command before it.
std::string set_command_line_flag(const std::string& text, const std::string& key, const nlohmann::ordered_json& value,
                                  const std::string& script = "");
std::string set_toml_key(const std::string& text, const std::string& key, const nlohmann::ordered_json& value);
// `key`'s value in a JSON config where every dot nests (optimizer_defaults.ADAMW.fused_back_pass)
void set_dotted_key(nlohmann::ordered_json& j, const std::string& key, const nlohmann::ordered_json& value);

}  // namespace segadvise
