#include "segadvise/families/block_kind.hpp"

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/types.hpp"

namespace segadvise {

const std::vector<BlockKindTraits>& block_kind_table() {
  // kind, name: attention, joint_tokens, text_stream, audio_stream, cross_qk_norm, own_modulation, linear_attention
  static const std::vector<BlockKindTraits> table = {
      {BlockKind::DitCross, "dit_cross", true, false, false, false, true, false, false},
      {BlockKind::DitSelf, "dit_self", true, false, false, false, false, true, false},
      {BlockKind::MmditDouble, "mmdit_double", true, true, true, false, false, true, false},
      {BlockKind::SingleStream, "single_stream", true, true, false, false, false, true, false},
      {BlockKind::LinearDit, "linear_dit", true, false, false, false, false, false, true},
      {BlockKind::AudioVideoDit, "audio_video_dit", true, false, false, true, true, false, false},
      {BlockKind::UnetRes, "unet_res", false, false, false, false, false, false, false},
      {BlockKind::UnetAttn, "unet_attn", true, false, false, false, false, false, false},
  };
  return table;
}

const BlockKindTraits& traits(BlockKind k) { return block_kind_table()[static_cast<std::size_t>(k)]; }

std::string to_string(BlockKind k) { return traits(k).name; }

BlockKind parse_block_kind(const std::string& name, const std::string& where) {
  std::string all;
  for (const auto& t : block_kind_table()) {
    if (name == t.name) return t.kind;
    all += (all.empty() ? "" : ", ") + std::string(t.name);
  }
  throw InputError(where + " is '" + brief_text(name) + "'; expected one of " + all);
}

}  // namespace segadvise
