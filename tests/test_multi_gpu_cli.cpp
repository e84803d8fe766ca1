// The multi-GPU keys of a SimpleTuner config, an accelerate YAML, the flags, and the emitted configs.
// Fixtures: tests/fixtures/check/multi-gpu-*.json, accelerate-deepspeed.yaml.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"
#include "segadvise/report/multi_gpu_output.hpp"
#include "test_util.hpp"

using namespace segadvise;
using namespace segadvise::cli;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/check/";

TrainerRead read(const std::string& name, const std::string& accelerate = "") {
  TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  o.accelerate_config = accelerate;
  return read_simpletuner_config(kDir + name, o);
}

bool has(const std::vector<std::string>& v, const std::string& part) {
  for (const auto& s : v)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a config without multi-GPU keys stays one GPU") {
  const TrainerRead r = read("flux-480-square.json");
  CHECK_FALSE(r.setup.multi_gpu.active());
  CHECK(r.setup.multi_gpu.world() == 1);
}

TEST_CASE("FSDP2 keys: processes, GA, activation checkpointing replaces the schedule, limit_all_gathers ignored") {
  const TrainerRead r = read("multi-gpu-fsdp2.json");
  const MultiGpuSetup& m = r.setup.multi_gpu;
  CHECK(m.world() == 4);
  CHECK(m.strategy == Strategy::fsdp2);
  CHECK(m.grad_accumulation == 2);
  CHECK(m.fsdp_activation_checkpointing);
  CHECK(r.schedule.name() == "layer");  // interval 2 no longer applies: every wrapped block
  CHECK(has(r.warnings, "fsdp_limit_all_gathers has no effect under FSDP2"));
  CHECK(has(r.warnings, "gradient_checkpointing=False"));
  CHECK(r.rejections.empty());
}

TEST_CASE("multi-GPU booleans are read as every other key of the config: \"True\", \"yes\", 1") {
  const TrainerRead r = read("multi-gpu-fsdp2-strings.json");  // fsdp_enable "True", activation ckpt "yes"
  CHECK(r.setup.multi_gpu.strategy == Strategy::fsdp2);
  CHECK(r.setup.multi_gpu.fsdp_activation_checkpointing);
  CHECK(config_bool(nlohmann::ordered_json(1)) == std::optional<bool>(true));
  CHECK(config_bool(nlohmann::ordered_json("No")) == std::optional<bool>(false));
  CHECK(!config_bool(nlohmann::ordered_json("maybe")).has_value());
}

TEST_CASE("deepspeed_config inline as JSON text: ZeRO stage, offload and its GA override") {
  const TrainerRead r = read("multi-gpu-zero2.json");
  const MultiGpuSetup& m = r.setup.multi_gpu;
  CHECK(m.strategy == Strategy::zero2);
  CHECK(m.offload_optimizer);
  CHECK(m.grad_accumulation == 3);
  CHECK(m.world() == 8);
}

TEST_CASE("FSDP with DeepSpeed and FSDP v1 with context parallel are rejected") {
  const TrainerRead r = read("multi-gpu-conflict.json");
  CHECK(has(r.rejections, "FSDP together with a DeepSpeed config"));
  CHECK(has(r.rejections, "FSDP v1 with context_parallel_size > 1"));
}

TEST_CASE("context parallel without a process count takes the smallest world it divides, said in a note") {
  const TrainerRead r = read("multi-gpu-cp.json");
  CHECK(r.setup.multi_gpu.context_parallel == 2);
  CHECK(r.setup.multi_gpu.cp_comm == CpComm::alltoall);
  CHECK(r.setup.multi_gpu.world() == 2);
  CHECK(r.setup.multi_gpu.strategy == Strategy::ddp);
  CHECK(has(r.setup.notes, "world size 2 taken from context_parallel_size 2"));
}

TEST_CASE("an accelerate YAML: num_processes counts every machine, DeepSpeed stage and offload") {
  std::vector<std::string> warnings;
  const MultiGpuSetup m = read_accelerate_yaml(kDir + "accelerate-deepspeed.yaml", MultiGpuSetup{}, warnings);
  CHECK(m.nodes == 2);
  CHECK(m.gpus_per_node == 8);  // 16 processes over 2 machines
  CHECK(m.strategy == Strategy::zero3);
  CHECK(m.offload_optimizer);
  CHECK(m.offload_param);
  // through check: the YAML replaces the config's num_processes
  const TrainerRead r = read("multi-gpu-cp.json", kDir + "accelerate-deepspeed.yaml");
  CHECK(r.setup.multi_gpu.world() == 16);
}

TEST_CASE("flags: --gpus without --strategy is DDP; offload flags need their engine") {
  SetupFlags f;
  f.gpus = 4;
  CHECK(apply_multi_gpu_flags(MultiGpuSetup{}, f).strategy == Strategy::ddp);
  f.fsdp_cpu_offload = true;
  CHECK(test::input_error_of([&] { apply_multi_gpu_flags(MultiGpuSetup{}, f); }) ==
        "--fsdp-cpu-offload needs --strategy fsdp2 (got ddp)");
  f.fsdp_cpu_offload = false;
  f.strategy = "zero3";
  f.offload_param = true;
  const MultiGpuSetup z = apply_multi_gpu_flags(MultiGpuSetup{}, f);
  CHECK(z.strategy == Strategy::zero3);
  CHECK(z.offload_param);
}

TEST_CASE("the emitted configs: SimpleTuner keys, accelerate YAML and DeepSpeed JSON") {
  MultiGpuSetup m;
  m.gpus_per_node = 8;
  m.nodes = 2;
  m.strategy = Strategy::zero2;
  m.offload_optimizer = true;
  TrainingSetup s;
  s.batch = 4;
  const auto keys = multi_gpu_simpletuner_keys(m, s);
  CHECK(keys["num_processes"] == 8);
  CHECK(keys["deepspeed_config"]["zero_optimization"]["stage"] == 2);
  CHECK(keys["deepspeed_config"]["zero_optimization"]["offload_optimizer"]["device"] == "cpu");
  CHECK(keys["deepspeed_config"]["train_micro_batch_size_per_gpu"] == 4);
  const std::string yaml = accelerate_yaml(m, "bf16");
  CHECK(yaml.find("num_processes: 16") != std::string::npos);  // 8 per node x 2 nodes
  CHECK(yaml.find("num_machines: 2") != std::string::npos);
  m.strategy = Strategy::fsdp2;
  m.offload_optimizer = false;
  CHECK(deepspeed_config(m, 1).is_null());
  CHECK(multi_gpu_simpletuner_keys(m, s)["fsdp_version"] == 2);
}
