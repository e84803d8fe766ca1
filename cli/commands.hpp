// One file per subcommand; each registers itself on the app and sets the exit code it ends with.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>

#include "common.hpp"

namespace segadvise::cli {

void setup_advise(CLI::App& app, int& exit_code);
void setup_predict(CLI::App& app, int& exit_code);
void setup_list(CLI::App& app, int& exit_code);
void setup_check(CLI::App& app, int& exit_code);
void setup_calibrate(CLI::App& app, int& exit_code);
void setup_accuracy(CLI::App& app, int& exit_code);
void setup_read_log(CLI::App& app, int& exit_code);
void setup_runs(CLI::App& app, int& exit_code);
void setup_torch_passthrough(CLI::App& app, int& exit_code, const char* argv0);

}  // namespace segadvise::cli
