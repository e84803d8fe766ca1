// SimpleTuner's multi-GPU rules as data (trainers/simpletuner/simpletuner-multi-gpu.json) and code.
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/multi_gpu_rules.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

struct Facts {
  std::set<std::string> cp_plan, cp_empty;
  std::map<std::string, std::string> cp_refused, cp_alltoall_only;
  std::vector<std::string> fallback_prefixes, fallback_names;
  std::string fallback_to, fallback_why, fp8_from, fp8_to, fp8_why;
};

std::map<std::string, std::string> string_map(const FieldReader& r, const json& j, const std::string& field) {
  std::map<std::string, std::string> out;
  const FieldReader sub = r.sub(field, true);
  for (auto it = j.at(field).begin(); it != j.at(field).end(); ++it) out[it.key()] = sub.str(it.key(), "", true);
  return out;
}

const Facts& facts() {
  static const Facts f = [] {
    const std::string origin = "trainers/simpletuner/simpletuner-multi-gpu.json";
    const json j = trainer_data_file("simpletuner-multi-gpu.json");
    const FieldReader r{j, origin, ""};
    Facts x;
    for (const auto& s : r.strings("cp_plan_families")) x.cp_plan.insert(s);
    for (const auto& s : r.strings("cp_empty_plan_families")) x.cp_empty.insert(s);
    x.cp_refused = string_map(r, j, "cp_refused");
    x.cp_alltoall_only = string_map(r, j, "cp_alltoall_only");
    const FieldReader fb = r.sub("fsdp2_optimizer_fallback", true);
    x.fallback_prefixes = fb.strings("prefixes");
    x.fallback_names = fb.strings("names");
    x.fallback_to = fb.str("to", "", true);
    x.fallback_why = fb.str("why", "", true);
    const FieldReader q = r.sub("fp8_quanto_multi_gpu", true);
    x.fp8_from = q.str("from", "", true);
    x.fp8_to = q.str("to", "", true);
    x.fp8_why = q.str("why", "", true);
    return x;
  }();
  return f;
}

bool falls_back(const std::string& optimizer) {
  const Facts& f = facts();
  for (const auto& p : f.fallback_prefixes)
    if (optimizer.rfind(p, 0) == 0) return true;
  return std::find(f.fallback_names.begin(), f.fallback_names.end(), optimizer) != f.fallback_names.end();
}

void context_parallel_rules(const Family& fam, MultiGpuRuling& out) {
  MultiGpuSetup& mg = out.setup.multi_gpu;
  const int k = mg.context_parallel, world = mg.world();
  if (k <= 1) return;
  if (k > world || world % k != 0)
    out.rejections.push_back("context_parallel_size " + std::to_string(k) + " must divide the world size " +
                             std::to_string(world) + " (training/context_parallel.py:61-88)");
  const std::string support = context_parallel_support(fam);
  if (support == "none")
    out.rejections.push_back(fam.trainer_family + " has no _cp_plan: context parallel raises ValueError (context_parallel.py:176-179)");
  else if (support == "empty")
    out.rejections.push_back(fam.trainer_family + " defines an empty _cp_plan {}: context parallel has nothing to split");
  else if (support.rfind("refused", 0) == 0)
    out.rejections.push_back(fam.trainer_family + " refuses context parallel: " + support.substr(9));
  const auto only = facts().cp_alltoall_only.find(fam.trainer_family);
  if (only != facts().cp_alltoall_only.end() && mg.cp_comm != CpComm::alltoall) {
    mg.cp_comm = CpComm::alltoall;
    out.warnings.push_back("context_parallel_comm_strategy -> alltoall: " + only->second);
  }
}

void strategy_rules(MultiGpuRuling& out) {
  TrainingSetup& s = out.setup;
  MultiGpuSetup& mg = s.multi_gpu;
  const PrecisionInfo prec = precision_info(s.base_precision);
  const bool zero = zero_stage(mg.strategy) > 0 && mg.strategy != Strategy::fsdp2;
  if (mg.strategy == Strategy::fsdp2 && prec.backend == "quanto")
    out.rejections.push_back("FSDP v2 with " + s.base_precision +
                             ": Quanto kernels do not register DTensor sharding strategies (configuration/cmd_args.py:1280-1289)");
  if (zero && s.model_type == ModelType::Lora)
    out.rejections.push_back("LoRA with DeepSpeed: the trainer exits (training/error_handling.py:15-20); use ddp or fsdp2");
  if (mg.strategy == Strategy::fsdp2 && falls_back(s.optimizer)) {
    out.warnings.push_back("optimizer " + s.optimizer + " -> " + facts().fallback_to + ": " + facts().fallback_why);
    s.optimizer = facts().fallback_to;
  }
  if (mg.world() > 1 && s.model_type == ModelType::Lora && s.base_precision == facts().fp8_from) {
    out.warnings.push_back("base_model_precision " + s.base_precision + " -> " + facts().fp8_to + ": " + facts().fp8_why);
    s.base_precision = facts().fp8_to;
  }
  if (mg.offload_param && mg.strategy != Strategy::zero3) {
    out.warnings.push_back("offload_param is available only with ZeRO stage 3 (DeepSpeed config-json docs): ignored");
    mg.offload_param = false;
  }
  if (mg.strategy == Strategy::zero3)
    out.warnings.push_back("ZeRO-3 turns validation off (validation_disable=True, trainer.py:4667-4676)");
  if ((mg.strategy == Strategy::fsdp2 || zero) && (s.ramtorch || s.blocks_to_swap > 0 || s.group_offload))
    out.warnings.push_back("weight streaming beside " + to_string(mg.strategy) +
                           ": the trainer raises no error but the combination is unverified (dist §1.5); multi-GPU RamTorch runs on DDP");
}

}  // namespace

bool cp_alltoall_only(const Family& fam) { return facts().cp_alltoall_only.count(fam.trainer_family) > 0; }

std::string context_parallel_support(const Family& fam) {
  const Facts& f = facts();
  const auto refused = f.cp_refused.find(fam.trainer_family);
  if (refused != f.cp_refused.end()) return "refused: " + refused->second;
  if (f.cp_empty.count(fam.trainer_family)) return "empty";
  return f.cp_plan.count(fam.trainer_family) ? "plan" : "none";
}

std::string batch_semantics(const TrainingSetup& s) {
  const MultiGpuSetup& mg = s.multi_gpu;
  const int replicas = mg.world() / std::max(1, mg.context_parallel);
  const long long samples = 1LL * s.batch * replicas * mg.grad_accumulation;
  std::string out = "train_batch_size " + std::to_string(s.batch) + " is per GPU: x " + std::to_string(replicas) +
                    " data-parallel replicas x GA " + std::to_string(mg.grad_accumulation) + " = " +
                    std::to_string(samples) + " unique samples per optimizer step";
  if (mg.context_parallel > 1)
    out += " (the " + std::to_string(mg.context_parallel) + " context-parallel ranks of a replica share each sample)";
  return out;
}

MultiGpuRuling multi_gpu_rules(const Family& fam, const TrainingSetup& setup) {
  MultiGpuRuling out;
  out.setup = setup;
  if (!setup.multi_gpu.active()) return out;
  strategy_rules(out);
  context_parallel_rules(fam, out);
  out.warnings.push_back(batch_semantics(out.setup));
  return out;
}

}  // namespace segadvise
