// `segadvise validate --gpus N` on a CPU: N processes joined by LibTorch's c10d Gloo backend over
// 127.0.0.1 (a FileStore rendezvous), training the family's block stack sharded as DDP, ZeRO-1/2/3
// and FSDP2 shard it, measured against the cost model's per-rank formulas
// (costmodel/distributed.hpp). No LibTorch in this header.
//
// What each rank does (profiler/src/distributed.cpp):
// - every rank builds the same stack (same seed, as after the engine's broadcast of the initial
//   weights) and trains it on its own micro-batch (the input drawn from seed + rank);
// - a unit is one block: its base weights (2-D/4-D, constants shared between blocks excluded) and
//   its trainable tensors, flattened in a fixed order; a sharded quantity gives rank r the elements
//   [r*s, (r+1)*s) of each unit with s = ceil(elements / N) (the last rank's tail padded);
// - ddp: full replicas, gradients copied into one persistent flat bucket, all-reduced;
//   zero1: gradients reduce-scattered, optimizer state sharded, updated shards all-gathered;
//   zero2: + gradients sharded (each unit's full gradient dropped once reduce-scattered);
//   zero3 / fsdp2: + weights sharded: the rank keeps its shard and all-gathers a unit before its
//   forward and again before its backward, prefetching the next unit (two units in flight);
// - forward and backward run unit by unit (backward of block i from the gradient of block i+1's
//   input), so each unit's gradient is reduced as soon as it exists, as the engines' hooks do;
// - reductions sum the ranks' chunks in rank order (0, 1, …) with point-to-point sends, so the
//   result is bit-identical to a single process accumulating the N micro-batches in that order;
// - the optimizer is LibTorch's AdamW (two moments in the parameter dtype) on what the rank owns.
//
// Memory is an account the runner keeps of the tensors the engine would hold on the device: weights
// (shards or replicas), gradients (shards, replicas, or a unit's full gradient until its reduction),
// optimizer state (measured from AdamW's state tensors), gathered units, and communication buffers
// (the DDP bucket, a reduction's receive buffer). The process itself keeps a full replica of every
// block to compute with: for sharded weights the elements a rank does not own are zeroed before each
// step and the gathered unit is copied in, so a wrong all-gather changes the gradients. Activations
// are not in the account (they are the single-GPU validate's subject and are not sharded).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/distributed.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise::profiler {

struct DistributedOptions {
  int world = 2;
  int rank = 0;
  std::string store_path;  // FileStore rendezvous file (a new path in a private directory)
  Strategy strategy = Strategy::ddp;
  int steps = 2;           // optimizer steps; the account and the bytes are those of the last
  int blocks = 0;          // first N blocks (0: all)
  double learning_rate = 1e-4;
  uint64_t seed = 1234;
  bool check_gradients = true;  // rank 0 compares the reduced gradients of step 1 with one process
  int timeout_s = 300;     // collectives and the rendezvous give up after this
};

// Payload bytes handed to collectives (the full tensor a collective produces or reduces, summed over
// calls), as costmodel CommVolume counts them.
struct CollectiveBytes {
  double allgather_bytes = 0;
  double reduce_scatter_bytes = 0;
  double allreduce_bytes = 0;
  int allgather_calls = 0, reduce_scatter_calls = 0, allreduce_calls = 0;
};

// The runner's account of what the rank holds, at its peak.
struct HeldBytes {
  double weights_bytes = 0, grads_bytes = 0, optimizer_bytes = 0, gathered_bytes = 0, buffers_bytes = 0;
  double total_bytes() const { return weights_bytes + grads_bytes + optimizer_bytes + gathered_bytes + buffers_bytes; }
};

struct RankRun {
  int rank = 0, world = 1;
  Strategy strategy = Strategy::ddp;
  HeldBytes peak;           // the breakdown at the peak of the last step
  CollectiveBytes comm;     // of the last step
  std::vector<double> step_times_s;
  double step_s = 0;        // the last step
  // rank 0, step 1: reduced gradients (reassembled from the shards) against one process training
  // the N micro-batches in rank order
  bool gradients_checked = false;
  double grad_max_abs_diff = 0, grad_max_abs = 0;
  int grad_tensors = 0;
  bool grad_bit_equal = false;
};

// One rank's run (the hidden `segadvise-torch _rank` subcommand). Throws InputError on a setup it
// cannot run (mixed block kinds, skips) and std::runtime_error when a peer fails.
RankRun run_rank(const Family& fam, const TrainingSetup& setup, const DistributedOptions& opt);

nlohmann::json to_json(const RankRun& r);
RankRun rank_run_from_json(const nlohmann::json& j);

// Starts `world` processes `exe args… --rank r --world N --store DIR/store --result DIR/rank-r.json`,
// waits for all, and returns their results in rank order. When one fails, the others are stopped:
// a rank that refused its input (exit 2) gives InputError with its message, any other failure
// std::runtime_error with its output's tail. The temporary directory is removed.
std::vector<RankRun> launch_ranks(const std::string& exe, const std::vector<std::string>& args, int world,
                                  int timeout_s);

// What the runner keeps, stated for the cost model from the static chain (not from the tensors):
// base weights and trainable parameters (LoRA adapters, or the base weights for full) in the run's
// dtype, gradients alike, AdamW's two moments alike, one block as the largest unit, and for DDP a
// bucket the size of the gradients (gradient_as_bucket_view off).
RankStateInput rank_state_input(const BlockChain& chain, const TrainingSetup& setup, Strategy strategy, int world);

}  // namespace segadvise::profiler
