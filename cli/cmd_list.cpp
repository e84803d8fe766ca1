// segadvise list models|gpus|precisions|optimizers
#include <iostream>

#include "commands.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"

namespace segadvise::cli {

void setup_list(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "list models, gpus, precisions or optimizers");
  auto what = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  cmd->add_option("what", *what, "models | gpus | precisions | optimizers")
      ->required()
      ->check(CLI::IsMember({"models", "gpus", "precisions", "optimizers"}));
  cmd->add_option("--format", *format, "table | json | markdown")->check(kFormat);
  cmd->callback([=, &exit_code] {
    const Catalog catalog = *what == "models"       ? Catalog::Models
                            : *what == "gpus"       ? Catalog::Gpus
                            : *what == "precisions" ? Catalog::Precisions
                                                    : Catalog::Optimizers;
    make_printer(*format, std::cout)->catalog(catalog);
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
