// The activation timeline and static memory, on numbers you can check on paper.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include <nlohmann/json.hpp>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"

using namespace segadvise;

namespace {

// Four identical blocks. Each saves 10 bytes (attention 6, FFN 3, rest 1), carries a 2-byte
// hidden state, no transient workspace, nothing outside the blocks.
BlockChain four_blocks() {
  BlockChain c;
  for (int i = 0; i < 4; ++i) {
    BlockCost b;
    b.list = "blocks";
    b.index = i;
    b.list_position = i;
    b.global_position = i;
    b.kind = "dit_cross";
    b.saved_attention_bytes = 6;
    b.saved_ffn_bytes = 3;
    b.saved_rest_bytes = 1;
    b.ffn_input_bytes = 1;
    b.boundary_bytes = 2;
    c.blocks.push_back(b);
  }
  return c;
}

// The same chain as a family the trainer segments (Wan-like), to go through realize().
Family segmented_family() {
  const auto j = nlohmann::json::parse(R"({
    "id": "toy4", "trainer_family": "toy", "modality": "image", "text_tokens": 0,
    "geometry": {"vae_spatial": 8, "patch_spatial": 2},
    "block_lists": [{"name": "blocks", "count": 4, "kind": "dit_cross", "hidden": 64, "heads": 1, "head_dim": null, "ffn_hidden": 256}],
    "checkpointing": {"interval": "segmented", "stride": true, "fallback": "every_block",
                      "backend_setter": true, "ffn_backend": true, "attention_offload": true}
  })");
  return parse_family(j, "toy4.json");
}

double peak_of(const BlockChain& chain, const Plan& plan) {
  return simulate_activations(chain, plan, Coefficients{}).peak_bytes;
}

Plan realized(const BlockChain& chain, const std::string& schedule) {
  const PlanResult r = realize(segmented_family(), chain, Schedule::parse(schedule), TrainingSetup{});
  REQUIRE(r.supported);
  return r.plan;
}

}  // namespace

TEST_CASE("without checkpointing the peak is every block's saved tensors plus the gradients of the last") {
  // Forward keeps 10 per block: 40 after block 3. Backward of block 3: blocks 0-2 (30) + its own
  // 10 + gradient in and out of the hidden state (2 x 2) = 44.
  const BlockChain chain = four_blocks();
  CHECK(peak_of(chain, realized(chain, "none")) == doctest::Approx(44));
}

TEST_CASE("per-block checkpointing keeps one boundary per block and recomputes one block at a time") {
  // Forward keeps 2 per block (8). Backward of block 3: boundaries of blocks 0-2 (6) + its own
  // boundary (2) + its recomputed 10 + gradients 4 = 22. Forward never exceeds 6 + 10 + 2 = 18.
  const BlockChain chain = four_blocks();
  CHECK(peak_of(chain, realized(chain, "layer")) == doctest::Approx(22));
}

TEST_CASE("interval 2 recomputes two blocks at once while the earlier segment's boundary waits") {
  // Segments [0,2) and [2,4): forward keeps 2 + 2. Backward of segment [2,4): segment [0,2)'s
  // boundary (2) + its own boundary (2) + both blocks recomputed (20) + gradients (4) = 28.
  const BlockChain chain = four_blocks();
  const Plan plan = realized(chain, "interval2");
  REQUIRE(plan.segments.size() == 2);
  CHECK(plan.segments[0].begin == 0);
  CHECK(plan.segments[0].end == 2);
  CHECK(plan.segments[1].mode == BlockMode::Checkpoint);
  CHECK(peak_of(chain, plan) == doctest::Approx(28));
}

TEST_CASE("interval 2 with stride 4 checkpoints blocks 0-1 and keeps blocks 2-3") {
  // Forward keeps 2 (segment [0,2)) + 10 + 10. Backward of block 3: 2 + 10 (block 2) + 10 (its
  // own) + gradients 4 = 26; segment [0,2) later peaks at 2 + 20 + 4 = 26 too.
  const BlockChain chain = four_blocks();
  const Plan plan = realized(chain, "seg2-stride4");
  REQUIRE(plan.segments.size() == 3);
  CHECK(plan.segments[0].mode == BlockMode::Checkpoint);
  CHECK(plan.segments[1].mode == BlockMode::Keep);
  CHECK(plan.segments[2].mode == BlockMode::Keep);
  CHECK(peak_of(chain, plan) == doctest::Approx(26));
}

TEST_CASE("the unsloth backend parks checkpoint boundaries on the host") {
  // Per-block checkpointing with the boundaries on the host: backward of block 3 holds only its
  // boundary brought back (2) + recomputed 10 + gradients 4 = 16; the host holds 4 x 2 = 8.
  const BlockChain chain = four_blocks();
  const ActivationTimeline tl = simulate_activations(chain, realized(chain, "layer+unsloth"), Coefficients{});
  CHECK(tl.peak_bytes == doctest::Approx(16));
  CHECK(tl.host_bytes == doctest::Approx(8));
}

TEST_CASE("attention offload without checkpointing keeps only the FFN and rest sides on the GPU") {
  // Each kept block leaves 3 + 1 = 4 on the GPU. Backward of block 3: 12 (blocks 0-2) + 10 (its
  // tensors, attention brought back) + 4 = 26; host holds 4 x 6 = 24.
  const BlockChain chain = four_blocks();
  for (const auto& b : chain.blocks) REQUIRE(!b.attention_offloadable);
  BlockChain offloadable = chain;
  for (auto& b : offloadable.blocks) b.attention_offloadable = true;
  const ActivationTimeline tl =
      simulate_activations(offloadable, realized(offloadable, "none-offload"), Coefficients{});
  CHECK(tl.peak_bytes == doctest::Approx(26));
  CHECK(tl.host_bytes == doctest::Approx(24));
}

TEST_CASE("attention offload under per-block checkpointing holds staging copies on the device") {
  // activation-offload = layer + attention offload. The per-block layer peak is 22 (see above);
  // with offload_staging_blocks 1.5 the machinery holds 1.5 x the largest checkpointed block's
  // attention (6) = 9 on top of every position: 22 + 9 = 31. Without offload: 22, unchanged.
  BlockChain offloadable = four_blocks();
  for (auto& b : offloadable.blocks) b.attention_offloadable = true;
  Coefficients c;
  c.offload_staging_blocks = 1.5;
  CHECK(simulate_activations(offloadable, realized(offloadable, "activation-offload"), c).peak_bytes ==
        doctest::Approx(31));
  CHECK(simulate_activations(offloadable, realized(offloadable, "layer"), c).peak_bytes == doctest::Approx(22));
}

TEST_CASE("a stride smaller than the interval is rejected as the trainer rejects it") {
  const BlockChain chain = four_blocks();
  const PlanResult r = realize(segmented_family(), chain, Schedule::parse("seg4-stride2"), TrainingSetup{});
  CHECK_FALSE(r.supported);
  CHECK(r.reason.find("stride") != std::string::npos);
  CHECK(r.reason.find("interval") != std::string::npos);
}

TEST_CASE("base precision changes resident weight bytes by exactly the quantized parameters' bytes") {
  BlockChain chain = four_blocks();
  for (auto& b : chain.blocks) {
    b.params = 1000;
    b.quantizable_params = 800;
  }
  chain.outside_params = 500;
  TrainingSetup bf16;
  TrainingSetup int8 = bf16;
  int8.base_precision = "int8-quanto";
  // bf16: (4 x 1000 + 500) x 2 B = 9000 B. int8-quanto: 4 x 800 quantized params at 1.01 B
  // + 4 x 200 unquantized + 500 outside at 2 B = 3232 + 2600 = 5832 B.
  CHECK(static_memory(chain, bf16).weights_bytes == doctest::Approx(9000));
  CHECK(static_memory(chain, int8).weights_bytes == doctest::Approx(5832));
  TrainingSetup nf4 = bf16;
  nf4.base_precision = "nf4-bnb";
  // nf4: 4 bits + an fp32 absmax per 64 weights = 0.5625 B
  CHECK(static_memory(chain, nf4).weights_bytes == doctest::Approx(4 * 800 * 0.5625 + 2600));
}

TEST_CASE("4-bit storage: NF4 absmax per 64, Quanto int4 scale and shift per 128; bitsandbytes converts the modulation") {
  // bitsandbytes quantize_4bit: 64 weights = 32 B of codes + one fp32 absmax (4 B): 36/64 B
  CHECK(precision_info("nf4-bnb").bytes_per_param == doctest::Approx(36.0 / 64));
  // quanto qint4, group 128: 64 B of codes + a bf16 scale + a bf16 shift (4 B): 68/128 B
  CHECK(precision_info("int4-quanto").bytes_per_param == doctest::Approx(68.0 / 128));
  BlockCost b;
  b.params = 1000;
  b.quantizable_params = 800;
  b.modulation_params = 150;  // an adaLN Linear that Quanto's `*norm*` keeps (flux's norm1.linear)
  TrainingSetup s;
  s.model_type = ModelType::Lora;
  s.base_precision = "nf4-bnb";  // every nn.Linear: 950 at 0.5625 B, the other 50 at bf16
  CHECK(block_weight_bytes(b, s) == doctest::Approx(950 * 0.5625 + 50 * 2.0));
  s.base_precision = "int4-quanto";  // the modulation stays bf16: 800 at 0.53125 B, 200 at 2 B
  CHECK(block_weight_bytes(b, s) == doctest::Approx(800 * 0.53125 + 200 * 2.0));
  // FLUX.1 double block: norm1.linear and norm1_context.linear, 3072 -> 6 x 3072 with bias each
  const Family& flux = find_family("flux1");
  TrainingSetup fs = default_setup(flux);
  const BlockChain chain = analyze(flux, fs);
  REQUIRE_FALSE(chain.blocks.empty());
  const BlockCost& d = chain.blocks.front();
  CHECK(d.list == "transformer_blocks");
  // 2 x (3072 x 18432 + 18432) = 113,283,072, within the analyzer's fit to the published 11.9B
  CHECK(d.modulation_params == doctest::Approx(2.0 * (3072 * 18432 + 18432)).epsilon(0.001));
  fs.base_precision = "nf4-bnb";
  const double nf4 = block_weight_bytes(d, fs);
  fs.base_precision = "int4-quanto";
  const double int4 = block_weight_bytes(d, fs);
  CHECK(int4 - nf4 == doctest::Approx(d.modulation_params * (2.0 - 0.5625) - d.quantizable_params * (0.5625 - 0.53125)));
}

TEST_CASE("LoRA trainable bytes, gradients and AdamW-bf16 state follow the adapter parameter count") {
  BlockChain chain = four_blocks();
  for (auto& b : chain.blocks) b.lora_params = 250;
  TrainingSetup s;  // adamw_bf16: exp_avg, exp_avg_sq and the shift buffer in bf16 = 6 B per parameter
  const StaticMemory m = static_memory(chain, s);
  CHECK(m.trainable_params == doctest::Approx(1000));
  CHECK(m.trainable_bytes == doctest::Approx(2000));
  CHECK(m.gradient_bytes == doctest::Approx(2000));
  CHECK(m.optimizer_bytes == doctest::Approx(6000));
  s.optimizer = "optimi-lion";  // one bf16 momentum and its Kahan buffer: 4 B
  CHECK(static_memory(chain, s).optimizer_bytes == doctest::Approx(4000));
}

TEST_CASE("schedule names of the sweep parse and print back") {
  for (const std::string n :
       {"none", "layer", "interval2", "seg2-stride4", "activation-offload", "seg2-stride4-offload", "none-offload"})
    CHECK(Schedule::parse(n).name() == n);
  // the sweep's activation-offload rows are per-block checkpointing plus attention offload
  // (docs/sources/measured-sweep.md), not offload without checkpointing
  const Schedule ao = Schedule::parse("activation-offload");
  CHECK(ao.checkpointing);
  CHECK(ao.offload_attention);
  CHECK(ao.interval <= 1);
  CHECK_FALSE(Schedule::parse("none-offload").checkpointing);
  CHECK(Schedule::parse("interval3+unsloth").backend == Backend::Unsloth);
  CHECK_THROWS_AS(Schedule::parse("segment2"), InputError);
  CHECK_THROWS_AS(Schedule::parse("none+unsloth"), InputError);
}

TEST_CASE("usable memory is the card's total minus the fitted reserve, and fits keeps the headroom") {
  const BlockChain chain = four_blocks();
  GpuSpec gpu;
  gpu.id = "toy";
  gpu.total_bytes = 100;
  gpu.bf16_flops_per_s = 1e12;
  gpu.mem_bytes_per_s = 1e9;
  gpu.pcie_bytes_per_s = 1e9;
  Coefficients coef;
  coef.gpu["toy"].reserve_bytes = 40;  // a measured card: usable 60
  coef.fragmentation = 0;
  const Plan none = realized(chain, "none");  // peak 44, no static memory
  CHECK(predict(chain, none, TrainingSetup{}, gpu, coef, 10).fits);
  CHECK_FALSE(predict(chain, none, TrainingSetup{}, gpu, coef, 20).fits);
  CHECK(predict(chain, none, TrainingSetup{}, gpu, coef, 0).usable_vram_bytes == doctest::Approx(60));
}

TEST_CASE("a host-bound block: launches and quantized Linear calls set its time, backward at its host ratio") {
  BlockCost b;  // no FLOPs, no bytes: only the host floor binds
  b.launches = 100;
  b.quantizable_linears = 10;
  GpuSpec gpu;
  gpu.id = "toy";
  gpu.bf16_flops_per_s = 1e15;
  gpu.mem_bytes_per_s = 1e12;
  Coefficients coef;
  coef.launch_s = 10e-6;
  coef.backward_host_ratio = 0.5;
  // no FLOPs and no bytes: the backward's GPU part is 0, its host floor binds
  coef.backward_factor = 0.3;
  coef.quantized_call_s["int8-sdnq"] = 50e-6;
  TrainingSetup bf16;
  TrainingSetup sdnq;
  sdnq.base_precision = "int8-sdnq";
  // bf16: 100 launches x 10 us = 1 ms forward; backward 0.5 x 1 ms = 0.5 ms
  CHECK(block_forward_s(b, bf16, gpu, coef) == doctest::Approx(1e-3));
  CHECK(block_backward_s(b, bf16, gpu, coef) == doctest::Approx(0.5e-3));
  // int8-sdnq adds 10 calls x 50 us = 0.5 ms to each pass: 1.5 ms forward, 0.5 + 0.5 = 1 ms backward
  CHECK(block_forward_s(b, sdnq, gpu, coef) == doctest::Approx(1.5e-3));
  CHECK(block_backward_s(b, sdnq, gpu, coef) == doctest::Approx(1e-3));
}

TEST_CASE("the analyzer counts the quantizable Linear layers of a block") {
  // SD3 (mmdit_double): image and text streams each have q, k, v, out (4) and a GELU FFN (up, down: 2)
  const Family& fam = find_family("sd3.5-medium");
  const BlockChain chain = analyze(fam, default_setup(fam));
  REQUIRE_FALSE(chain.blocks.empty());
  CHECK(chain.blocks[0].kind == "mmdit_double");
  CHECK(chain.blocks[0].quantizable_linears == 12);
}

TEST_CASE("a block's stored weight bytes: quantized width, but bf16 for a TransformerEngine full run") {
  BlockCost b;
  b.params = 1000;
  b.quantizable_params = 800;  // the rest (200) stays at the weight dtype, bf16 = 2 B
  TrainingSetup s;
  s.base_precision = "fp8-transformerengine";  // 1 B per quantizable parameter
  s.model_type = ModelType::Lora;
  CHECK(block_weight_bytes(b, s) == 800 * 1.0 + 200 * 2.0);
  s.model_type = ModelType::Full;  // TransformerEngine keeps bf16 storage for full runs (§2.2)
  CHECK(block_weight_bytes(b, s) == 1000 * 2.0);
  // and static_memory counts the same bytes per block
  BlockChain c;
  c.blocks = {b};
  CHECK(static_memory(c, s).weights_bytes == doctest::Approx(block_weight_bytes(b, s) + c.outside_params * 2.0));
}

TEST_CASE("TorchAO and fp8-native convert the modulation Linears too; Quanto as its name filter says, SDNQ not") {
  BlockCost b;
  b.params = 1000;
  b.quantizable_params = 800;
  b.quantizable_ffn_params = 500;
  b.modulation_params = 150;  // adaLN modulation Linears; the other 50 a convolution
  TrainingSetup s;
  s.model_type = ModelType::Lora;
  s.base_precision = "fp8-torchao";  // 1.01 B a weight (scales included), every nn.Linear
  CHECK(block_weight_bytes(b, s) == doctest::Approx(950 * 1.01 + 50 * 2.0));
  s.base_precision = "fp8-native";  // 1 B a weight, every nn.Linear
  CHECK(block_weight_bytes(b, s) == doctest::Approx(950 * 1.0 + 50 * 2.0));
  const double quanto = precision_info("int8-quanto").bytes_per_param, sdnq = precision_info("int8-sdnq").bytes_per_param;
  s.base_precision = "int8-quanto";  // by default (no names recorded) the modulation is kept in bf16
  CHECK(block_weight_bytes(b, s) == doctest::Approx(800 * quanto + 200 * 2.0));
  b.modulation_kept_by_quanto = false;  // a family without an exclude list: every Linear
  CHECK(block_weight_bytes(b, s) == doctest::Approx(950 * quanto + 50 * 2.0));
  b.modulation_kept_by_quanto = true;
  b.ffn_kept_by_quanto = true;  // Wan's `*ffn*`: the FFN's 500 stay bf16
  CHECK(block_weight_bytes(b, s) == doctest::Approx(300 * quanto + 700 * 2.0));
  CHECK(quantized_linear_params(b, s) == 300);
  s.base_precision = "int8-sdnq";  // the FFN filter is Quanto's alone; SDNQ's modulation counted at bf16
  CHECK(block_weight_bytes(b, s) == doctest::Approx(800 * sdnq + 200 * 2.0));
  CHECK(quantized_linear_params(b, s) == 800);
  b.modulation_kept_by_quanto = false;  // Quanto's filter does not reach SDNQ
  CHECK(block_weight_bytes(b, s) == doctest::Approx(800 * sdnq + 200 * 2.0));
  s.quantize_all_block_linears = true;  // a trainer's plan that converts the whole block (ai-toolkit, OneTrainer)
  CHECK(block_weight_bytes(b, s) == doctest::Approx(1000 * sdnq));
  s.quantize_all_block_linears = false;
  s.base_precision = "bf16";  // nothing converted
  CHECK(block_weight_bytes(b, s) == doctest::Approx(1000 * 2.0));
}

TEST_CASE("the quantizers' name filters read the family's module names") {
  // SD 3.5: AdaLayerNormZero's norm1.linear, the sd3 Quanto list (`*norm*`; `*ffn*` does not match `ff`)
  const Family& sd3 = find_family("sd3.5-medium");
  for (const BlockCost& b : analyze(sd3, default_setup(sd3)).blocks) {
    CHECK(b.modulation_kept_by_quanto);
    CHECK_FALSE(b.ffn_kept_by_quanto);
  }
  // Qwen-Image: no Quanto list; the 60 blocks' modulation (6d^2 a stream, fitted to the published
  // 20B) converted by Quanto, not by SDNQ
  const Family& qwen = find_family("qwen-image");
  TrainingSetup s = default_setup(qwen);
  s.base_precision = "int8-quanto";
  const BlockChain chain = analyze(qwen, s);
  REQUIRE_FALSE(chain.blocks.empty());
  for (const BlockCost& b : chain.blocks) {
    CHECK_FALSE(b.modulation_kept_by_quanto);
    CHECK(b.modulation_params > 0);
    CHECK(converted_params(b, s) == doctest::Approx(b.quantizable_params + b.modulation_params));
    s.base_precision = "int8-sdnq";
    CHECK(converted_params(b, s) == doctest::Approx(b.quantizable_params));
    s.base_precision = "int8-quanto";
  }
  // Wan: `*ffn*` matches blocks.0.ffn.net.0.proj; a gelu FFN of f = 8960 at d = 1536 (1.3B): 2 d f
  const Family& wan = find_family("wan2.1-1.3b");
  TrainingSetup w = default_setup(wan);
  w.base_precision = "int8-quanto";
  const BlockCost wb = analyze(wan, w).blocks.front();
  CHECK(wb.ffn_kept_by_quanto);
  CHECK(wb.quantizable_ffn_params == doctest::Approx(2.0 * 1536 * 8960));
  CHECK(converted_params(wb, w) == doctest::Approx(wb.quantizable_params - 2.0 * 1536 * 8960));
  CHECK(quantized_linears(wb, w) == doctest::Approx(wb.quantizable_linears - 2));
  w.base_precision = "int8-sdnq";  // SDNQ has no FFN filter
  CHECK(converted_params(wb, w) == doctest::Approx(wb.quantizable_params));
  // MageFlow's own Quanto list is not spelled out: its modulation counts as kept
  const Family& mage = find_family("mageflow");
  CHECK_FALSE(mage.quanto_excludes_known);
  for (const BlockCost& b : analyze(mage, default_setup(mage)).blocks) CHECK(b.modulation_kept_by_quanto);
}

TEST_CASE("the analyzer counts a block's modulation Linears apart: mmdit 6d^2 a stream, none in a U-Net") {
  const Family& fam = find_family("sd3.5-medium");
  const BlockChain chain = analyze(fam, default_setup(fam));
  REQUIRE_FALSE(chain.blocks.empty());
  const BlockCost& dbl = chain.blocks[0];
  REQUIRE(dbl.kind == "mmdit_double");
  const double d = 1536;  // SD 3.5 Medium's width, both streams: 6 d^2 each
  CHECK(dbl.modulation_params == doctest::Approx(12 * d * d));
  CHECK(dbl.params - dbl.quantizable_params == doctest::Approx(dbl.modulation_params));
  const Family& sdxl = find_family("sdxl");
  for (const BlockCost& blk : analyze(sdxl, default_setup(sdxl)).blocks) CHECK(blk.modulation_params == 0);
}

TEST_CASE("a weight-only fp8 Linear keeps its bf16 upcast weight: every converted weight, by side") {
  const Family& fam = find_family("sd3.5-medium");
  TrainingSetup s = default_setup(fam);
  s.base_precision = "fp8wo-torchao";  // TorchAO Float8WeightOnlyConfig, every nn.Linear, modulation included
  const BlockChain chain = analyze(fam, s);
  REQUIRE_FALSE(chain.blocks.empty());
  const BlockCost& b = chain.blocks[0];
  REQUIRE(b.kind == "mmdit_double");
  // d = 1536 both streams, GELU FFN of 4d: per stream q, k, v, out 4d^2 and the FFN 2 x 4d^2 = 8d^2;
  // the modulation 6d^2 a stream; bf16 copies, 2 B a weight
  const double d = 1536;
  CHECK(b.upcast_weight_attention_bytes == doctest::Approx(2 * 4 * d * d * 2));
  CHECK(b.upcast_weight_ffn_bytes == doctest::Approx(2 * 8 * d * d * 2));
  CHECK(b.upcast_weight_rest_bytes == doctest::Approx(2 * 6 * d * d * 2));
  CHECK(b.upcast_weight_attention_bytes + b.upcast_weight_ffn_bytes + b.upcast_weight_rest_bytes ==
        doctest::Approx(converted_params(b, s) * 2));
  for (const char* other : {"bf16", "int8-sdnq", "fp8-torchao"}) {  // a quantized matmul or none: no copy
    s.base_precision = other;
    for (const BlockCost& blk : analyze(fam, s).blocks)
      CHECK(blk.upcast_weight_attention_bytes + blk.upcast_weight_ffn_bytes + blk.upcast_weight_rest_bytes == 0);
  }
  s.base_precision = "fp8wo-torchao";
  s.ramtorch = true;  // TorchAO never converts RamTorch modules
  s.ramtorch_percent = 100;
  for (const BlockCost& blk : analyze(fam, s).blocks) CHECK(blk.upcast_weight_ffn_bytes == 0);
}

TEST_CASE("upcast weight copies live with the block's saved tensors, without fragmentation on them") {
  // four_blocks with 2 bytes of attention-side and 1 of FFN-side copies a block: none keeps all
  // four blocks' copies to the backward (44 above + 12), layer one recomputed block's (22 + 3)
  BlockChain chain = four_blocks();
  for (auto& b : chain.blocks) {
    b.upcast_weight_attention_bytes = 2;
    b.upcast_weight_ffn_bytes = 1;
  }
  CHECK(peak_of(chain, realized(chain, "none")) == doctest::Approx(44 + 12));
  CHECK(peak_of(chain, realized(chain, "layer")) == doctest::Approx(22 + 3));
  // the prediction names the copies' share of the peak and puts the allocator slack on the rest only
  const Coefficients coef;
  TrainingSetup setup;
  for (const auto& [schedule, copies, rest] : {std::tuple{"none", 12.0, 44.0}, std::tuple{"layer", 3.0, 22.0}}) {
    const Prediction p = predict(chain, realized(chain, schedule), setup, find_gpu("h100"), coef, 0);
    CHECK(p.memory.upcast_weight_bytes == doctest::Approx(copies));
    CHECK(p.memory.fragmentation_bytes == doctest::Approx(rest * coef.fragmentation));
    CHECK(peak_parts(p).activation_bytes == doctest::Approx(rest * (1 + coef.fragmentation)));
    CHECK(peak_parts(p).exact_bytes == doctest::Approx(copies));  // an anchor scales neither part of them
  }
  chain.blocks[0].measured = true;  // a profile's bytes already hold what the precision keeps
  CHECK(scaled(chain.blocks[0], coef).attention_bytes == doctest::Approx(6));
}

// ---- other trainers' memory rules (TrainingSetup fields a trainer's reader sets) -----------------

namespace {

// Blocks of `params` parameters (all quantizable Linear weights, `linears` of them), nothing outside.
BlockChain flat_chain(const std::vector<double>& params, double linears = 0) {
  BlockChain c;
  for (std::size_t i = 0; i < params.size(); ++i) {
    BlockCost b;
    b.index = static_cast<int>(i);
    b.params = b.quantizable_params = params[i];
    b.quantizable_linears = linears;
    c.blocks.push_back(b);
  }
  return c;
}

}  // namespace

TEST_CASE("the fused back pass holds one block's gradients, not the model's") {
  // a bf16 full fine-tune of blocks of 100, 200 and 300 parameters and 50 outside: gradients in the
  // weights' dtype (2 bytes) for all 650 parameters = 1300 bytes; fused (OneTrainer's
  // optimizer.fused_back_pass: each gradient applied and freed as it is produced) only the largest
  // block's 300 x 2 = 600 bytes. The optimizer state is the same either way.
  BlockChain c = flat_chain({100, 200, 300});
  c.outside_params = 50;
  TrainingSetup s;
  s.model_type = ModelType::Full;
  s.mixed_precision = "bf16";
  s.optimizer = "adamw";
  const StaticMemory plain = static_memory(c, s);
  CHECK(plain.gradient_bytes == doctest::Approx(1300));
  s.fused_back_pass = true;
  const StaticMemory fused = static_memory(c, s);
  CHECK(fused.gradient_bytes == doctest::Approx(600));
  CHECK(fused.optimizer_bytes == doctest::Approx(plain.optimizer_bytes));
}

TEST_CASE("OneTrainer's offload fraction 0.6 keeps 60% of the offloadable bytes on the host") {
  // 10 bf16 blocks of 1000 parameters = 2000 bytes each, 20000 in all. LayerOffloadStrategy:
  // target_loaded_bytes = 20000 x (1 - 0.6) = 8000 (four blocks, at least two), the other 12000 bytes
  // (60%) on the host. The static cache adds at most 10% (800) and at most 10 x its largest tensor:
  // with 100 Linears per block the largest is taken as 2 x 2000 / 100 = 40 bytes, so 400.
  const BlockChain c = flat_chain(std::vector<double>(10, 1000), 100);
  TrainingSetup s;
  s.mixed_precision = "bf16";
  s.layer_offload_fraction = 0.6;
  const StaticMemory m = static_memory(c, s);
  CHECK(m.streamed_weights_bytes == doctest::Approx(12000));
  CHECK(m.streamed_weights_bytes / 20000 == doctest::Approx(0.6));
  CHECK(m.weights_bytes == doctest::Approx(8000 + 400));
  // all on the host (fraction 1): two blocks stay loaded (4000 bytes), 16000 on the host
  s.layer_offload_fraction = 1.0;
  const StaticMemory all = static_memory(c, s);
  CHECK(all.streamed_weights_bytes == doctest::Approx(16000));
  CHECK(all.weights_bytes == doctest::Approx(4000 + 400));
}

TEST_CASE("FLOAT_32 stored weights under bf16 training: 4 bytes a weight, 2 an activation") {
  // OneTrainer's <part>.weight_dtype FLOAT_32 with train_dtype BFLOAT_16
  const BlockChain c = flat_chain({1000});
  TrainingSetup s;
  s.mixed_precision = "bf16";
  s.weight_storage_bytes = 4;
  CHECK(static_memory(c, s).weights_bytes == doctest::Approx(4000));
  CHECK(weight_dtype_bytes(s) == 2);  // activations follow the compute dtype
  s.model_type = ModelType::Full;
  CHECK(static_memory(c, s).gradient_bytes == doctest::Approx(4000));  // gradients in the weights' dtype
}

TEST_CASE("models a trainer keeps on the GPU are counted with the weights") {
  const BlockChain c = flat_chain({1000});
  TrainingSetup s;
  s.mixed_precision = "bf16";
  s.kept_model_bytes = 500;
  const StaticMemory m = static_memory(c, s);
  CHECK(m.weights_bytes == doctest::Approx(2000 + 500));
  CHECK(m.other_models_bytes == doctest::Approx(500));
}

TEST_CASE("a block's time by kernel class, from its FLOPs and the kernel table (H100, L40S)") {
  // 4 Linear calls of 2048^3 multiply-adds each: matmul FLOPs 2 x 4 x 2048^3 = 6.872e10, square-equivalent
  // edge cbrt(6.872e10 / (2 x 4)) = 2048, where the table's matmul_size share is 0.95
  BlockCost b;
  b.quantizable_linears = 4;
  b.params = b.quantizable_params = 1;  // (no quantized base: the time factor is 1)
  b.matmul_flops = 2 * 4 * 2048.0 * 2048.0 * 2048.0;
  b.attention_flops = 1e12;  // fused attention, 4096 keys per query, head dim 128
  b.attention_keys = 4096;
  b.head_dim = 128;
  b.saved_attention_bytes = 1e9;  // elementwise traffic 2 x 1 GB
  b.launches = 10;
  Coefficients coef;
  coef.launch_s = 1e-6;  // 10 us of host time: under the GPU work
  coef.backward_factor = 1;
  GpuCoefficients& h = coef.gpu["h100"];
  h.matmul_efficiency = 0.5;
  h.attention_efficiency = 0.8;
  h.elementwise_efficiency = 0.5;
  coef.gpu["l40s"] = h;
  TrainingSetup s;  // attention_mechanism "diffusers": SDPA, cuDNN on Hopper, FA2 on Ada
  const GpuSpec& h100 = find_gpu("h100");
  const double mm = 6.871947673e10 / (0.5 * 786.45e12 * 0.95);  // 0.18395 ms
  // cuDNN at 4k, head dim 128: forward 518, backward 499 TFLOP/s (the H100 is the curves' reference)
  const double attn = 1e12 / (0.8 * 518e12), attn_bwd = 2.5e12 / (0.8 * 499e12);
  const double ew = 2e9 / (0.5 * 3350e9);  // 1.194 ms
  CHECK(block_kernel_times(b, s, h100, coef).matmul_size_share == doctest::Approx(0.95));
  CHECK(block_forward_s(b, s, h100, coef) == doctest::Approx(mm + attn + ew).epsilon(1e-9));
  // LoRA backward: input gradients only (the forward's matmul time once), attention 2.5x its FLOPs at the
  // backward rate, elementwise twice the forward's bytes
  CHECK(block_backward_s(b, s, h100, coef) == doctest::Approx(mm + attn_bwd + 2 * ew).epsilon(1e-9));
  TrainingSetup full = s;
  full.model_type = ModelType::Full;  // weight gradients too: the matmuls twice
  CHECK(block_backward_s(b, full, h100, coef) == doctest::Approx(2 * mm + attn_bwd + 2 * ew).epsilon(1e-9));
  // FA3 on Hopper at 4k: 579 forward
  TrainingSetup fa3 = s;
  fa3.attention = "flash-attn-3-hub";
  CHECK(block_forward_s(b, fa3, h100, coef) == doctest::Approx(mm + 1e12 / (0.8 * 579e12) + ew).epsilon(1e-9));
  // L40S: ceiling 269.2; FA2 (SDPA's choice there, and FA3's stand-in) at 319 x 269.2 / 786.45; 864 GB/s
  const GpuSpec& l40s = find_gpu("l40s");
  const double l_mm = 6.871947673e10 / (0.5 * 269.2e12 * 0.95);
  const double l_attn = 1e12 / (0.8 * 319e12 * 269.2 / 786.45);
  const double l_ew = 2e9 / (0.5 * 864e9);
  CHECK(block_forward_s(b, s, l40s, coef) == doctest::Approx(l_mm + l_attn + l_ew).epsilon(1e-9));
  CHECK(block_forward_s(b, fa3, l40s, coef) == doctest::Approx(l_mm + l_attn + l_ew).epsilon(1e-9));
  // the host floor: 100,000 launches x 1 us = 0.1 s forward binds over the GPU work
  b.launches = 1e5;
  CHECK(block_forward_s(b, s, h100, coef) == doctest::Approx(0.1));
}

TEST_CASE("the kernel table: matmul size shares, attention by head dim and sequence, kernel choice") {
  const KernelTable* t = find_gpu("h100").kernels.get();
  REQUIRE(t != nullptr);
  // linear in log2(edge): 0.72 at 1024, 0.95 at 2048, 1 from 4096; below 1024 the first slope (0.23 per halving)
  CHECK(matmul_size_share(t, 1024) == doctest::Approx(0.72));
  CHECK(matmul_size_share(t, 1024 * std::sqrt(2.0)) == doctest::Approx(0.835));
  CHECK(matmul_size_share(t, 512) == doctest::Approx(0.49));
  CHECK(matmul_size_share(t, 16384) == doctest::Approx(1.0));
  CHECK(matmul_size_share(t, 1) == doctest::Approx(kMinMatmulShare));
  const GpuSpec& h100 = find_gpu("h100");
  // FA2 forward, head dim 128, between 4k (319) and 8k (333): log2 midpoint at 4096 x sqrt 2
  CHECK(attention_flops_per_s(h100, AttentionKernel::Fa2, 4096 * std::sqrt(2.0), 128, false) ==
        doctest::Approx(326e12));
  // head dim 64 given at the ends (282 at 512, 324 at 16k): at 2k (0.4 of the way in log2) the 128 curve
  // (298) times its ratio 282/191 + 0.4 x (324/335 - 282/191)
  const double r = 282.0 / 191 + 0.4 * (324.0 / 335 - 282.0 / 191);
  CHECK(attention_flops_per_s(h100, AttentionKernel::Fa2, 2048, 64, false) == doctest::Approx(298e12 * r));
  // past 16k the 16k figure; unfused keeps its 8k figure where the paper ran out of memory
  CHECK(attention_flops_per_s(h100, AttentionKernel::Fa3, 30000, 128, true) == doctest::Approx(561e12));
  CHECK(attention_flops_per_s(h100, AttentionKernel::Unfused, 16384, 128, false) == doctest::Approx(35e12));
  const GpuSpec& l40s = find_gpu("l40s");
  CHECK(attention_kernel("diffusers", h100) == AttentionKernel::Cudnn);
  CHECK(attention_kernel("diffusers", l40s) == AttentionKernel::Fa2);
  CHECK(attention_kernel("flash-attn-3-hub", h100) == AttentionKernel::Fa3);
  CHECK(attention_kernel("flash-attn-3-varlen-hub", l40s) == AttentionKernel::Fa2);
  CHECK(attention_kernel("flash-attn-varlen-hub", h100) == AttentionKernel::Fa2);
  CHECK(attention_kernel("native-math", h100) == AttentionKernel::Unfused);
  CHECK(attention_kernel("cudnn", l40s) == AttentionKernel::Cudnn);
  // FlashAttention-3 runs on Hopper only; every other mechanism runs anywhere
  CHECK(attention_runs_on("flash-attn-3-hub", h100));
  CHECK(!attention_runs_on("flash-attn-3-hub", l40s));
  CHECK(!attention_runs_on("fa3", find_gpu("4090")));
  CHECK(attention_runs_on("flash-attn-varlen-hub", l40s));
  CHECK(attention_runs_on("diffusers", l40s));
}

TEST_CASE("attention FLOPs are per sample: a batch of two costs twice one sample, not four times") {
  const Family& fam = find_family("sd3.5-medium");
  TrainingSetup one = default_setup(fam);
  one.batch = 1;
  TrainingSetup two = one;
  two.batch = 2;
  const BlockChain a = analyze(fam, one), b = analyze(fam, two);
  CHECK(b.blocks[0].attention_flops == doctest::Approx(2 * a.blocks[0].attention_flops));
  CHECK(b.blocks[0].attention_keys == doctest::Approx(a.blocks[0].attention_keys));
  CHECK(a.blocks[0].attention_keys == doctest::Approx(a.tokens_image + a.tokens_text));
}

TEST_CASE("block swap by list moves the trailing blocks of each list, not the chain's last N") {
  // two lists as FLUX-style models have them: 3 "double" blocks of 2000 params, then 6 "single" blocks
  // of 1000; bf16 weights (2 B), 100 params outside the blocks
  BlockChain chain;
  for (int i = 0; i < 9; ++i) {
    BlockCost b;
    b.list = i < 3 ? "double" : "single";
    b.index = i < 3 ? i : i - 3;
    b.params = i < 3 ? 2000 : 1000;
    chain.blocks.push_back(b);
  }
  chain.outside_params = 100;
  TrainingSetup last_n;
  last_n.blocks_to_swap = 3;  // the chain's last 3: three single blocks, 3000 params on the host
  TrainingSetup per_list = last_n;
  per_list.blocks_to_swap_per_list = {1, 2};  // the last double block and the last two single blocks: 4000
  const StaticMemory a = static_memory(chain, last_n), b = static_memory(chain, per_list);
  CHECK(a.streamed_weights_bytes == doctest::Approx(3000 * 2));
  CHECK(b.streamed_weights_bytes == doctest::Approx(4000 * 2));
  // resident: what is not streamed, plus the streaming buffers of the largest streamed block
  // (a double block's 4000 B where one is streamed, a single block's 2000 B where not)
  CHECK(a.weights_bytes == doctest::Approx((12000 + 100 - 3000) * 2 + kStreamedBlockBuffers * 2000));
  CHECK(b.weights_bytes == doctest::Approx((12000 + 100 - 4000) * 2 + kStreamedBlockBuffers * 4000));
}
