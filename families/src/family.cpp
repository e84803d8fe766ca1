#include "segadvise/families/family.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise {


namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Field readers that name the file and field of anything wrong.
using Reader = FieldReader;

// Every size is checked against its documented meaning (families/FORMAT.md "Limits").

// A key every family file writes out, null where it does not apply: left out, a typo or an
// omission would silently mean "no FFN" or "the example's defaults"
void require_key(const Reader& r, const std::string& field, const std::string& null_means) {
  if (r.j.is_object() && !r.j.contains(field)) r.fail(field, "is missing (write null " + null_means + ")");
}

// a width when set: at least 1 (0 is not "none": null is)
int width_field(const Reader& r, const std::string& field, const std::string& null_means) {
  const json* v = r.get(field, false);
  if (!v) return 0;
  const long long w = checked_integer(*v, r.where(field), 0, kMaxModelDim);
  if (w == 0) r.fail(field, "is 0; a width is at least 1 (null " + null_means + ")");
  return static_cast<int>(w);
}
// the names of each checkpointing enum, in enum order
const std::vector<std::string> kIntervalRules = {"segmented", "per_block", "ignored", "micro_blocks"};
const std::vector<std::string> kFallbackRules = {"every_block", "per_block"};
const std::vector<std::string> kBlockIndexes = {"per_list", "global"};

// an enum field: one of `names` (its position is the enum value); unset: `def`
template <class E>
E enum_field(const Reader& r, const std::string& field, E def, const std::vector<std::string>& names, bool required) {
  const std::string v = r.str(field, names[static_cast<std::size_t>(def)], required);
  r.one_of(field, v, names);
  return static_cast<E>(std::find(names.begin(), names.end(), v) - names.begin());
}

BlockListSpec parse_block_list(const Reader& r) {
  BlockListSpec b;
  b.name = r.str("name", "", true);
  b.count = r.integer("count", 0, true, 1, kMaxBlocksPerList);
  b.kind = parse_block_kind(r.str("kind", "", true), r.where("kind"));
  b.hidden = r.integer("hidden", 0, true, 1, kMaxModelDim);
  const bool attention = traits(b.kind).attention;
  b.heads = r.integer("heads", 0, attention, attention ? 1 : 0, kMaxModelDim);
  require_key(r, "head_dim", "for hidden / heads, or for a block without attention");
  require_key(r, "ffn_hidden", "for a block without an FFN");
  b.head_dim = r.integer("head_dim", 0, false, 1, kMaxModelDim);
  if (b.head_dim == 0 && b.heads > 0) b.head_dim = b.hidden / b.heads;
  if (b.heads > 0 && b.head_dim <= 0) r.fail("head_dim", "unset and hidden / heads is 0");
  // grouped-query attention: k/v have kv_heads heads (0 or absent: as many as the queries)
  b.kv_heads = r.integer("kv_heads", 0, false, 0, kMaxModelDim);
  if (b.heads > 0 && b.kv_heads > b.heads)
    r.fail("kv_heads", "must be between 1 and heads (" + std::to_string(b.heads) + "), got " + std::to_string(b.kv_heads));
  // local / sliding-window attention: each query attends to at most this many keys (0: all)
  b.attention_window = r.integer("attention_window", 0, false, 0, kMaxModelDim);
  b.audio_cross_attention = r.boolean("audio_cross_attention", false);
  b.ffn_hidden = width_field(r, "ffn_hidden", "for a block without an FFN");  // null: no FFN (ResNet, Stable Cascade attention)
  b.ffn_act = r.str("ffn_act", b.ffn_hidden > 0 ? "gelu" : "none");
  r.one_of("ffn_act", b.ffn_act, {"gelu", "relu2", "swiglu", "geglu", "glumbconv", "none"});
  b.tokens = r.str("tokens", "image");
  r.one_of("tokens", b.tokens, {"image", "joint", "text"});
  b.cross_attention = r.boolean("cross_attention", false);
  b.text_hidden = width_field(r, "text_hidden", "for the block's own width");
  if (r.get("moe", false)) {
    const Reader moe = r.sub("moe", false);
    b.moe_experts = moe.integer("experts", 0, true, 1, kMaxModelDim);
    b.moe_active = moe.integer("active", 0, false, 0, b.moe_experts);
    b.moe_shared_hidden = moe.integer("shared_hidden", 0, false, 0, kMaxModelDim);
  }
  // a ratio to the latent tokens: finite, positive, at most kMaxTokenScale
  b.token_scale = r.num("token_scale", 1.0, false, 0, kMaxTokenScale);
  if (b.token_scale <= 0) r.fail("token_scale", "must be positive");
  b.skip = r.str("skip", "");
  if (!b.skip.empty()) r.one_of("skip", b.skip, {"push", "pop"});
  b.checkpointed = r.boolean("checkpointed", true);
  b.params_per_block = r.num("params_per_block", 0, false, 0, kMaxParams);
  return b;
}

std::vector<std::string> all_names(const std::vector<Family>& fams) {
  std::vector<std::string> names;
  for (const auto& f : fams) {
    names.push_back(f.id);
    for (const auto& a : f.aliases) names.push_back(a);
    for (const auto& fl : f.flavours) names.push_back(f.trainer_family + ":" + fl);
  }
  return names;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

Family parse_family(const json& j, const std::string& origin) {
  const Reader r{j, origin, ""};
  Family f;
  f.origin = origin;
  f.id = r.str("id", "", true);
  f.name = r.str("name", f.id);
  f.trainer_family = r.str("trainer_family", f.id);
  f.flavours = r.strings("flavours");
  f.default_for_family = r.boolean("default_for_family", false);
  f.aliases = r.strings("aliases");
  f.confidence = r.str("confidence", "unknown");
  f.source = r.strings("source");
  f.notes = r.str("notes", "");
  f.modality = r.str("modality", "image", true);
  r.one_of("modality", f.modality, {"image", "video", "audio"});
  const Reader g = r.sub("geometry", true);
  f.geometry.vae_spatial = g.integer("vae_spatial", 8, false, 1, kMaxGeometryFactor);
  f.geometry.vae_temporal = g.integer("vae_temporal", 0, false, 1, kMaxGeometryFactor);  // unset: no temporal VAE
  f.geometry.temporal_causal = g.boolean("temporal_causal", true);
  f.geometry.patch_spatial = g.integer("patch_spatial", 2, false, 1, kMaxGeometryFactor);
  f.geometry.patch_temporal = g.integer("patch_temporal", 1, false, 1, kMaxGeometryFactor);
  f.geometry.alignment = g.integer("alignment", 64, false, 1, kMaxGeometryFactor);
  f.geometry.frame_rule = g.str("frame_rule", "none");
  g.one_of("frame_rule", f.geometry.frame_rule, {"none", "8k+1", "17k+5"});
  f.geometry.audio_tokens = g.integer("audio_tokens", 0, false, 0, kMaxTextTokens);
  f.geometry.context_latent_frames = g.num("context_latent_frames", 0, false, 0, kMaxGeometryFactor);
  if (f.geometry.vae_spatial <= 0) g.fail("vae_spatial", "must be positive");
  if (f.geometry.patch_spatial <= 0) g.fail("patch_spatial", "must be positive");
  if (f.geometry.patch_temporal <= 0) g.fail("patch_temporal", "must be positive");
  if (f.modality == "audio" && f.geometry.audio_tokens <= 0) g.fail("audio_tokens", "must be positive for audio models");
  f.text_tokens = r.integer("text_tokens", 0, true, 0, kMaxTextTokens);  // 0: no text tokens (unconditional, audio)
  f.params_published = r.num("params_published", 0, false, 0, kMaxParams);

  const json* lists = r.get("block_lists", true);
  if (!lists->is_array() || lists->empty()) r.fail("block_lists", "must be a non-empty list");
  if (lists->size() > static_cast<std::size_t>(kMaxBlockLists))
    r.fail("block_lists", "has " + std::to_string(lists->size()) + " lists; at most " + std::to_string(kMaxBlockLists));
  int blocks = 0;
  for (std::size_t i = 0; i < lists->size(); ++i) {
    f.block_lists.push_back(parse_block_list(Reader{(*lists)[i], origin, "block_lists[" + std::to_string(i) + "]."}));
    blocks += f.block_lists.back().count;
  }
  if (blocks > kMaxBlocks)
    r.fail("block_lists", "holds " + std::to_string(blocks) + " blocks; at most " + std::to_string(kMaxBlocks));

  const Reader c = r.sub("checkpointing", true);
  CheckpointSemantics& s = f.checkpointing;
  s.interval = enum_field(c, "interval", IntervalRule::Segmented, kIntervalRules, true);
  s.stride = c.boolean("stride", s.interval != IntervalRule::Ignored);
  s.fallback = enum_field(c, "fallback", FallbackRule::EveryBlock, kFallbackRules, false);
  s.index = enum_field(c, "index", BlockIndex::PerList, kBlockIndexes, false);
  s.backend_setter = c.boolean("backend_setter", true);
  s.ffn_backend = c.boolean("ffn_backend", false);
  s.attention_offload = c.boolean("attention_offload", false);
  s.max_swappable_blocks = c.integer("max_swappable_blocks", 0, false, 0, kMaxBlocks);
  s.segmented_with_ffn_backend = c.boolean("segmented_with_ffn_backend", false);
  s.segmented_with_block_swap = c.boolean("segmented_with_block_swap", false);
  s.compiled_blocks_keep_activations = c.boolean("compiled_blocks_keep_activations", false);
  s.notes = c.str("notes", "");
  f.lora_targets = r.strings("lora_targets");
  f.modulation_module = r.str("modulation_module", "");
  f.ffn_module = r.str("ffn_module", "");
  if (const json* q = r.get("quanto_excludes", false); q && q->is_string()) {
    if (q->get<std::string>() != "unrecorded") r.fail("quanto_excludes", "must be a list of patterns or \"unrecorded\"");
    f.quanto_excludes_known = false;
  } else {
    f.quanto_excludes = r.strings("quanto_excludes");
  }
  if (r.get("lycoris_classes", false)) {
    const Reader lc = r.sub("lycoris_classes", true);
    f.lycoris_classes.attention = lc.strings("attention");
    f.lycoris_classes.ffn = lc.strings("ffn");
    f.lycoris_classes.model = lc.strings("model");
    f.lycoris_classes.recorded = true;
  }

  const Reader e = r.sub("example", false);
  f.example.name = e.str("name", "");
  const json* res = e.get("resolution", false);
  if (res && res->is_number()) f.example.resolution = static_cast<int>(e.num("resolution", 0, false, 1, kMaxEdgePixels));
  f.example.resolution_type = e.str("resolution_type", "pixel_area");
  e.one_of("resolution_type", f.example.resolution_type, {"pixel", "pixel_area", "area"});
  f.example.width = e.integer("width", f.example.resolution, false, 1, kMaxEdgePixels);
  f.example.height = e.integer("height", f.example.resolution, false, 1, kMaxEdgePixels);
  f.example.frames = e.integer("frames", 1, false, 0, kMaxFrames);
  f.example.batch = e.integer("batch", 1, false, 1, kMaxBatch);
  f.example.model_type = parse_model_type(e.str("model_type", "lora"), e.where("model_type"));
  f.example.lora_type = parse_lora_type(e.str("lora_type", "standard"), e.where("lora_type"));
  f.example.lora_rank = e.integer("lora_rank", 16, false, 1, kMaxLoraRank);
  f.example.optimizer = e.str("optimizer", "adamw_bf16");
  f.example.base_precision = e.str("base_model_precision", "no_change");
  // validated here, not first at predict time, so the message names the file and field
  try {
    optimizer_info(f.example.optimizer);
  } catch (const InputError& err) {
    e.fail("optimizer", err.what());
  }
  try {
    precision_info(f.example.base_precision);
  } catch (const InputError& err) {
    e.fail("base_model_precision", err.what());
  }
  f.example.ramtorch = e.boolean("ramtorch", false);
  f.example.sdnq_hadamard = e.boolean("sdnq_use_hadamard", false);
  f.example.ramtorch_percent = e.num("ramtorch_transformer_percent", 100, false, 0, 100);
  f.example.attention = e.str("attention_mechanism", "diffusers");
  f.example.mixed_precision = e.str("mixed_precision", "bf16");
  e.one_of("mixed_precision", f.example.mixed_precision, {"no", "fp16", "bf16", "fp8"});
  f.example.regional_compile = e.boolean("regional_compile", false);
  f.example.lokr_read = e.get("lokr_attention_factor", false) != nullptr;
  f.example.lokr_attention_factor = e.integer("lokr_attention_factor", 0, false, -1, kMaxModelDim);
  f.example.lokr_ffn_factor = e.integer("lokr_ffn_factor", 0, f.example.lokr_read, -1, kMaxModelDim);
  f.example.lokr_full_matrix = e.boolean("lokr_full_matrix", false);
  f.example.lokr_linear_dim = e.integer("lokr_linear_dim", 4, false, 1, 1 << 30);
  f.example.blocks_to_swap = e.integer("musubi_blocks_to_swap", 0, false, 0, kMaxBlocks);
  f.example.use_ema = e.boolean("use_ema", false);
  f.example.ema_on_gpu = f.example.use_ema && e.str("ema_device", "cpu") == "accelerator";
  if (f.example.width <= 0 || f.example.height <= 0) e.fail("width", "must be positive");
  if (f.example.frames <= 0) f.example.frames = 1;
  if (f.example.batch <= 0) e.fail("batch", "must be positive");
  return f;
}

std::string to_string(IntervalRule r) { return kIntervalRules[static_cast<std::size_t>(r)]; }
std::string to_string(FallbackRule r) { return kFallbackRules[static_cast<std::size_t>(r)]; }
std::string to_string(BlockIndex i) { return kBlockIndexes[static_cast<std::size_t>(i)]; }

namespace {
// the data files that are not families: the GPU catalog, the kernel tables, the card memory facts
bool is_family_file(const std::string& name) {
  return name != "gpus.json" && name != "kernels.json" && name != "card-memory.json";
}

// families/data/card-memory.json: what a process's device memory holds besides the caching allocator
struct CardMemoryFacts {
  double context_bytes = 0, library_bytes = 0, margin_share = 0;
  double driver_base_mib = 0, driver_mib_per_gib = 0;  // the line through the published cards
};
const CardMemoryFacts& card_memory_facts() {
  static const CardMemoryFacts f = [] {
    CardMemoryFacts out;
    for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
      if (std::string(kEmbeddedData[i].name) != "card-memory.json") continue;
      const json j = parse_json_text(kEmbeddedData[i].text, "families/data/card-memory.json");
      const Reader r{j, "families/data/card-memory.json", ""};
      out.context_bytes = r.num("cuda_context_gib", 0, true, 0, 16) * kGiB;
      out.library_bytes = r.num("library_workspaces_gib", 0, true, 0, 16) * kGiB;
      out.margin_share = r.num("allocator_margin_share", 0, true, 0, 0.5);
      const json& pts = j.at("driver_reserved").at("mib_at_gib");
      const double x0 = pts.at(0).at(0), y0 = pts.at(0).at(1), x1 = pts.at(1).at(0), y1 = pts.at(1).at(1);
      out.driver_mib_per_gib = (y1 - y0) / (x1 - x0);
      out.driver_base_mib = y0 - out.driver_mib_per_gib * x0;
    }
    return out;
  }();
  return f;
}
}  // namespace

void apply_card_memory(GpuSpec& g) {
  const CardMemoryFacts& f = card_memory_facts();
  g.context_bytes = f.context_bytes;
  g.library_bytes = f.library_bytes;
  g.allocator_margin_share = f.margin_share;
  g.driver_reserved_bytes = std::max(0.0, f.driver_base_mib + f.driver_mib_per_gib * g.total_bytes / kGiB) * kMiB;
}

const std::vector<Family>& builtin_families() {
  static const std::vector<Family> fams = [] {
    std::vector<Family> out;
    for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
      const std::string name = kEmbeddedData[i].name;
      if (!is_family_file(name)) continue;
      const json j = parse_json_text(kEmbeddedData[i].text, "families/data/" + name);
      out.push_back(parse_family(j, "families/data/" + name));
    }
    std::sort(out.begin(), out.end(), [](const Family& a, const Family& b) { return a.id < b.id; });
    return out;
  }();
  return fams;
}

namespace {

// A built-in family named by its id, parsed from its own file alone (every id is its file's name):
// advise and predict name one family, and parsing all of them was ~3 ms of every run. nullptr when
// no built-in file has that name. The object is this function's own (builtin_families() holds an
// equal copy: the same file through the same parser).
const Family* builtin_family_by_id(const std::string& id) {
  static std::map<std::string, Family> parsed;
  if (auto it = parsed.find(id); it != parsed.end()) return &it->second;
  const std::string file = id + ".json";
  if (!is_family_file(file)) return nullptr;
  for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
    if (kEmbeddedData[i].name != file) continue;
    Family f = parse_family(parse_json_text(kEmbeddedData[i].text, "families/data/" + file), "families/data/" + file);
    if (f.id != id) return nullptr;
    return &parsed.emplace(id, std::move(f)).first->second;
  }
  return nullptr;
}

}  // namespace

const Family& find_family(const std::string& raw) {
  // a path to a family file of the user's own
  if (raw.size() > 5 && raw.substr(raw.size() - 5) == ".json") {
    static std::map<std::string, Family> loaded;
    auto it = loaded.find(raw);
    if (it != loaded.end()) return it->second;
    const json j = load_json_file(raw, "--model");
    return loaded.emplace(raw, parse_family(j, raw)).first->second;
  }
  const std::string name = lower(raw);
  if (const Family* f = builtin_family_by_id(name)) return *f;
  const auto& fams = builtin_families();
  for (const auto& f : fams) {
    if (f.id == name) return f;
    for (const auto& a : f.aliases)
      if (lower(a) == name) return f;
  }
  const auto colon = name.find(':');
  if (colon != std::string::npos) return find_family_by_model_family(name.substr(0, colon), name.substr(colon + 1), "--model");
  for (const auto& f : fams)
    if (f.trainer_family == name && f.default_for_family) return f;
  for (const auto& f : fams)
    if (f.trainer_family == name) return f;
  throw InputError("--model: unknown model '" + brief_text(raw) + "'; nearest: " + join(nearest_names(name, all_names(fams))) +
                   " (segadvise list models)");
}

const Family& find_family_by_model_family(const std::string& model_family_raw, const std::string& flavour_raw,
                                          const std::string& origin, const std::string& registered_as) {
  const std::string model_family = lower(model_family_raw), flavour = lower(flavour_raw);
  const auto& fams = builtin_families();
  const std::string fam = registered_as.empty() ? model_family : registered_as;
  std::vector<const Family*> of_family;
  for (const auto& f : fams)
    if (f.trainer_family == fam) of_family.push_back(&f);
  if (of_family.empty()) {
    std::vector<std::string> names;
    for (const auto& f : fams) names.push_back(f.trainer_family);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    throw InputError(origin + ": model_family '" + brief_text(model_family_raw) + "' is not modelled; nearest: " +
                     join(nearest_names(fam, names)));
  }
  if (flavour.empty()) {
    for (const Family* f : of_family)
      if (f->default_for_family) return *f;
    return *of_family.front();
  }
  for (const Family* f : of_family)
    for (const auto& fl : f->flavours)
      if (lower(fl) == flavour) return *f;
  std::vector<std::string> flavours;
  for (const Family* f : of_family)
    for (const auto& fl : f->flavours) flavours.push_back(fl);
  throw InputError(origin + ": model_flavour '" + brief_text(flavour_raw) + "' of model_family '" + brief_text(model_family_raw) +
                   "' is not modelled; nearest: " + join(nearest_names(flavour, flavours)));
}

namespace {

AttentionKernel kernel_named(const std::string& name, const std::string& where) {
  for (AttentionKernel k : {AttentionKernel::Unfused, AttentionKernel::Fa2, AttentionKernel::Cudnn, AttentionKernel::Fa3,
                            AttentionKernel::MemEfficient})
    if (to_string(k) == name) return k;
  throw InputError(where + ": attention kernel '" + brief_text(name) + "' is not one of unfused, fa2, cudnn, fa3, mem-efficient");
}

std::vector<double> tflops_list(const json& v, std::size_t n, const std::string& where) {
  if (!v.is_array() || v.size() != n) throw InputError(where + ": expected " + std::to_string(n) + " values (null: not measured)");
  std::vector<double> out;
  for (const auto& x : v) {
    if (x.is_null()) out.push_back(0);
    else if (x.is_number() && x.get<double>() > 0 && std::isfinite(x.get<double>())) out.push_back(x.get<double>());
    else throw InputError(where + ": values are positive TFLOP/s or null");
  }
  return out;
}

}  // namespace

// families/data/kernels.json (kernels.hpp): the published kernel figures every catalog GPU carries
std::shared_ptr<const KernelTable> builtin_kernel_table() {
  static const std::shared_ptr<const KernelTable> table = [] {
    auto t = std::make_shared<KernelTable>();
    for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
      if (std::string(kEmbeddedData[i].name) != "kernels.json") continue;
      const std::string origin = "families/data/kernels.json";
      const json j = parse_json_text(kEmbeddedData[i].text, origin);
      t->source = j.value("source", origin);
      const json& mm = j.at("matmul_size");
      t->matmul_edge = mm.at("edge").get<std::vector<double>>();
      t->matmul_share = tflops_list(mm.at("share"), t->matmul_edge.size(), origin + ": matmul_size.share");
      const json& at = j.at("attention");
      t->reference_gpu = at.at("reference_gpu").get<std::string>();
      t->seq = at.at("seq").get<std::vector<double>>();
      for (const auto& [name, b] : at.at("backends").items()) {
        AttentionCurve c;
        const std::string where = origin + ": attention.backends." + name;
        for (const char* pass : {"forward", "backward"})
          for (const auto& [hd, v] : b.at(pass).items())
            (std::string(pass) == "forward" ? c.forward : c.backward)[std::stoi(hd)] =
                tflops_list(v, t->seq.size(), where + "." + pass + "." + hd);
        t->attention[kernel_named(name, where)] = c;
      }
    }
    // the curves' reference card: its practical matmul ceiling (gpus.json) scales them to the others
    for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
      if (std::string(kEmbeddedData[i].name) != "gpus.json") continue;
      const json catalog = json::parse(kEmbeddedData[i].text);  // held: the loop reads into it
      for (const auto& g : catalog.at("gpus"))
        if (g.at("id") == t->reference_gpu) t->reference_matmul_flops_per_s = g.value("matmul_tflops", 0.0) * 1e12;
    }
    if (!t->seq.empty() && t->reference_matmul_flops_per_s <= 0)
      throw InputError("families/data/kernels.json: reference_gpu '" + t->reference_gpu +
                       "' has no matmul_tflops in families/data/gpus.json");
    return std::shared_ptr<const KernelTable>(t);
  }();
  return table;
}

const std::vector<GpuSpec>& builtin_gpus() {
  static const std::vector<GpuSpec> gpus = [] {
    std::vector<GpuSpec> out;
    for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
      if (std::string(kEmbeddedData[i].name) != "gpus.json") continue;
      const json j = parse_json_text(kEmbeddedData[i].text, "families/data/gpus.json");
      for (std::size_t k = 0; k < j.at("gpus").size(); ++k) {
        const Reader r{j["gpus"][k], "families/data/gpus.json", "gpus[" + std::to_string(k) + "]."};
        GpuSpec g;
        g.id = r.str("id", "", true);
        g.name = r.str("name", g.id);
        g.total_bytes = r.num("total_gib", 0, true, 1e-3, kMaxVramGib) * kGiB;
        g.bf16_flops_per_s = r.num("bf16_tflops", 0, true, 1e-3, 1e6) * 1e12;
        g.fp8_flops_per_s = r.num("fp8_tflops", 0, false, 0, 1e6) * 1e12;
        g.mem_bytes_per_s = r.num("mem_gbps", 0, true, 1e-3, 1e6) * 1e9;
        g.pcie_bytes_per_s = r.num("pcie_gbps", 32, false, 1e-3, 1e6) * 1e9;
        g.source = "families/data/gpus.json";
        g.nvlink_gen = r.integer("nvlink_gen", 0, false, 0, 16);
        g.nvlink_bytes_per_s = r.num("nvlink_gbps", 0, false, 0, 1e6) * 1e9;
        g.pcie_gen = r.integer("pcie_gen", 0, false, 0, 16);
        g.p2p = r.boolean("p2p", true);
        g.interconnect_source = r.str("interconnect");
        g.matmul_flops_per_s = r.num("matmul_tflops", 0, false, 0, 1e6) * 1e12;
        g.arch = r.str("arch", "");
        g.sm = r.integer("sm", 0, false, 0, 200);
        g.bf16_native = r.boolean("bf16_native", true);
        g.flash_attention_2 = r.boolean("flash_attention_2", true);
        g.fp8_tensor = r.boolean("fp8_tensor", g.fp8_flops_per_s > 0);
        g.display = r.boolean("display", false);
        g.capability_source = r.str("capability_source");
        apply_card_memory(g);
        g.kernels = builtin_kernel_table();
        out.push_back(g);
      }
    }
    return out;
  }();
  return gpus;
}

const GpuSpec& find_gpu(const std::string& raw) {
  static const std::map<std::string, std::vector<std::string>> aliases = [] {
    std::map<std::string, std::vector<std::string>> out;
    for (std::size_t i = 0; i < kEmbeddedDataCount; ++i) {
      if (std::string(kEmbeddedData[i].name) != "gpus.json") continue;
      const json j = json::parse(kEmbeddedData[i].text);
      for (const auto& g : j.at("gpus")) out[g.at("id")] = g.value("aliases", std::vector<std::string>{});
    }
    return out;
  }();
  std::string name = lower(raw);
  for (const std::string prefix : {"nvidia-", "nvidia ", "geforce-", "geforce ", "tesla-", "tesla ", "rtx "})
    if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  std::vector<std::string> names;
  for (const auto& g : builtin_gpus()) {
    if (g.id == name || lower(g.name) == name) return g;
    for (const auto& a : aliases.at(g.id))
      if (a == name) return g;
    names.push_back(g.id);
  }
  throw InputError("--gpu: unknown GPU '" + brief_text(raw) + "'; nearest: " + join(nearest_names(name, names)) +
                   " (segadvise list gpus, or --vram-gib N for any other card)");
}

GpuSpec custom_gpu(double vram_gib, const GpuSpec* like) {
  if (!(vram_gib > 0) || vram_gib > kMaxVramGib) throw InputError("--vram-gib: expected a positive size in GiB, got " + std::to_string(vram_gib));
  // Without a named card, compute figures are an RTX A6000's (a middle-of-the-road workstation card)
  // so the step-time column stays meaningful; the memory verdict only uses vram_gib.
  GpuSpec g = like ? *like : find_gpu("a6000");
  g.id = like ? like->id : "custom";
  g.name = (like ? like->name + " with " : std::string("custom card, ")) + std::to_string(vram_gib).substr(0, 6) + " GiB";
  g.total_bytes = vram_gib * kGiB;
  g.custom_total = true;
  // a card named only by its memory is taken to drive a display, as the cards people own do
  if (!like) g.display = true;
  apply_card_memory(g);
  return g;
}

std::string resolve_lokr(const Family& fam, const LycorisPreset& preset, TrainingSetup& setup,
                         std::vector<std::string>& absent) {
  if (preset.algo != "lokr") return "LyCORIS " + preset.algo + " is not modelled (only lokr)";
  const Family::LycorisClasses& c = fam.lycoris_classes;
  if (!c.recorded) return "the module classes of " + fam.id + " are not recorded";
  if (preset.targets.empty()) return "apply_preset names no target_module";
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  int attention = 0, ffn = 0;
  // a whole-model class gives its factor to the parts no attention or FFN class of the preset holds
  // (taken as: module_algo_map's factor of the class nearest the Linear applies)
  for (const auto& [name, factor] : preset.targets) {
    if (has(c.attention, name)) attention = factor;
    else if (has(c.ffn, name)) ffn = factor;
    else if (!has(c.model, name)) absent.push_back(name);
  }
  for (const auto& [name, factor] : preset.targets)
    if (has(c.model, name)) {
      if (attention == 0) attention = factor;
      if (ffn == 0) ffn = factor;
    }
  setup.lokr_read = true;
  setup.lokr_attention_factor = attention;
  setup.lokr_ffn_factor = ffn;
  setup.lokr_full_matrix = preset.full_matrix;
  setup.lokr_linear_dim = preset.linear_dim;
  return "";
}

}  // namespace segadvise
