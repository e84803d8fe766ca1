// Per-rank model state and communication (costmodel/distributed.hpp). Every figure is derived by
// hand in the comment next to it.
#include <doctest/doctest.h>

#include "segadvise/costmodel/distributed.hpp"
#include "test_util.hpp"

using namespace segadvise;

namespace {

constexpr double kGB = 1e9;

// ZeRO paper §5 / Fig. 1: Ψ = 7.5B parameters, mixed-precision Adam: 2Ψ bf16 weights, 2Ψ bf16
// gradients, K = 12 bytes/param of fp32 master + m + v, N = 64 ranks
RankStateInput zero_paper(Strategy s) {
  RankStateInput in;
  in.world = 64;
  in.strategy = s;
  const double psi = 7.5e9;
  in.trainable_weight_bytes = 2 * psi;
  in.grad_bytes = 2 * psi;
  in.optimizer_state_bytes = 12 * psi;
  return in;
}

// A LoRA on a 20 GB bf16 base over 8 ranks: 0.1 GB fp32 adapters (FSDP2 upcasts trainable
// parameters), 0.1 GB fp32 grads, 0.2 GB AdamW moments; 1 GB root (embedders, head) and 0.5 GB per
// block; everything is gathered in bf16: 20 GB base + 0.05 GB adapters; gradients reduced in bf16.
RankStateInput lora_8(Strategy s) {
  RankStateInput in;
  in.world = 8;
  in.strategy = s;
  in.frozen_weight_bytes = 20 * kGB;
  in.trainable_weight_bytes = 0.1 * kGB;
  in.grad_bytes = 0.1 * kGB;
  in.optimizer_state_bytes = 0.2 * kGB;
  in.gathered_weight_bytes = 20.05 * kGB;
  in.root_weight_bytes = 1 * kGB;
  in.largest_unit_weight_bytes = 0.5 * kGB;
  in.reduce_grad_bytes = 0.05 * kGB;
  return in;
}

}  // namespace

TEST_CASE("model state per rank reproduces the ZeRO paper's 7.5B example on 64 ranks") {
  // DDP 16Ψ = 120 GB; ZeRO-1 4Ψ + 12Ψ/64 = 30 + 1.40625 = 31.40625 GB;
  // ZeRO-2 2Ψ + 14Ψ/64 = 15 + 1.640625 = 16.640625 GB; ZeRO-3 16Ψ/64 = 1.875 GB
  CHECK(rank_state(zero_paper(Strategy::ddp)).total_bytes() == doctest::Approx(120 * kGB));
  CHECK(rank_state(zero_paper(Strategy::zero1)).total_bytes() == doctest::Approx(31.40625 * kGB));
  CHECK(rank_state(zero_paper(Strategy::zero2)).total_bytes() == doctest::Approx(16.640625 * kGB));
  CHECK(rank_state(zero_paper(Strategy::zero3)).total_bytes() == doctest::Approx(1.875 * kGB));
  CHECK(rank_state(zero_paper(Strategy::zero3)).shard_ranks == 64);
}

TEST_CASE("one GPU and DDP at world 1 hold the whole replica and no buckets") {
  RankStateInput in = zero_paper(Strategy::ddp);
  in.world = 1;
  in.bucket_bytes = 15 * kGB;
  const RankState r = rank_state(in);
  CHECK(r.buckets_bytes == 0);  // accelerate does not wrap one process in DDP
  CHECK(r.total_bytes() == doctest::Approx(120 * kGB));
  in.world = 2;
  CHECK(rank_state(in).buckets_bytes == doctest::Approx(15 * kGB));
  CHECK(comm_per_step(in).allreduce_bytes == doctest::Approx(15 * kGB));  // 2Ψ gradients once per step
}

TEST_CASE("uneven shards: the busiest rank holds ceil(elements / N) elements") {
  CHECK(shard_bytes(10, 4) == 3);         // 10 bytes over 4 ranks: ceil(2.5) = 3
  CHECK(shard_bytes(10, 4, 4) == 4);      // 3 fp32 elements (ceil 10/4) over 4 ranks: 1 element = 4 B
  CHECK(shard_bytes(100, 3, 2) == 34);    // 50 bf16 elements over 3: ceil(16.7) = 17 elements = 34 B
  CHECK(shard_bytes(96, 3, 2) == 32);     // even: 48 / 3 = 16 elements
  CHECK(shard_bytes(96, 1, 2) == 96);
}

TEST_CASE("FSDP2 LoRA shards the frozen base and keeps two units plus the root unsharded") {
  const RankState r = rank_state(lora_8(Strategy::fsdp2));
  CHECK(r.weights_bytes == doctest::Approx(20.1 * kGB / 8));          // 2.5125 GB
  CHECK(r.grads_bytes == doctest::Approx(0.0125 * kGB));              // 0.1 / 8
  CHECK(r.optimizer_bytes == doctest::Approx(0.025 * kGB));           // 0.2 / 8
  CHECK(r.gathered_in_flight_bytes == doctest::Approx(2 * kGB));      // 2 x 0.5 + 1 root
  CHECK(r.buckets_bytes == 0);
  RankStateInput keep = lora_8(Strategy::fsdp2);
  keep.reshard_after_forward = false;  // every unit stays gathered until backward: 20.05 GB
  CHECK(rank_state(keep).gathered_in_flight_bytes == doctest::Approx(20.05 * kGB));
  keep.grad_accumulation = 2;  // + full-size accumulated bf16 gradients, 0.05 GB
  CHECK(rank_state(keep).gathered_in_flight_bytes == doctest::Approx(20.1 * kGB));
}

TEST_CASE("FSDP2 LoRA all-gathers the base twice where DDP all-reduces only adapter gradients") {
  const CommVolume f = comm_per_step(lora_8(Strategy::fsdp2));
  // root once (1 GB) + the 19.05 GB of blocks in forward and again in backward = 39.1 GB
  CHECK(f.allgather_bytes == doctest::Approx(39.1 * kGB));
  CHECK(f.reduce_scatter_bytes == doctest::Approx(0.05 * kGB));
  CHECK(f.allreduce_bytes == 0);
  const CommVolume d = comm_per_step(lora_8(Strategy::ddp));
  CHECK(d.allreduce_bytes == doctest::Approx(0.05 * kGB));
  CHECK(d.allgather_bytes == 0);
  // wire on NVLink 4, 450 GB/s per direction at 0.8: 360 GB/s
  LinkSpec nvlink;
  nvlink.intra_node_bytes_per_s = 450 * kGB;
  nvlink.gpus_per_node = 8;
  nvlink.efficiency = 0.8;
  const CommCost fc = comm_cost(f, nvlink, 1);
  CHECK(fc.wire_bytes == doctest::Approx(39.15 * kGB * 7 / 8));  // 34.25625 GB
  CHECK(fc.dp_time_s == doctest::Approx(34.25625 / 360));         // 0.09516 s
  const CommCost dc = comm_cost(d, nvlink, 1);
  CHECK(dc.wire_bytes == doctest::Approx(0.05 * kGB * 2 * 7 / 8));  // 0.0875 GB
  CHECK(dc.dp_time_s == doctest::Approx(0.0875 / 360));
}

TEST_CASE("ZeRO volumes: stages 1-2 move 2Ψ like DDP, stage 3 moves 3Ψ") {
  // Ψ bf16 = 15 GB: ZeRO-1/2 reduce-scatter 15 + all-gather 15 = 30 = DDP's all-reduce payload 15 x 2
  const CommVolume z1 = comm_per_step(zero_paper(Strategy::zero1));
  CHECK(z1.reduce_scatter_bytes + z1.allgather_bytes == doctest::Approx(30 * kGB));
  // ZeRO-3: gather forward + backward (30) + reduce-scatter (15) = 45 = 1.5 x 30
  const CommVolume z3 = comm_per_step(zero_paper(Strategy::zero3));
  CHECK(z3.allgather_bytes + z3.reduce_scatter_bytes == doctest::Approx(45 * kGB));
  // with 4 micro-steps ZeRO-2 reduces every micro-step (60) and ZeRO-1 once (15)
  RankStateInput ga = zero_paper(Strategy::zero2);
  ga.grad_accumulation = 4;
  CHECK(comm_per_step(ga).reduce_scatter_bytes == doctest::Approx(60 * kGB));
  ga.strategy = Strategy::zero1;
  CHECK(comm_per_step(ga).reduce_scatter_bytes == doctest::Approx(15 * kGB));
}

TEST_CASE("offload moves shards to the host") {
  // ZeRO-2 offload_optimizer: 12Ψ/64 = 1.40625 GB optimizer and 2Ψ/64 = 0.234375 GB grads on host;
  // the GPU keeps 2Ψ = 15 GB of weights
  RankStateInput z2 = zero_paper(Strategy::zero2);
  z2.offload_optimizer = true;
  const RankState r = rank_state(z2);
  CHECK(r.total_bytes() == doctest::Approx(15 * kGB));
  CHECK(r.host_bytes == doctest::Approx(1.640625 * kGB));
  // PCIe: gradient shard out (0.234375) + updated bf16 param shard in (0.234375)
  CHECK(comm_per_step(z2).host_transfer_bytes == doctest::Approx(0.46875 * kGB));
  // offload_param is ZeRO-3 only: ignored at stage 2
  z2.offload_param = true;
  CHECK(rank_state(z2).weights_bytes == doctest::Approx(15 * kGB));
  // FSDP2 CPU offload: weights, grads, optimizer shards all on host; the GPU keeps the working set
  RankStateInput f = lora_8(Strategy::fsdp2);
  f.fsdp_cpu_offload = true;
  const RankState fr = rank_state(f);
  CHECK(fr.total_bytes() == doctest::Approx(2 * kGB));
  CHECK(fr.host_bytes == doctest::Approx((2.5125 + 0.0125 + 0.025) * kGB));
}

TEST_CASE("context parallel volumes: Ulysses all-to-all and ring all-gather") {
  RankStateInput in;
  in.world = 8;
  in.strategy = Strategy::ddp;
  in.context_parallel = 2;
  in.cp_attention_layers = 48;
  in.cp_sequence_bytes = 0.1 * kGB;
  in.cp_forward_passes = 2;  // checkpointed: forward again in backward
  in.cp_comm = CpComm::alltoall;
  // 48 layers x 4 tensors x 0.05 GB local x (2 forwards + 1 backward) = 28.8 GB
  const CommVolume u = comm_per_step(in);
  CHECK(u.alltoall_bytes == doctest::Approx(28.8 * kGB));
  CHECK(u.cp_ranks == 2);
  in.cp_comm = CpComm::allgather;
  // 48 x 0.1 GB x (2 x 2 + 4) = 38.4 GB
  CHECK(comm_per_step(in).cp_allgather_bytes == doctest::Approx(38.4 * kGB));
  LinkSpec link;
  link.intra_node_bytes_per_s = 100 * kGB;
  link.gpus_per_node = 8;
  link.efficiency = 1;
  // ring over 2: 38.4 x 1/2 = 19.2 GB at 100 GB/s = 0.192 s
  CHECK(comm_cost(comm_per_step(in), link, 1).cp_time_s == doctest::Approx(0.192));
}

TEST_CASE("a data-parallel group over two nodes is bound by the network") {
  RankStateInput in = zero_paper(Strategy::ddp);
  in.world = 16;
  LinkSpec link;
  link.intra_node_bytes_per_s = 450 * kGB;
  link.inter_node_bytes_per_s = 50 * kGB;
  link.gpus_per_node = 8;
  link.efficiency = 1;
  // all-reduce of 15 GB over 16: 15 x 2 x 15/16 = 28.125 GB at 50 GB/s = 0.5625 s
  CHECK(comm_cost(comm_per_step(in), link, 2).dp_time_s == doctest::Approx(0.5625));
  link.inter_node_bytes_per_s = 0;
  CHECK(test::input_error_of([&] { comm_cost(comm_per_step(in), link, 2); }).find("bandwidth is 0") !=
        std::string::npos);
}

TEST_CASE("bad distributed input names the field and value") {
  RankStateInput in;
  in.world = 8;
  in.context_parallel = 3;
  CHECK(test::input_error_of([&] { rank_state(in); }).find("context_parallel is 3") != std::string::npos);
  CHECK(test::input_error_of([] { parse_strategy("fsdp", "--strategy"); }) ==
        "--strategy is 'fsdp'; expected one of single, ddp, fsdp2, zero1, zero2, zero3");
  CHECK(parse_cp_comm("alltoall", "x") == CpComm::alltoall);
  CHECK(zero_stage(Strategy::fsdp2) == 3);
}
