// The step time, component by component, on a card whose facts make every figure checkable on paper:
// compute (matmuls and elementwise traffic), the host floor, the recompute pass with the checkpoint
// machinery's host time, weights streamed over PCIe, activations parked on the host, the optimizer's
// update and the per-step overhead. (Attention by kernel, sequence length and head dim:
// test_costmodel.cpp, "a block's time by kernel class".)
#include <doctest/doctest.h>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"

using namespace segadvise;

namespace {

// A card with a round practical matmul ceiling (500 TFLOP/s), 1 TB/s of memory bandwidth and a
// 32 GB/s link, no kernel table (every matmul size reaches the ceiling's full share).
GpuSpec toy_card() {
  GpuSpec g;
  g.id = "toy";
  g.name = "toy card";
  g.bf16_flops_per_s = 1e15;
  g.matmul_flops_per_s = 5e14;
  g.mem_bytes_per_s = 1e12;
  g.pcie_bytes_per_s = 32e9;
  g.total_bytes = 80 * kGiB;
  return g;
}

Coefficients toy_coefficients() {
  Coefficients c;
  GpuCoefficients& g = c.gpu["toy"];
  g.matmul_efficiency = 0.5;       // 250 TFLOP/s reached
  g.elementwise_efficiency = 0.5;  // 500 GB/s reached
  g.attention_efficiency = 1;
  g.overhead_s = 0.1;
  g.pcie_efficiency = 0.5;  // 16 GB/s reached
  c.launch_s = 10e-6;
  c.backward_factor = 1;
  c.backward_host_ratio = 2;
  c.checkpoint_host_ratio = 2;
  c.stream_overlap = 0.25;
  c.offload_overlap = 0;
  c.fragmentation = 0;
  return c;
}

// Four blocks of 1e9 bf16 parameters (2e9 bytes each), 1e12 matmul FLOPs a forward over 4 Linear
// calls, 1e9 saved bytes, a 1e8-byte boundary, 100 launches, a LoRA of 1e6 parameters a block.
BlockChain four_blocks(double launches) {
  BlockChain chain;
  for (int i = 0; i < 4; ++i) {
    BlockCost b;
    b.list = "blocks";
    b.index = b.list_position = b.global_position = i;
    b.kind = "dit";
    b.params = 1e9;
    b.quantizable_params = 1e9;
    b.quantizable_linears = 4;
    b.matmul_flops = 1e12;
    b.saved_attention_bytes = 1e9;
    b.boundary_bytes = 1e8;
    b.launches = launches;
    b.lora_params = 1e6;
    chain.blocks.push_back(b);
  }
  return chain;
}

Plan every_block(BlockMode mode, bool to_host = false) {
  Plan p;
  for (int i = 0; i < 4; ++i) p.segments.push_back({i, i + 1, mode, to_host});
  return p;
}

}  // namespace

TEST_CASE("compute: a block's forward and backward from its FLOPs and bytes at the card's reached rates") {
  const GpuSpec card = toy_card();
  const Coefficients coef = toy_coefficients();
  const TrainingSetup lora;  // LoRA on a bf16 base
  const BlockCost b = four_blocks(100).blocks[0];
  // matmuls 1e12 / 250e12 = 4 ms; elementwise 2 x 1e9 B / 500e9 B/s = 4 ms; host 100 x 10 us = 1 ms
  CHECK(block_forward_s(b, lora, card, coef) == doctest::Approx(8e-3));
  // backward: input gradients once (4 ms) and twice the elementwise bytes (8 ms); host 2 x 1 ms under it
  CHECK(block_backward_s(b, lora, card, coef) == doctest::Approx(12e-3));
  TrainingSetup full;
  full.model_type = ModelType::Full;  // weight gradients as well: the matmuls twice
  CHECK(block_backward_s(b, full, card, coef) == doctest::Approx(16e-3));
}

TEST_CASE("recompute: the forward again, never under the checkpoint machinery's host time") {
  const GpuSpec card = toy_card();
  const Coefficients coef = toy_coefficients();
  const TrainingSetup lora;
  // kernel-bound: (1 + 2) x 1 ms of host time is under the 8 ms of kernels, the recompute is the forward
  const BlockCost fast = four_blocks(100).blocks[0];
  CHECK(block_recompute_s(fast, lora, card, coef) == doctest::Approx(8e-3));
  // host-bound: 2,000 launches are 20 ms of host time a forward; recomputing under the checkpoint's
  // saved-tensor hooks costs (1 + 2) x 20 ms = 60 ms, the forward itself 20 ms
  const BlockCost slow = four_blocks(2000).blocks[0];
  CHECK(block_forward_s(slow, lora, card, coef) == doctest::Approx(20e-3));
  CHECK(block_recompute_s(slow, lora, card, coef) == doctest::Approx(60e-3));
  // in a step: `layer` recomputes the 4 blocks, `none` nothing
  const BlockChain chain = four_blocks(2000);
  const Prediction none = predict(chain, every_block(BlockMode::Keep), lora, card, coef, 0);
  const Prediction layer = predict(chain, every_block(BlockMode::Checkpoint), lora, card, coef, 0);
  CHECK(none.time.recompute_s == doctest::Approx(0));
  CHECK(layer.time.recompute_s == doctest::Approx(4 * 60e-3));
  CHECK(layer.step_time_s - none.step_time_s == doctest::Approx(4 * 60e-3));
}

TEST_CASE("the step: forward, backward, optimizer update and per-step overhead add up") {
  const GpuSpec card = toy_card();
  const Coefficients coef = toy_coefficients();
  TrainingSetup lora;
  lora.optimizer = "adamw_bf16";  // 20 bytes read and written per parameter a step
  const Prediction p = predict(four_blocks(100), every_block(BlockMode::Keep), lora, card, coef, 0);
  CHECK(p.time.forward_s == doctest::Approx(4 * 8e-3));
  CHECK(p.time.backward_s == doctest::Approx(4 * 12e-3));
  // 4e6 LoRA parameters x 20 B / 1 TB/s = 80 us
  CHECK(p.time.optimizer_s == doctest::Approx(4e6 * 20 / 1e12));
  CHECK(p.time.overhead_s == doctest::Approx(0.1));
  CHECK(p.time.transfer_s == doctest::Approx(0));
  CHECK(p.step_time_s == doctest::Approx(0.032 + 0.048 + 8e-5 + 0.1));
}

TEST_CASE("streamed weights: every block's bytes cross the link on forward, backward and the recompute") {
  const GpuSpec card = toy_card();
  const Coefficients coef = toy_coefficients();
  TrainingSetup ram;
  ram.ramtorch = true;
  ram.ramtorch_percent = 100;
  // 4 blocks x 2e9 B = 8e9 B on the host; 16 GB/s reached; a quarter hidden behind compute
  const Prediction none = predict(four_blocks(100), every_block(BlockMode::Keep), ram, card, coef, 0);
  CHECK(none.memory.streamed_weights_bytes == doctest::Approx(8e9));
  CHECK(none.time.transfer_s == doctest::Approx(8e9 * 2 / 16e9 * 0.75));  // 0.75 s: forward and backward
  const Prediction layer = predict(four_blocks(100), every_block(BlockMode::Checkpoint), ram, card, coef, 0);
  CHECK(layer.time.transfer_s == doctest::Approx(8e9 * 3 / 16e9 * 0.75));  // 1.125 s: and the recompute
}

TEST_CASE("activations on the host: a checkpoint boundary goes out in forward and comes back for backward") {
  const GpuSpec card = toy_card();
  const Coefficients coef = toy_coefficients();
  const TrainingSetup lora;
  const Prediction p = predict(four_blocks(100), every_block(BlockMode::Checkpoint, true), lora, card, coef, 0);
  // 4 boundaries of 1e8 B, out and back: 8e8 B at 16 GB/s, none of it hidden (offload_overlap 0)
  CHECK(p.time.transfer_s == doctest::Approx(2 * 4e8 / 16e9));
}
