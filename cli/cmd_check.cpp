#include "commands.hpp"

namespace segadvise::cli {
// Filled in by the pre-flight check work (issue [2/6]).
void setup_check(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "pre-flight check of a SimpleTuner config.json");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    exit_code = kBadInput;
    throw InputError("check: not built yet");
  });
}
}  // namespace segadvise::cli
