#include "segadvise/families/profile.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"

namespace segadvise {

using nlohmann::json;

Profile parse_profile(const json& j, const std::string& origin) {
  auto need = [&](const json& o, const std::string& key, const std::string& path) -> const json& {
    if (!o.is_object() || !o.contains(key)) throw InputError(origin + ": field '" + path + key + "' is missing");
    return o[key];
  };
  auto num = [&](const json& o, const std::string& key, const std::string& path, double def, bool required) {
    if (!o.contains(key)) {
      if (required) throw InputError(origin + ": field '" + path + key + "' is missing");
      return def;
    }
    if (!o[key].is_number()) throw InputError(origin + ": field '" + path + key + "' must be a number, got " + o[key].dump());
    return o[key].get<double>();
  };
  auto str = [&](const json& o, const std::string& key, const std::string& path) {
    const json& v = need(o, key, path);
    if (!v.is_string()) throw InputError(origin + ": field '" + path + key + "' must be a string, got " + v.dump());
    return v.get<std::string>();
  };
  Profile p;
  p.path = origin;
  const std::string fmt = str(j, "format", "");
  if (fmt != "segadvise-profile/1")
    throw InputError(origin + ": field 'format' is '" + fmt + "', expected 'segadvise-profile/1'");
  p.family = str(j, "family", "");
  p.precision = str(j, "precision", "");
  p.device = str(j, "device", "");
  p.gpu_id = j.value("gpu_id", "");
  p.dtype = j.value("dtype", "");
  p.torch_version = j.value("torch_version", "");
  p.tokens_image = num(j, "tokens_image", "", 0, true);
  p.tokens_text = num(j, "tokens_text", "", 0, false);
  p.batch = static_cast<int>(num(j, "batch", "", 1, false));
  p.attention_backend = j.value("attention_backend", "");
  p.created_by = j.value("created_by", "");
  if (j.contains("notes") && j["notes"].is_array())
    for (const auto& n : j["notes"])
      if (n.is_string()) p.notes.push_back(n.get<std::string>());
  if (j.contains("pcie")) {
    const json& pc = j["pcie"];
    if (!pc.is_object()) throw InputError(origin + ": field 'pcie' must be an object");
    p.pcie.h2d_pinned_bytes_per_s = num(pc, "h2d_pinned_bytes_per_s", "pcie.", 0, true);
    p.pcie.d2h_pinned_bytes_per_s = num(pc, "d2h_pinned_bytes_per_s", "pcie.", 0, true);
    p.pcie.h2d_pageable_bytes_per_s = num(pc, "h2d_pageable_bytes_per_s", "pcie.", 0, false);
    p.pcie.d2h_pageable_bytes_per_s = num(pc, "d2h_pageable_bytes_per_s", "pcie.", 0, false);
  }
  const json& kinds = need(j, "block_kinds", "");
  if (!kinds.is_array()) throw InputError(origin + ": field 'block_kinds' must be a list");
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const std::string path = "block_kinds[" + std::to_string(i) + "].";
    const json& k = kinds[i];
    ProfiledKind pk;
    pk.list = str(k, "list", path);
    pk.kind = str(k, "kind", path);
    pk.tokens = num(k, "tokens", path, 0, true);
    if (pk.tokens <= 0) throw InputError(origin + ": field '" + path + "tokens' must be positive");
    pk.saved_attention_bytes = num(k, "saved_attention_bytes", path, 0, true);
    pk.saved_ffn_bytes = num(k, "saved_ffn_bytes", path, 0, true);
    pk.saved_rest_bytes = num(k, "saved_rest_bytes", path, 0, true);
    pk.boundary_bytes = num(k, "boundary_bytes", path, 0, true);
    pk.transient_bytes = num(k, "transient_bytes", path, 0, false);
    if (k.contains("forward_fit")) {
      pk.forward_linear_s = num(k["forward_fit"], "linear_s", path + "forward_fit.", 0, true);
      pk.forward_quadratic_s = num(k["forward_fit"], "quadratic_s", path + "forward_fit.", 0, true);
    }
    if (k.contains("backward_fit")) {
      pk.backward_linear_s = num(k["backward_fit"], "linear_s", path + "backward_fit.", 0, true);
      pk.backward_quadratic_s = num(k["backward_fit"], "quadratic_s", path + "backward_fit.", 0, true);
    }
    if (k.contains("ffn_forward_fit")) {
      pk.ffn_forward_linear_s = num(k["ffn_forward_fit"], "linear_s", path + "ffn_forward_fit.", 0, true);
      pk.ffn_forward_quadratic_s = num(k["ffn_forward_fit"], "quadratic_s", path + "ffn_forward_fit.", 0, true);
    }
    pk.extrapolated = k.value("extrapolated", false);
    if (k.contains("measured_tokens") && k["measured_tokens"].is_array())
      for (const auto& t : k["measured_tokens"])
        if (t.is_number()) pk.measured_tokens.push_back(t.get<double>());
    p.kinds.push_back(pk);
  }
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
  std::ifstream in(path);
  if (!in) throw InputError("--profile: cannot open '" + path + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(path + ": invalid JSON: " + e.what());
  }
  return parse_profile(j, path);
}

void apply_profile(const Profile& p, const Family& fam, const TrainingSetup& setup, BlockChain& chain,
                   const std::string& target_gpu_id) {
  if (p.family != fam.id)
    throw InputError(p.path + ": profile of family '" + p.family + "' cannot be used for '" + fam.id + "'");
  const std::string prec = precision_key(setup);
  if (p.precision != prec)
    throw InputError(p.path + ": profile measured at precision '" + p.precision + "' cannot be used for '" + prec + "'");
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
