// Multi-GPU predictions through the advisor: per-rank memory, the trainer's rules, the published
// multi-GPU points of SimpleTuner's documentation (docs/sources/multi-gpu.md §5), and one GPU left unchanged.
#include <doctest/doctest.h>

#include "advisor_request.hpp"

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/multi_gpu.hpp"
#include "segadvise/trainers/multi_gpu_rules.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/distributed_advice.hpp"

using namespace segadvise;

namespace {

using test::request_for;

MultiGpuSetup gpus(int n, Strategy s, int cp = 1) {
  MultiGpuSetup m;
  m.gpus_per_node = n;
  m.strategy = s;
  m.context_parallel = cp;
  return m;
}

Prediction predicted(AdvisorRequest r, const MultiGpuSetup& m, const std::string& schedule = "layer") {
  r.setup.multi_gpu = m;
  return predict_report(r, Schedule::parse(schedule)).candidate.prediction;
}

}  // namespace

TEST_CASE("with no multi-GPU setting nothing of the multi-GPU model is applied") {
  const AdvisorRequest r = request_for("flux", "h100");
  const Prediction one = predict_report(r, Schedule::parse("layer")).candidate.prediction;
  CHECK_FALSE(r.setup.multi_gpu.active());
  CHECK_FALSE(one.multi_gpu.active);
  CHECK(one.time.communication_s == 0);
  CHECK(one.memory.gathered_bytes == 0);
  // a default setup (one process, no strategy) is inactive
  MultiGpuSetup m;
  CHECK_FALSE(m.active());
}

TEST_CASE("DDP keeps the whole replica per rank plus buckets as large as the gradients") {
  const AdvisorRequest r = request_for("flux", "h100");
  const Prediction one = predict_report(r, Schedule::parse("layer")).candidate.prediction;
  const Prediction ddp = predicted(r, gpus(8, Strategy::ddp));
  REQUIRE(ddp.multi_gpu.active);
  CHECK(ddp.memory.weights_bytes == doctest::Approx(one.memory.weights_bytes));
  CHECK(ddp.memory.bucket_bytes == doctest::Approx(one.memory.gradient_bytes));
  // the peak grows by exactly the buckets (same activations, same state)
  CHECK(ddp.peak_vram_bytes == doctest::Approx(one.peak_vram_bytes + one.memory.gradient_bytes));
  // all-reduce of bf16 adapter gradients once per step
  CHECK(ddp.multi_gpu.volume.allreduce_bytes == doctest::Approx(one.memory.gradient_bytes));
}

TEST_CASE("FSDP2 shards the frozen base over 8 ranks and context parallel 2 halves the activations") {
  AdvisorRequest r = request_for("flux", "h100");
  r.setup.base_precision = "no_change";  // the example's quanto base: FSDP2 rejects it
  const Prediction one = predict_report(r, Schedule::parse("layer")).candidate.prediction;
  const Prediction f = predicted(r, gpus(8, Strategy::fsdp2));
  REQUIRE(f.supported);
  // base bf16 weights / 8 (the adapters are apart: fp32, sharded too)
  CHECK(f.memory.weights_bytes == doctest::Approx(one.memory.weights_bytes / 8).epsilon(0.001));
  CHECK(f.memory.gathered_bytes > 0);
  const Prediction cp = predicted(r, gpus(8, Strategy::ddp, 2));
  CHECK(cp.memory.activation_peak_bytes == doctest::Approx(one.memory.activation_peak_bytes / 2).epsilon(0.01));
  CHECK(cp.multi_gpu.samples_per_step == 4);  // batch 1 x 8 / 2 replicas of 2 CP ranks
}

TEST_CASE("the trainer's multi-GPU rejections and silent changes") {
  const Family& flux = find_family("flux");
  TrainingSetup s = default_setup(flux);
  s.multi_gpu = gpus(8, Strategy::zero2);
  CHECK(multi_gpu_rules(flux, s).rejections.at(0).find("LoRA with DeepSpeed") != std::string::npos);
  s.multi_gpu = gpus(8, Strategy::fsdp2);
  s.base_precision = "int8-quanto";
  CHECK(multi_gpu_rules(flux, s).rejections.at(0).find("Quanto") != std::string::npos);
  s.base_precision = "no_change";
  s.optimizer = "optimi-lion";
  const MultiGpuRuling ru = multi_gpu_rules(flux, s);
  CHECK(ru.rejections.empty());
  CHECK(ru.setup.optimizer == "adamw_schedulefree");
  s.multi_gpu = gpus(8, Strategy::ddp, 3);  // 3 does not divide 8
  CHECK(multi_gpu_rules(flux, s).rejections.at(0).find("must divide the world size 8") != std::string::npos);
  const Family& sdxl = find_family("sdxl");  // no _cp_plan
  TrainingSetup u = default_setup(sdxl);
  u.multi_gpu = gpus(2, Strategy::ddp, 2);
  CHECK(multi_gpu_rules(sdxl, u).rejections.at(0).find("has no _cp_plan") != std::string::npos);
  CHECK(context_parallel_support(find_family("mageflow")).rfind("refused", 0) == 0);
  CHECK(context_parallel_support(find_family("z-image-turbo")) == "empty");
  // a rejected setup is unsupported for every schedule, with the reason
  AdvisorRequest req = request_for("flux", "h100");
  req.setup.multi_gpu = gpus(8, Strategy::zero3);
  const Prediction p = predict_report(req, Schedule::parse("layer")).candidate.prediction;
  CHECK_FALSE(p.supported);
  CHECK(p.reason.find("LoRA with DeepSpeed") != std::string::npos);
}

TEST_CASE("batch semantics: per-GPU batch x data-parallel replicas x GA") {
  TrainingSetup s;
  s.batch = 2;
  s.multi_gpu = gpus(8, Strategy::ddp, 2);
  s.multi_gpu.grad_accumulation = 4;
  // 2 x (8 / 2) x 4 = 32
  CHECK(batch_semantics(s).find("= 32 unique samples per optimizer step") != std::string::npos);
}

TEST_CASE("published: DDP is faster than FSDP2 for an LTX-2.3 LoRA on 8xH100 (FSDP2.md:15)") {
  // FSDP2.md reports DDP about 3-6x faster at batch 1 per GPU. The model reproduces the direction
  // and the mechanism: FSDP2 gathers the whole frozen base twice per step (~74 GiB payload per
  // rank) where DDP all-reduces the adapter gradients (~0.2 GiB), over 300x the bytes. A bf16 base
  // (the published run names no quantization; the family's example quantizes to int8-sdnq, which
  // halves the gathered bytes). At the example's 960x512x49 shape the gathers hide behind compute on
  // NVLink 4, so the predicted gap is small; the published factor needs an exposed gather rate far
  // below NVLink (docs/multi-gpu.md).
  AdvisorRequest r = request_for("ltx-2.3", "h100");
  r.setup.base_precision = "no_change";
  r.setup.sdnq_hadamard = false;
  const Prediction ddp = predicted(r, gpus(8, Strategy::ddp));
  const Prediction fsdp = predicted(r, gpus(8, Strategy::fsdp2));
  REQUIRE(ddp.supported);
  REQUIRE(fsdp.supported);
  CHECK(ddp.step_time_s < fsdp.step_time_s);
  const double ddp_bytes = ddp.multi_gpu.volume.total_payload_bytes();
  const double fsdp_bytes = fsdp.multi_gpu.volume.total_payload_bytes();
  CHECK(fsdp_bytes > 300 * ddp_bytes);
  // on PCIe without P2P (4090-class links) the same gathers are no longer hidden
  AdvisorRequest pcie = r;
  pcie.gpu.nvlink_bytes_per_s = 0;
  pcie.gpu.p2p = false;
  CHECK(predicted(pcie, gpus(8, Strategy::fsdp2)).time.communication_s > 10 * fsdp.time.communication_s);
}

TEST_CASE("published: SDXL full U-Net, ZeRO-2 offload, batch 8 at 1 MP on a 24 GB card is near 13 GB") {
  // DEEPSPEED.md:258-262: 13,102 MiB (12.8 GiB) on one RTX 4090 with ZeRO-2 + offload_optimizer,
  // 8 s/it. With the optimizer state and gradient partitions on the host, the card keeps the bf16
  // U-Net (2.6B x 2 B = 4.8 GiB), reduce buckets and the checkpointed activations.
  AdvisorRequest r = request_for("sdxl", "4090");
  r.setup.model_type = ModelType::Full;
  r.setup.optimizer = "adamw";
  r.setup.batch = 8;
  r.setup.width = r.setup.height = 1024;
  MultiGpuSetup m = gpus(1, Strategy::zero2);
  m.offload_optimizer = true;
  const Prediction p = predicted(r, m);
  REQUIRE(p.supported);
  CHECK(p.memory.optimizer_bytes == 0);
  CHECK(p.memory.gradient_bytes == 0);
  CHECK(p.memory.host_state_bytes > 10 * kGiB);  // 2.6B x (12 + 2) B on the host
  CHECK(p.peak_vram_bytes / kGiB == doctest::Approx(12.8).epsilon(0.25));  // within 25% of 12.8 GiB
  CHECK(p.multi_gpu.host_optimizer_s > 1);  // CPU Adam over 2.6B parameters: seconds
}

TEST_CASE("advise over strategies prefers DDP for a LoRA that fits and never picks a rejected setup") {
  AdvisorRequest r = request_for("flux", "h100");
  r.setup.multi_gpu = gpus(8, Strategy::ddp);
  const DistributedAdvice d = advise_distributed(Context(r));
  REQUIRE(d.best >= 0);
  CHECK(d.options[d.best].runs);
  CHECK(d.options[d.best].fits);
  CHECK(d.options[d.best].multi_gpu.strategy == Strategy::ddp);
  // the trainer rejects a LoRA with DeepSpeed: no ZeRO option is offered for one
  for (const auto& o : d.options) CHECK_FALSE((zero_stage(o.multi_gpu.strategy) > 0 && o.multi_gpu.strategy != Strategy::fsdp2));
  // a full fine-tune is offered the ZeRO stages
  r.setup.model_type = ModelType::Full;
  const DistributedAdvice full = advise_distributed(Context(r));
  int zero = 0;
  for (const auto& o : full.options) zero += zero_stage(o.multi_gpu.strategy) > 0 && o.multi_gpu.strategy != Strategy::fsdp2;
  CHECK(zero > 0);
}

TEST_CASE("links: NVLink where the card has it, PCIe otherwise, half of PCIe without P2P") {
  MultiGpuSetup m = gpus(8, Strategy::ddp);
  CHECK(link_for(find_gpu("h100"), m).intra_node_bytes_per_s == 450e9);  // NVLink 4: 900 GB/s both ways
  CHECK(link_for(find_gpu("l40s"), m).intra_node_bytes_per_s == 32e9);   // PCIe Gen4 x16, P2P
  CHECK(link_for(find_gpu("4090"), m).intra_node_bytes_per_s == 16e9);   // 32 GB/s crossed twice via host
  CHECK(link_for(find_gpu("h100"), m).inter_node_bytes_per_s == 50e9);   // NDR 400 Gb/s
}

TEST_CASE("context parallel K splits every sequence-proportional figure of a block by K") {
  BlockChain c;
  BlockCost b;
  b.saved_attention_bytes = 800;
  b.boundary_bytes = 80;
  b.attention_flops = 4000;
  b.matmul_flops = 2000;
  b.params = 1e6;
  b.launches = 100;
  c.blocks = {b};
  c.outside_activation_bytes = 40;
  const BlockChain s = split_sequence(c, 4);
  CHECK(s.blocks[0].saved_attention_bytes == 200);  // 800 / 4
  CHECK(s.blocks[0].boundary_bytes == 20);
  CHECK(s.blocks[0].attention_flops == 1000);  // each rank's queries against the gathered keys
  CHECK(s.blocks[0].matmul_flops == 500);
  CHECK(s.blocks[0].params == 1e6);     // weights are not split
  CHECK(s.blocks[0].launches == 100);   // every rank launches every kernel
  CHECK(s.outside_activation_bytes == 10);
}
