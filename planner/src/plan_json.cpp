#include "segadvise/planner/plan_json.hpp"

#include "segadvise/io/json_input.hpp"

namespace segadvise {

using nlohmann::json;

std::string to_string(BlockMode m) {
  switch (m) {
    case BlockMode::Keep:
      return "keep";
    case BlockMode::Checkpoint:
      return "checkpoint";
    default:
      return "checkpoint_ffn";
  }
}

BlockMode parse_block_mode(const std::string& s, const std::string& where) {
  if (s == "keep") return BlockMode::Keep;
  if (s == "checkpoint") return BlockMode::Checkpoint;
  if (s == "checkpoint_ffn") return BlockMode::CheckpointFfn;
  throw InputError(where + " is '" + s + "', expected keep, checkpoint or checkpoint_ffn");
}

json plan_to_json(const Plan& p) {
  json segs = json::array();
  for (const auto& s : p.segments)
    segs.push_back({{"begin", s.begin}, {"end", s.end}, {"mode", to_string(s.mode)}, {"offload_to_host", s.offload_to_host}});
  json j = {{"segments", segs}, {"offload_attention", p.offload_attention}};
  if (!p.description.empty()) j["description"] = p.description;
  return j;
}

Plan plan_from_json(const json& j, const std::string& origin, int n_blocks) {
  if (!j.is_object() || !j.contains("segments") || !j["segments"].is_array())
    throw InputError(origin + ": field 'segments' (a list) is missing");
  Plan p;
  int next = 0;
  const json& segs = j["segments"];
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const std::string path = origin + ": field 'segments[" + std::to_string(i) + "].";
    const json& s = segs[i];
    if (!s.is_object()) throw InputError(origin + ": field 'segments[" + std::to_string(i) + "]' must be an object");
    for (const char* k : {"begin", "end"})
      if (!s.contains(k) || !s[k].is_number_integer()) throw InputError(path + k + "' must be an integer");
    Segment seg;
    seg.begin = static_cast<int>(checked_integer(s["begin"], path + "begin'", 0, kMaxBlocks));
    seg.end = static_cast<int>(checked_integer(s["end"], path + "end'", 0, kMaxBlocks));
    if (seg.begin != next)
      throw InputError(path + "begin' is " + std::to_string(seg.begin) + ", expected " + std::to_string(next) +
                       " (segments cover the blocks in order, without gaps)");
    if (seg.end <= seg.begin) throw InputError(path + "end' is " + std::to_string(seg.end) + ", not after begin");
    if (n_blocks > 0 && seg.end > n_blocks)
      throw InputError(path + "end' is " + std::to_string(seg.end) + ", beyond the " + std::to_string(n_blocks) + " blocks");
    const std::string mode = FieldReader{s, origin, "segments[" + std::to_string(i) + "]."}.str("mode", "keep");
    seg.mode = parse_block_mode(mode, path + "mode'");
    if (s.contains("offload_to_host")) {
      if (!s["offload_to_host"].is_boolean()) throw InputError(path + "offload_to_host' must be true or false");
      seg.offload_to_host = s["offload_to_host"].get<bool>();
    }
    if (seg.mode == BlockMode::CheckpointFfn && seg.end - seg.begin != 1) {
      // FFN-only checkpointing is per block; a longer segment means each of its blocks
      for (int b = seg.begin; b < seg.end; ++b) p.segments.push_back(Segment{b, b + 1, seg.mode, seg.offload_to_host});
    } else {
      p.segments.push_back(seg);
    }
    next = seg.end;
  }
  if (n_blocks > 0 && next != n_blocks)
    throw InputError(origin + ": the segments cover " + std::to_string(next) + " of " + std::to_string(n_blocks) + " blocks");
  if (j.contains("offload_attention")) {
    if (!j["offload_attention"].is_boolean()) throw InputError(origin + ": field 'offload_attention' must be true or false");
    p.offload_attention = j["offload_attention"].get<bool>();
  }
  p.description = FieldReader{j, origin, ""}.str("description", "plan from " + origin);
  return p;
}

Plan load_plan(const std::string& path, int n_blocks) {
  return plan_from_json(load_json_file(path, "--plan"), path, n_blocks);
}

}  // namespace segadvise
