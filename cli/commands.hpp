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
void setup_torch_passthrough(CLI::App& app, int& exit_code, const char* argv0);

// advise over a built context (shared by `advise` and `check --advise`); prints in f.format.
// `emit` names a trainer whose config lines are printed for the recommendation ("" for none).
// `plot_file` / `plan_file`: the optimal plans' Pareto front as SVG, the optimal plan as JSON ("" for none).
int run_advise(Context& ctx, const SetupFlags& f, std::ostream& out, bool show_all, const std::string& emit,
               const std::string& plot_file = "", const std::string& plan_file = "", bool with_front = false);

}  // namespace segadvise::cli
