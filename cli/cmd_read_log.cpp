// segadvise read-log FILE: what a trainer's console log already says (out-of-memory messages,
// step times, memory readouts), read by trainers/log_reader and printed through the report layer.
#include <iostream>

#include "commands.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "segadvise/trainers/log_reader.hpp"

namespace segadvise::cli {

void setup_read_log(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("read-log", "read a trainer's console log: out-of-memory messages, step times, memory");
  auto file = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  cmd->add_option("file", *file, "the log, or any pasted text")->required();
  cmd->add_option("--format", *format, "table | json | markdown")->check(kFormat);
  cmd->callback([=, &exit_code] {
    const LogReport report = read_log_file(*file);
    make_printer(*format, std::cout)->log_report(report);
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
