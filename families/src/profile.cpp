#include "segadvise/families/profile.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "segadvise/io/json_input.hpp"

#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"

namespace segadvise {

using nlohmann::json;

namespace {

// a fitted time coefficient (seconds per token, per token^2): finite, small and never negative (the
// profiler refits without the quadratic term when either would be negative: a negative one would
// give a block that takes less time, or negative time, as its tokens grow)
constexpr double kMaxFitS = 1e3;

void parse_fit(const FieldReader& k, const std::string& field, double& linear_s, double& quadratic_s) {
  if (!k.get(field, false)) return;
  const FieldReader f = k.sub(field, false);
  linear_s = f.num("linear_s", 0, true, 0, kMaxFitS);
  quadratic_s = f.num("quadratic_s", 0, true, 0, kMaxFitS);
}

ProfiledKind parse_kind(const FieldReader& k) {
  ProfiledKind pk;
  pk.list = k.str("list", "", true);
  pk.kind = k.str("kind", "", true);
  pk.tokens = k.num("tokens", 0, true, 0, kMaxProfileTokens);
  if (pk.tokens <= 0) k.fail("tokens", "must be positive");
  // byte counts: finite and >= 0 (a negative count would lower the peak)
  pk.saved_attention_bytes = k.num("saved_attention_bytes", 0, true, 0, kMaxProfileBytes);
  pk.saved_ffn_bytes = k.num("saved_ffn_bytes", 0, true, 0, kMaxProfileBytes);
  pk.saved_rest_bytes = k.num("saved_rest_bytes", 0, true, 0, kMaxProfileBytes);
  pk.boundary_bytes = k.num("boundary_bytes", 0, true, 0, kMaxProfileBytes);
  pk.transient_bytes = k.num("transient_bytes", 0, false, 0, kMaxProfileBytes);
  parse_fit(k, "forward_fit", pk.forward_linear_s, pk.forward_quadratic_s);
  parse_fit(k, "backward_fit", pk.backward_linear_s, pk.backward_quadratic_s);
  parse_fit(k, "ffn_forward_fit", pk.ffn_forward_linear_s, pk.ffn_forward_quadratic_s);
  pk.extrapolated = k.boolean("extrapolated", false);
  if (const json* ts = k.get("measured_tokens", false)) {
    if (!ts->is_array()) k.fail("measured_tokens", "must be a list of numbers");
    for (std::size_t i = 0; i < ts->size(); ++i)
      pk.measured_tokens.push_back(checked_number((*ts)[i], k.where("measured_tokens") + "[" + std::to_string(i) + "]",
                                                  0, kMaxProfileTokens));
  }
  return pk;
}

}  // namespace

Profile parse_profile(const json& j, const std::string& origin) {
  const FieldReader r{j, origin, ""};
  Profile p;
  p.path = origin;
  const std::string fmt = r.str("format", "", true);
  if (fmt != "segadvise-profile/1")
    throw InputError(origin + ": field 'format' is '" + brief_text(fmt) + "', expected 'segadvise-profile/1'");
  p.family = r.str("family", "", true);
  p.precision = r.str("precision", "", true);
  p.device = r.str("device", "", true);
  p.gpu_id = r.str("gpu_id", "");
  p.dtype = r.str("dtype", "");
  p.torch_version = r.str("torch_version", "");
  p.tokens_image = r.num("tokens_image", 0, true, 0, kMaxProfileTokens);
  p.tokens_text = r.num("tokens_text", 0, false, 0, kMaxProfileTokens);
  p.batch = r.integer("batch", 1, false, 1, kMaxBatch);
  p.attention_backend = r.str("attention_backend", "");
  p.created_by = r.str("created_by", "");
  p.notes = r.strings("notes");
  if (r.get("pcie", false)) {
    const FieldReader pc = r.sub("pcie", false);
    constexpr double kMaxBytesPerS = 1e13;  // 10 TB/s: above any host link
    p.pcie.h2d_pinned_bytes_per_s = pc.num("h2d_pinned_bytes_per_s", 0, true, 0, kMaxBytesPerS);
    p.pcie.d2h_pinned_bytes_per_s = pc.num("d2h_pinned_bytes_per_s", 0, true, 0, kMaxBytesPerS);
    p.pcie.h2d_pageable_bytes_per_s = pc.num("h2d_pageable_bytes_per_s", 0, false, 0, kMaxBytesPerS);
    p.pcie.d2h_pageable_bytes_per_s = pc.num("d2h_pageable_bytes_per_s", 0, false, 0, kMaxBytesPerS);
  }
  const json* kinds = r.get("block_kinds", true);
  if (!kinds->is_array()) r.fail("block_kinds", "must be a list");
  for (std::size_t i = 0; i < kinds->size(); ++i)
    p.kinds.push_back(parse_kind(FieldReader{(*kinds)[i], origin, "block_kinds[" + std::to_string(i) + "]."}));
  return p;
}

json profile_to_json(const Profile& p) {
  json j;
  j["format"] = "segadvise-profile/1";
  j["family"] = p.family;
  j["precision"] = p.precision;
  j["device"] = p.device;
  j["gpu_id"] = p.gpu_id;
  j["dtype"] = p.dtype;
  j["torch_version"] = p.torch_version;
  j["attention_backend"] = p.attention_backend;
  j["created_by"] = p.created_by;
  j["tokens_image"] = p.tokens_image;
  j["tokens_text"] = p.tokens_text;
  j["batch"] = p.batch;
  if (p.pcie.measured()) {
    j["pcie"] = {{"h2d_pinned_bytes_per_s", p.pcie.h2d_pinned_bytes_per_s},
                 {"d2h_pinned_bytes_per_s", p.pcie.d2h_pinned_bytes_per_s},
                 {"h2d_pageable_bytes_per_s", p.pcie.h2d_pageable_bytes_per_s},
                 {"d2h_pageable_bytes_per_s", p.pcie.d2h_pageable_bytes_per_s}};
  }
  j["notes"] = p.notes;
  json kinds = json::array();
  for (const auto& k : p.kinds) {
    kinds.push_back({{"list", k.list},
                     {"kind", k.kind},
                     {"tokens", k.tokens},
                     {"saved_attention_bytes", k.saved_attention_bytes},
                     {"saved_ffn_bytes", k.saved_ffn_bytes},
                     {"saved_rest_bytes", k.saved_rest_bytes},
                     {"boundary_bytes", k.boundary_bytes},
                     {"transient_bytes", k.transient_bytes},
                     {"forward_fit", {{"linear_s", k.forward_linear_s}, {"quadratic_s", k.forward_quadratic_s}}},
                     {"backward_fit", {{"linear_s", k.backward_linear_s}, {"quadratic_s", k.backward_quadratic_s}}},
                     {"ffn_forward_fit", {{"linear_s", k.ffn_forward_linear_s}, {"quadratic_s", k.ffn_forward_quadratic_s}}},
                     {"extrapolated", k.extrapolated},
                     {"measured_tokens", k.measured_tokens}});
  }
  j["block_kinds"] = kinds;
  return j;
}

void apply_profile_bandwidth(const Profile& p, double pcie_efficiency, GpuSpec& gpu) {
  if (!p.pcie.measured() || p.gpu_id.empty() || p.gpu_id != gpu.id) return;
  const double measured = std::min(p.pcie.h2d_pinned_bytes_per_s, p.pcie.d2h_pinned_bytes_per_s);
  gpu.pcie_bytes_per_s = measured / std::max(1e-6, pcie_efficiency);
  gpu.source += "; PCIe measured by " + p.path;
}

Profile load_profile(const std::string& path) {
  return parse_profile(load_json_file(path, "--profile"), path);
}

void check_profile_kinds(const Profile& p, const Family& fam) {
  for (std::size_t i = 0; i < p.kinds.size(); ++i) {
    const ProfiledKind& k = p.kinds[i];
    const auto it = std::find_if(fam.block_lists.begin(), fam.block_lists.end(),
                                 [&](const BlockListSpec& l) { return l.name == k.list; });
    const std::string where = p.path + ": field 'block_kinds[" + std::to_string(i) + "]'";
    if (it == fam.block_lists.end())
      throw InputError(where + ": list '" + brief_text(k.list) + "' is no block list of " + fam.id);
    if (to_string(it->kind) != k.kind)
      throw InputError(where + ": kind '" + brief_text(k.kind) + "' does not match list " + it->name + " (" +
                       to_string(it->kind) + ")");
  }
}

void apply_profile(const Profile& p, const Family& fam, const TrainingSetup& setup, BlockChain& chain,
                   const std::string& target_gpu_id) {
  if (p.family != fam.id)
    throw InputError(p.path + ": profile of family '" + p.family + "' cannot be used for '" + fam.id + "'");
  const std::string prec = precision_key(setup);
  if (p.precision != prec)
    throw InputError(p.path + ": profile measured at precision '" + p.precision + "' cannot be used for '" + prec + "'");
  check_profile_kinds(p, fam);
  const bool same_gpu = !p.gpu_id.empty() && p.gpu_id == target_gpu_id;
  const double batch = std::max(1, setup.batch);
  for (auto& b : chain.blocks) {
    for (const auto& k : p.kinds) {
      if (k.list != b.list) continue;
      // tokens this block runs over at the target shape, counted as the profile counts them
      // (list_tokens of the latent token count, x batch; U-Net levels are not scaled)
      const BlockListSpec* spec = nullptr;
      for (const auto& l : fam.block_lists)
        if (l.name == k.list) spec = &l;
      if (!spec) break;
      const double target = list_tokens(*spec, chain.tokens_image, chain.tokens_text) * batch;
      const double r = target / k.tokens;
      b.saved_attention_bytes = k.saved_attention_bytes * r;
      b.saved_ffn_bytes = k.saved_ffn_bytes * r;
      b.saved_rest_bytes = k.saved_rest_bytes * r;
      b.boundary_bytes = k.boundary_bytes * r;
      if (k.transient_bytes > 0) b.transient_bytes = k.transient_bytes * r;
      b.measured = true;
      if (same_gpu && k.forward_linear_s + k.forward_quadratic_s > 0) {
        b.measured_forward_s = k.forward_linear_s * target + k.forward_quadratic_s * target * target;
        b.measured_backward_s = k.backward_linear_s * target + k.backward_quadratic_s * target * target;
        b.measured_ffn_forward_s = k.ffn_forward_linear_s * target + k.ffn_forward_quadratic_s * target * target;
      }
      break;
    }
  }
  chain.source = "profile:" + p.path;
}

}  // namespace segadvise
