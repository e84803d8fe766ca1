// segadvise list models|gpus|precisions|optimizers
#include <iostream>

#include "commands.hpp"
#include "output.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise::cli {

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

void setup_list(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "list models, gpus, precisions or optimizers");
  auto what = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  cmd->add_option("what", *what, "models | gpus | precisions | optimizers")->required();
  cmd->add_option("--format", *format, "table | json | markdown");
  cmd->callback([=, &exit_code] {
    check_format(*format);
    const bool md = *format == "markdown", json = *format == "json";
    nlohmann::json j = nlohmann::json::array();
    if (*what == "models") {
      Table t({"id", "model", "trainer family:flavours", "aliases", "interval", "conf."});
      for (const auto& f : builtin_families()) {
        std::string fl = f.trainer_family + (f.flavours.empty() ? "" : ":" + join(f.flavours, "|"));
        t.add({f.id, f.name, fl, join(f.aliases), to_string(f.checkpointing.interval), f.confidence});
        j.push_back({{"id", f.id}, {"name", f.name}, {"trainer_family", f.trainer_family}, {"flavours", f.flavours},
                     {"aliases", f.aliases}, {"interval", to_string(f.checkpointing.interval)}, {"confidence", f.confidence}});
      }
      if (!json) t.print(std::cout, md);
    } else if (*what == "gpus") {
      Table t({"id", "name", "memory", "bf16 TFLOP/s", "memory GB/s", "PCIe GB/s"});
      for (const auto& g : builtin_gpus()) {
        t.add({g.id, g.name, gib_str(g.total_bytes), std::to_string(static_cast<int>(g.bf16_flops_per_s / 1e12)),
               std::to_string(static_cast<int>(g.mem_bytes_per_s / 1e9)),
               std::to_string(static_cast<int>(g.pcie_bytes_per_s / 1e9))});
        j.push_back({{"id", g.id}, {"name", g.name}, {"total_gib", g.total_bytes / kGiB},
                     {"bf16_tflops", g.bf16_flops_per_s / 1e12}, {"mem_gbps", g.mem_bytes_per_s / 1e9},
                     {"pcie_gbps", g.pcie_bytes_per_s / 1e9}});
      }
      if (!json) t.print(std::cout, md);
    } else if (*what == "precisions") {
      for (const auto& p : precision_names()) {
        const PrecisionInfo i = precision_info(p);
        j.push_back({{"name", p}, {"bytes_per_param", i.bytes_per_param}, {"backend", i.backend}});
        if (!json) std::cout << p << "  (" << i.bytes_per_param << " B/param, " << i.backend << ")\n";
      }
    } else if (*what == "optimizers") {
      for (const auto& o : optimizer_names()) {
        const OptimizerInfo i = optimizer_info(o);
        j.push_back({{"name", o}, {"state_bytes_per_param", i.state_bytes_per_param}});
        if (!json) std::cout << o << "  (" << i.state_bytes_per_param << " B state/param)\n";
      }
    } else {
      throw InputError("list: '" + *what + "' is not one of models, gpus, precisions, optimizers");
    }
    if (json) std::cout << j.dump(2) << "\n";
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
