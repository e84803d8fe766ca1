// segadvise: memory planning and checkpointing advice for fine-tuning diffusion transformers.
// Bad input is an InputError (or any other exception) caught here once: `segadvise: error: …`, exit code 2.
#include <CLI/CLI.hpp>
#include <cstring>
#include <malloc.h>
#include <iostream>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  using namespace segadvise;
  // advise allocates and frees buffers of 100 kB - 2 MB (schedule scores, optimal-plan labels, the
  // printed JSON) many times: above glibc's default 128 kB each is a fresh mmap whose pages fault
  // in again (a large share of Stable Cascade C's advise time). Keep them on the heap and keep the
  // heap's top.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  // `segadvise --model wan14b --gpu l40s` is `segadvise advise --model wan14b --gpu l40s`
  std::vector<char*> args(argv, argv + argc);
  static char advise[] = "advise";
  if (argc > 1 && argv[1][0] == '-' && std::strcmp(argv[1], "-h") != 0 && std::strcmp(argv[1], "--help") != 0 &&
      std::strcmp(argv[1], "--version") != 0)
    args.insert(args.begin() + 1, advise);

  CLI::App app{"segadvise: which gradient-checkpointing schedule fits your GPU, and what it costs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "segadvise 0.1.0");
  int exit_code = cli::kOk;
  cli::setup_advise(app, exit_code);
  cli::setup_predict(app, exit_code);
  cli::setup_list(app, exit_code);
  cli::setup_check(app, exit_code);
  cli::setup_calibrate(app, exit_code);
  cli::setup_accuracy(app, exit_code);
  cli::setup_read_log(app, exit_code);
  cli::setup_runs(app, exit_code);
  cli::setup_torch_passthrough(app, exit_code, argv[0]);
  // `segadvise frobnicate`: name the word instead of CLI11's "A subcommand is required"
  bool known = args.size() < 2 || args[1][0] == '-';
  if (!known)
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) known |= sub->check_name(args[1]);
  if (!known) {
    std::cerr << "segadvise: error: unknown command '" << args[1]
              << "' (advise, predict, check, list, calibrate, accuracy, read-log, profile, validate; --help)\n";
    return cli::kBadInput;
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : cli::kBadInput;
  } catch (const InputError& e) {
    std::cerr << "segadvise: error: " << e.what() << "\n";
    return cli::kBadInput;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "segadvise: error: " << e.what() << "\n";
    return cli::kBadInput;
  } catch (const std::out_of_range& e) {  // std::stoi on "99999999999x480", "interval99999999999"
    std::cerr << "segadvise: error: a number in the arguments is too large (" << e.what() << ")\n";
    return cli::kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "segadvise: error: " << e.what() << "\n";
    return cli::kBadInput;
  }
  // an answer that did not reach stdout (a full disk, a closed pipe) is no answer: say so, exit 2
  if (!std::cout.flush()) {
    std::cerr << "segadvise: error: cannot write to standard output\n";
    return cli::kBadInput;
  }
  return exit_code;
}
