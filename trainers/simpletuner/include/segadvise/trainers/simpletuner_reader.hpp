// Reading a SimpleTuner config.json and its data-backend file(s) the way the trainer does
// (SimpleTuner bc8e6ab, docs/sources/simpletuner.md §0, §1, §2, §4): the TrainingSetup and Schedule the run
// will use, the keys the trainer ignores or rejects, and writing the config back with only the
// checkpointing keys changed.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise {

// Parses a JSON file keeping key order. Throws InputError naming the file, and for malformed JSON
// the line and column (1-based) of the error.
nlohmann::ordered_json read_json_file(const std::string& path, const std::string& what);

// A config value read as a boolean the way the trainer's argparse accepts it: true/false, 1/0,
// yes/no (any case), an empty string as false, an integer as != 0; nothing for any other value.
std::optional<bool> config_bool(const nlohmann::ordered_json& v);

// Where the trainer finds a path written in a config (data_backend_config, lycoris_config, …), in the
// order tried (simpletuner_paths.cpp cites the trainer's lines): an absolute path as is; otherwise, for
// lycoris_config, the config's folder (also with a leading `config/` trimmed) first; then the trainer's
// working directory, the folder holding the config's `config` folder (implied_repo_root; a value under
// `config/examples/` is first tried as the packaged `simpletuner/examples/…`); then relative to `cwd`,
// then the config's folder and each of its parents (a user running from elsewhere). Returns the
// candidates, first to last.
std::vector<std::string> candidate_paths(const std::string& value, const std::string& config_path,
                                         const std::string& cwd, const std::string& key = "data_backend_config");
// The folder SimpleTuner runs from for a config at `config_path`: the parent of the nearest folder
// named `config` at most 4 levels above it (config/config.json, config/<ENV>/config.json); "" if none.
std::string implied_repo_root(const std::string& config_path);
// The first candidate that exists. With `warnings`, a path that exists nowhere (one of the author's
// machine: /workspace/…, G:/…, C:\Users\…) is then looked for by its last parts (at most 4, longest first)
// under the config's folder and the 3 above it; the file found is used and a warning says so. Otherwise
// InputError naming the key, the value and every path tried.
std::string resolve_config_path(const std::string& value, const std::string& key, const std::string& config_path,
                                const std::string& cwd, std::vector<std::string>* warnings = nullptr);

// A JSON list of objects each with an "id" or a "dataset_type" is SimpleTuner's data-backend list (the
// file a config's data_backend_config names; helpers/data_backend/factory.py:1843-1844 loads it as a list
// of backends): not a training config, since it names no model. The InputError to stop on: what the
// file is, its training backends, and the configs beside it that name it (the trainer is started with
// one of those). "" when `j` is no such list.
std::string backend_list_error(const std::string& path, const nlohmann::ordered_json& j);

// The keys of a SimpleTuner config that move a phase other than the step, with the trainer's defaults.
// Throws InputError (file, key, value) for bad values.
RunSetup read_run_setup(const nlohmann::ordered_json& raw, const std::string& origin);

// Reads the config and its data backend(s) (trainer "simpletuner": raw, indent, data_backend_path and
// backends filled). Throws InputError (file, key, value) for bad input.
TrainerRead read_simpletuner_config(const std::string& path, const TrainerReadOptions& opt);

// The indentation of a JSON text: spaces before its first indented key (4 when none is).
int json_indent(const std::string& text);

// The five checkpointing keys SimpleTuner reads.
const std::vector<std::string>& checkpointing_keys();

// `raw` with only the checkpointing keys set to `s` (SimpleTuner's spelling and order of every other
// key kept; a key already present keeps its place and its leading `--` if it had one; a key whose
// new value is the trainer's default is removed rather than added).
nlohmann::ordered_json with_schedule(const nlohmann::ordered_json& raw, const Schedule& s);
// `raw` with `knobs` set: the five checkpointing keys among them as with_schedule sets them (all five
// are expected together, as schedule_keys gives them), every other key (a phase's fix) set in the
// spelling the file has (`--key` where only that is there), else added at the end.
nlohmann::ordered_json with_keys(const nlohmann::ordered_json& raw, const nlohmann::ordered_json& knobs);

// The trainer's config keys for a schedule; null = unset (the trainer's default). For rewriting a whole
// config file, where an unset key is removed.
nlohmann::json schedule_keys(const Schedule& s);

// The same keys as printed for a user to merge into a config of this family and setup: no nulls,
// since SimpleTuner skips a JSON null when it reads a config (SimpleTuner
// helpers/configuration/cli_utils.py), so a value already in the config would stay in force. An unset
// interval is written as 1, which the trainer reads as unset (docs/sources/simpletuner.md §4), and the
// stride is left out (ignored without an interval). An interval without a stride takes stride =
// interval where the segmented path runs it (its stride defaults to the interval: the same
// segments), so the merged keys override any stride the config had. On the per-block path no stride
// means "unset" (i % S < N with S = N checkpoints every block): the stride is left out there and
// named by keys_to_remove. The setup's own keys (setup_keys) go with them, since the prediction the
// keys come with assumes them.
nlohmann::json simpletuner_keys(const Family& fam, const Schedule& s, const TrainingSetup& setup);

// The config keys the reader turns into this setup, beside the schedule: weight streaming (`ramtorch`,
// `ramtorch_transformer_percent` below 100, `musubi_blocks_to_swap`, `enable_group_offload`), EMA,
// `attention_mechanism`, regional compilation and `mixed_precision` where they differ from a config
// without them, and the base precision always (`base_model_precision`, `sdnq_use_hadamard`; none where
// the family's flavour implies it). What advise assumed from the trainer's example (Wan 14B's RamTorch
// and flash-attn-3-hub) is then part of what a user merges.
nlohmann::json setup_keys(const Family& fam, const TrainingSetup& setup);

// The keys a config must not keep for the printed keys to mean the schedule (see above): the stride
// beside an interval on a per-block path that honours it; none otherwise.
std::vector<std::string> keys_to_remove(const Family& fam, const Schedule& s, const TrainingSetup& setup);

}  // namespace segadvise
