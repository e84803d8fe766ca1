// segadvise profile / validate: run by segadvise-torch, the only executable that links LibTorch
// (loading LibTorch costs ~0.7 s and ~160 MB, which advise/predict/check must not pay). This file
// hands the arguments over to it with exec.
#include <climits>
#include <unistd.h>

#include <string>
#include <vector>

#include "commands.hpp"

namespace segadvise::cli {

namespace {

std::string torch_executable(const char* argv0) {
  std::vector<std::string> candidates;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    candidates.push_back(dir + "/segadvise-torch");
    candidates.push_back(dir + "/profiler/segadvise-torch");
  }
  std::string a(argv0);
  if (a.find('/') != std::string::npos) candidates.push_back(a.substr(0, a.rfind('/')) + "/segadvise-torch");
  for (const auto& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  return "";
}

void add(CLI::App& app, int& exit_code, const char* argv0, const char* name, const char* help) {
  auto* cmd = app.add_subcommand(name, help);
  cmd->allow_extras();
  cmd->prefix_command();
  cmd->callback([cmd, argv0, name, &exit_code] {
    const std::string exe = torch_executable(argv0);
    if (exe.empty())
      throw InputError(std::string(name) +
                       ": segadvise-torch (the LibTorch profiler) is not built here; configure with "
                       "-DSEGADVISE_WITH_TORCH=ON and libtorch-dev installed");
    std::vector<std::string> args = {exe, name};
    for (const auto& r : cmd->remaining()) args.push_back(r);
    std::vector<char*> cargs;
    for (auto& s : args) cargs.push_back(s.data());
    cargs.push_back(nullptr);
    ::execv(exe.c_str(), cargs.data());
    throw InputError(std::string(name) + ": cannot run " + exe);
    exit_code = kBadInput;
  });
}

}  // namespace

void setup_torch_passthrough(CLI::App& app, int& exit_code, const char* argv0) {
  add(app, exit_code, argv0, "profile", "measure block costs on this machine's device with LibTorch (segadvise-torch)");
  add(app, exit_code, argv0, "validate", "run real training steps of a schedule and compare with the prediction (segadvise-torch)");
}

}  // namespace segadvise::cli
