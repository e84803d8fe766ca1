// advise over the trainer's multi-GPU setups (distributed_advice.hpp).
#include "segadvise/planner/distributed_advice.hpp"

#include "segadvise/trainers/multi_gpu_rules.hpp"

namespace segadvise {

namespace {

std::vector<MultiGpuSetup> setups(const Context& ctx) {
  const MultiGpuSetup base = ctx.setup.multi_gpu;
  const bool full = ctx.setup.model_type == ModelType::Full;
  std::vector<std::pair<Strategy, int>> strategies = {{Strategy::ddp, 0}, {Strategy::fsdp2, 0}, {Strategy::fsdp2, 1}};
  if (full)
    for (Strategy z : {Strategy::zero1, Strategy::zero2, Strategy::zero3}) {
      strategies.push_back({z, 0});
      strategies.push_back({z, 1});
    }
  std::vector<int> cps = {1};
  if (context_parallel_support(*ctx.family) == "plan")
    for (int k = 2; k <= base.gpus_per_node; k *= 2)
      if (base.world() % k == 0) cps.push_back(k);
  std::vector<MultiGpuSetup> out;
  for (const auto& [strategy, offload] : strategies)
    for (int k : cps) {
      MultiGpuSetup m = base;
      m.strategy = strategy;
      m.fsdp_cpu_offload = strategy == Strategy::fsdp2 && offload;
      m.offload_optimizer = zero_stage(strategy) > 0 && strategy != Strategy::fsdp2 && offload;
      m.offload_param = false;
      m.context_parallel = k;
      if (k > 1 && cp_alltoall_only(*ctx.family)) m.cp_comm = CpComm::alltoall;  // what the trainer runs
      out.push_back(m);
    }
  return out;
}

DistributedOption evaluate_option(const Context& ctx, const MultiGpuSetup& m) {
  DistributedOption o;
  TrainingSetup s = ctx.setup;
  s.multi_gpu = m;
  const Context c = ctx.with_setup(s);
  o.multi_gpu = c.setup.multi_gpu;
  if (!c.trainer_rejection.empty()) {
    o.runs = false;
    o.reason = c.trainer_rejection;
    return o;
  }
  const Advice a = advise_schedules(c);
  const int pick = a.recommended >= 0 ? a.recommended : a.borderline;
  if (pick < 0) {
    o.reason = "no schedule fits (short by " + std::to_string(int(a.shortfall_bytes / kGiB + 0.5)) + " GiB)";
    return o;
  }
  o.candidate = a.candidates[pick];
  o.fits = a.recommended >= 0;
  if (!o.fits) o.reason = "borderline";
  const Prediction& p = o.candidate.prediction;
  o.samples_per_s = p.step_time_s > 0 ? p.multi_gpu.samples_per_step / p.step_time_s : 0;
  return o;
}

}  // namespace

DistributedAdvice advise_distributed(const Context& ctx) {
  DistributedAdvice d;
  for (const MultiGpuSetup& m : setups(ctx)) d.options.push_back(evaluate_option(ctx, m));
  for (int i = 0; i < static_cast<int>(d.options.size()); ++i) {
    const DistributedOption& o = d.options[i];
    if (o.fits && (d.best < 0 || o.samples_per_s > d.options[d.best].samples_per_s)) d.best = i;
  }
  return d;
}

}  // namespace segadvise
