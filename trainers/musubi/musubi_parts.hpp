// The pieces of musubi-tuner's reader (musubi_reader.cpp) that name what a run trains: the model (its
// script, a TOML's network_module, --model_version, --task, the DiT file's name), the DiT's stored
// precision, the optimizer, and the keys musubi does not have (musubi_model.cpp). Facts:
// trainers/musubi/musubi.json "models", "optimizers", "argparse_keys".
#pragma once

#include <string>
#include <vector>

#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::readers::musubi_parts {

// A flag set (a key present and not "false"), and "<file>:<line>: <key>" for a message.
bool flag(const CommandLine& cl, const std::string& k);
std::string where(const std::string& path, const CommandLine& cl, const std::string& k);

// A command line's `-m musubi_tuner.X` (the package's module, as the top-level X.py shims run it) written
// as the script X.py it is, on the same line, so the command is read as that script's.
std::string with_module_scripts(const std::string& text);

// The model a run trains. A command line's script decides it (with --model_version or --task where
// the script has them); a TOML alone names it by network_module (the script it belongs to, set as
// cl.script), then the same keys; failing that, by the DiT file's name (a guess: guessed_from says
// from what). `family` null: why_not says why.
struct ModelRead {
  const Family* family = nullptr;
  std::string why_not;
  std::string guessed_from;
  std::vector<std::string> notes, warnings;
};
ModelRead model_of(const TrainerFacts& facts, CommandLine& cl, const std::string& path);

// The DiT file's stored precision where its name says fp8 (musubi.json models.fp8_checkpoints): the
// loaders that keep such a file as it is, the ones that stop on it with --fp8_scaled, the casts.
void read_checkpoint_precision(const TrainerFacts& facts, const CommandLine& cl, TrainerRead& r);

// --optimizer_type as get_optimizer reads it (musubi.json "optimizers"): segadvise's optimizer, or
// adamw with a warning; a torch.optim class torch does not have is a rejection.
std::string optimizer_of(const TrainerFacts& facts, const CommandLine& cl, TrainerRead& r);

// The TOML keys no musubi training parser defines (argparse keeps them unread): one warning.
void warn_unknown_keys(const TrainerFacts& facts, const std::map<std::string, int>& keys, const std::string& file,
                       TrainerRead& r);

// A command line's flags no musubi training parser defines: argparse stops on them ("unrecognized
// arguments"): each a refused key.
void refuse_unknown_flags(const TrainerFacts& facts, const CommandLine& cl, TrainerRead& r);

}  // namespace segadvise::readers::musubi_parts
