// Multi-GPU advice output and config emitters (multi_gpu_output.hpp).
#include "segadvise/report/multi_gpu_output.hpp"

#include <cstdio>
#include <sstream>

#include "segadvise/report/output.hpp"
#include "segadvise/report/text_format.hpp"
#include "segadvise/planner/distributed_advice.hpp"

namespace segadvise::cli {

nlohmann::ordered_json deepspeed_config(const MultiGpuSetup& m, int batch) {
  const int stage = m.strategy == Strategy::fsdp2 ? 0 : zero_stage(m.strategy);
  if (stage == 0) return nullptr;
  nlohmann::ordered_json z = {{"stage", stage}, {"overlap_comm", true}, {"contiguous_gradients", true},
                              {"reduce_bucket_size", "auto"}};
  if (m.offload_optimizer) z["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (stage == 3) {
    z["stage3_prefetch_bucket_size"] = "auto";
    z["stage3_param_persistence_threshold"] = "auto";
    if (m.offload_param) z["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  return {{"zero_optimization", z},
          {"bf16", {{"enabled", true}}},
          {"train_micro_batch_size_per_gpu", batch},
          {"gradient_accumulation_steps", m.grad_accumulation}};
}

nlohmann::ordered_json multi_gpu_simpletuner_keys(const MultiGpuSetup& m, const TrainingSetup& s) {
  nlohmann::ordered_json j;
  j["num_processes"] = m.gpus_per_node;
  j["num_machines"] = m.nodes;
  j["train_batch_size"] = s.batch;
  j["gradient_accumulation_steps"] = m.grad_accumulation;
  if (m.strategy == Strategy::fsdp2) {
    j["fsdp_enable"] = true;
    j["fsdp_version"] = 2;
    j["fsdp_reshard_after_forward"] = m.reshard_after_forward;
    j["fsdp_cpu_offload"] = m.fsdp_cpu_offload;
  }
  if (zero_stage(m.strategy) > 0 && m.strategy != Strategy::fsdp2) j["deepspeed_config"] = deepspeed_config(m, s.batch);
  if (m.context_parallel > 1) {
    j["context_parallel_size"] = m.context_parallel;
    j["context_parallel_comm_strategy"] = to_string(m.cp_comm);
  }
  return j;
}

std::string accelerate_yaml(const MultiGpuSetup& m, const std::string& mixed_precision) {
  std::ostringstream y;
  y << "compute_environment: LOCAL_MACHINE\n"
    << "distributed_type: " << (m.world() > 1 ? "MULTI_GPU" : "NO") << "  # FSDP/DeepSpeed: the trainer builds the plugin from its own keys\n"
    << "mixed_precision: " << mixed_precision << "\n"
    << "num_machines: " << m.nodes << "\n"
    << "num_processes: " << m.world() << "  # every machine's processes\n"
    << "machine_rank: 0\n"
    << "main_process_ip: 127.0.0.1\n"
    << "main_process_port: 29500\n"
    << "same_network: true\n"
    << "rdzv_backend: static\n"
    << "gpu_ids: all\n"
    << "use_cpu: false\n";
  return y.str();
}

std::string option_name(const MultiGpuSetup& m) {
  std::string n = to_string(m.strategy);
  if (m.fsdp_cpu_offload) n += "+cpu-offload";
  if (m.offload_optimizer) n += "+offload-optimizer";
  if (m.context_parallel > 1) n += ", CP " + std::to_string(m.context_parallel) + " " + to_string(m.cp_comm);
  return n;
}

namespace {

std::string fmt(const char* f, double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

void print_multi_gpu_advice(std::ostream& out, const AdviceReport& r, const TextFormat& f) {
  const MultiGpuSetup& m = r.context.setup.multi_gpu;
  if (r.distributed) {
    out << "\n" << f.section(3, "Multi-GPU setups", "Multi-GPU setups (per rank; best = most samples/s that fits):\n");
    Table t({"setup", "schedule", "peak reserved", "s/step", "comm exposed", "samples/s", "fit"});
    const DistributedAdvice& d = *r.distributed;
    for (int i = 0; i < static_cast<int>(d.options.size()); ++i) {
      const DistributedOption& o = d.options[i];
      const std::string name = option_name(o.multi_gpu) + (i == d.best ? " (best)" : "");
      if (!o.runs || o.candidate.schedule.name().empty() || (o.samples_per_s <= 0)) {
        t.add({name, "-", "-", "-", "-", "-", o.runs ? o.reason : "trainer stops: " + o.reason});
        continue;
      }
      const Prediction& p = o.candidate.prediction;
      t.add({name, o.candidate.schedule.name(), gib_str(p.peak_vram_bytes), secs_str(p.step_time_s),
             secs_str(p.time.communication_s), fmt("%.2f", o.samples_per_s), o.fits ? "fits" : o.reason});
    }
    f.table(out, t);
  }
  out << "\n" << f.section(3, "Multi-GPU config", "") << f.either("Multi-GPU keys for SimpleTuner:\n", "SimpleTuner keys:\n\n")
      << f.code_block("json", multi_gpu_simpletuner_keys(m, r.context.setup).dump(2) + "\n");
  out << f.gap() << f.either("accelerate config (accelerate launch --config_file):\n", "accelerate config (`--config_file`):\n\n")
      << f.code_block("yaml", accelerate_yaml(m, r.context.setup.mixed_precision));
  const auto ds = deepspeed_config(m, r.context.setup.batch);
  if (!ds.is_null())
    out << f.gap() << f.either("DeepSpeed JSON (deepspeed_config):\n", "DeepSpeed JSON:\n\n")
        << f.code_block("json", ds.dump(2) + "\n");
}


}  // namespace segadvise::cli
