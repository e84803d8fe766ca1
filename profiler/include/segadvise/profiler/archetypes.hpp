// Block archetypes: one LibTorch module per block kind of families/FORMAT.md, built from a
// BlockListSpec at a token shape, with frozen random base weights in the run's dtype and trainable
// LoRA adapters where the trainer puts them (lora_targets, rank, dropout 0.1 as SimpleTuner's
// default). What each archetype runs, and so what autograd saves, is written next to its builder in
// archetypes.cpp; the static analyzer (families/src/analyzer.cpp) describes the same saves.
//
// A block is a sequence of parts, each tagged with the side its saved tensors belong to
// (attention, FFN, rest). The checkpoint executor runs FFN parts under their own checkpoint for
// the -ffn backends; the profiler attributes saved tensors to sides by the part that saves them.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise::profiler {

enum class Side { Attention = 0, Ffn = 1, Rest = 2 };
const char* side_name(Side s);

// Named tensors flowing between parts and blocks. Boundary slots ("img", "txt", "audio",
// "skip.N") cross block boundaries; scratch slots (starting with '_') live inside one block.
using State = std::map<std::string, torch::Tensor>;
bool is_scratch(const std::string& slot);
State boundary_of(const State& s);
// Bytes of the distinct storages behind the state's boundary tensors.
double state_bytes(const State& s);

struct Part {
  Side side = Side::Rest;
  std::string name;
  std::function<State(const State&)> fn;  // returns only the slots it writes
};

// Token shape of one block list (per sample; batch separately).
struct BlockShape {
  int batch = 1;
  int image_tokens = 0;  // tokens of this list's stream (token_scale applied)
  int text_tokens = 0;
  int audio_tokens = 0;
  int grid_h = 0, grid_w = 0;  // spatial grid of the stream (frames folded into grid_h)
  int tokens() const { return image_tokens; }
};

// Which projections carry adapters (same rules as the static analyzer).
struct LoraSetup {
  bool full = false;  // full fine-tune: base weights train, no adapters
  int rank = 16;
  double alpha = 16;
  double dropout = 0.1;
  bool attn = true, text = false, ffn = false;
};

class Block {
 public:
  std::string kind, list;
  std::vector<Part> parts;
  std::vector<torch::Tensor> frozen;     // base weights and constants (text context, modulation)
  std::vector<torch::Tensor> trainable;  // LoRA adapters (or the base weights for full)
  State forward(const State& in) const;  // all parts in order
  double frozen_params() const;
  double trainable_params() const;
};

struct BuildOptions {
  torch::Dtype dtype = torch::kBFloat16;
  torch::Device device = torch::kCPU;
  LoraSetup lora;
  uint64_t seed = 1234;
  // constants a network shares between its blocks (text context, timestep embedding); a stack of
  // blocks built with the same map holds one copy, as the real model does
  std::shared_ptr<std::map<std::string, torch::Tensor>> shared;
};

BlockShape block_shape(const Family& fam, const BlockListSpec& spec, const TrainingSetup& setup);
// Same shape with the stream's grid scaled so it has about `scale` of the tokens (extrapolation).
BlockShape scaled_shape(const BlockShape& s, double scale);
LoraSetup lora_setup(const Family& fam, const TrainingSetup& setup);

Block make_block(const BlockListSpec& spec, const BlockShape& shape, const BuildOptions& opt);
// A fresh input state for the block: boundary tensors that require grad (non-leaf, as inside a
// network), carrying `skips_in` skip tensors when the list pops them.
State make_input(const BlockListSpec& spec, const BlockShape& shape, const BuildOptions& opt, int skips_in = 0);

// Which attention kernel ran ("segadvise flash-style (CPU …)", "flash (…)", …).
const std::string& attention_backend_name();

// The side currently running (the profiler's saved-tensor accounting and attention offload read it).
Side current_side();
void set_current_side(Side s);
// True while a part runs as a checkpoint's recompute (attention offload skips it).
bool in_recompute();
void set_in_recompute(bool v);

}  // namespace segadvise::profiler
