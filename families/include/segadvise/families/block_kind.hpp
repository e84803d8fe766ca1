// Block kinds (families/FORMAT.md "Block kinds"), parsed once by the family loader and described
// once here, for both the analyzer (families/src/analyzer.cpp) and the LibTorch archetypes
// (profiler/src/archetypes.cpp).
#pragma once

#include <string>
#include <vector>

namespace segadvise {

enum class BlockKind { DitCross, DitSelf, MmditDouble, SingleStream, LinearDit, AudioVideoDit, UnetRes, UnetAttn };

struct BlockKindTraits {
  BlockKind kind;
  const char* name;       // as family files write it (and as JSON output prints it)
  bool attention;         // has attention, so `heads` is required, attention can be offloaded and an
                          // FFN boundary exists; false: a ResNet block
  bool joint_tokens;      // image and text tokens run as one sequence (MMDiT, single stream)
  bool text_stream;       // a text hidden state (text_hidden wide) flows beside the image one (MMDiT)
  bool audio_stream;      // an audio stream (text_hidden wide) flows beside the video (LTX-2)
  bool cross_qk_norm;     // cross-attention RMS-normalizes q and k (Wan, LTX-2)
  bool own_modulation;    // adaLN modulation weights in each block, not a shared table
  bool linear_attention;  // linear (ReLU) attention kernel and GLUMBConv FFN (Sana)
};

// One entry per kind, in enum order.
const std::vector<BlockKindTraits>& block_kind_table();
const BlockKindTraits& traits(BlockKind k);
std::string to_string(BlockKind k);
// InputError "<where> is '<value>'; expected one of dit_cross, ..." for an unknown name.
BlockKind parse_block_kind(const std::string& name, const std::string& where);

}  // namespace segadvise
