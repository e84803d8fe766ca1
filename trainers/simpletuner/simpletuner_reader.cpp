// SimpleTuner config.json -> TrainingSetup + Schedule, as the trainer reads it.
// Every rule cites SimpleTuner bc8e6ab (sections as in docs/sources/simpletuner.md).
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"
#include "segadvise/trainers/setup_rules.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"

namespace segadvise {

using nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

std::string type_name(const ordered_json& v) { return v.type_name(); }

std::string value_str(const ordered_json& v) { return brief(v); }

bool digit_string(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit); }

}  // namespace

std::optional<bool> config_bool(const ordered_json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    if (s == "true" || s == "1" || s == "yes") return true;
    if (s == "false" || s == "0" || s == "no" || s.empty()) return false;
  }
  if (v.is_number_integer()) return v.get<long long>() != 0;
  return std::nullopt;
}

namespace {

// Keys with or without a leading `--` (§0). The last spelling in the file wins, as argparse keeps
// the last occurrence of an option.
class Fields {
 public:
  Fields(const ordered_json& obj, std::string origin) : origin_(std::move(origin)) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      std::string k = it.key();
      const std::string norm = k.rfind("--", 0) == 0 ? k.substr(2) : k;
      if (map_.count(norm) && map_[norm].first != k)
        duplicates.push_back(norm);
      map_[norm] = {k, &it.value()};
    }
  }
  std::vector<std::string> duplicates;

  bool has(const std::string& k) const {
    auto it = map_.find(k);
    return it != map_.end() && !it->second.second->is_null();
  }
  const ordered_json* get(const std::string& k) const {
    auto it = map_.find(k);
    return (it == map_.end() || it->second.second->is_null()) ? nullptr : it->second.second;
  }
  std::string where(const std::string& k) const {
    auto it = map_.find(k);
    return origin_ + ": " + brief_text(it == map_.end() ? k : it->second.first);
  }
  [[noreturn]] void bad(const std::string& k, const std::string& expected) const {
    throw InputError(where(k) + ": expected " + expected + ", got " + type_name(*get(k)) + " " + value_str(*get(k)));
  }

  std::string str(const std::string& k, const std::string& def) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (v->is_string()) return v->get<std::string>();
    bad(k, "a string");
  }
  bool boolean(const std::string& k, bool def) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (const std::optional<bool> b = config_bool(*v)) return *b;
    bad(k, "true or false");
  }
  // finite numbers in [lo, hi]: JSON numbers and numeric strings ("NaN", "inf" are errors)
  double number(const std::string& k, double def, double lo = -std::numeric_limits<double>::max(),
                double hi = std::numeric_limits<double>::max()) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (!v->is_number() && !v->is_string()) bad(k, "a number");
    return checked_number(*v, where(k), lo, hi, NumericText::Accept);
  }
  // integers in [lo, hi]: JSON ints, floats with an integral value, digit strings (argparse's int());
  // a value past the range is an error, never wrapped
  long long integer(const std::string& k, long long def, long long lo, long long hi) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (!v->is_number() && !(v->is_string() && digit_string(v->get<std::string>()))) bad(k, "an integer");
    return checked_integer(*v, where(k), lo, hi, NumericText::Accept);
  }

 private:
  std::string origin_;
  std::map<std::string, std::pair<std::string, const ordered_json*>> map_;
};

// DEFAULT_MODEL_FLAVOUR per family (§3.1), used when a config leaves model_flavour unset
// (families/data/trainer/simpletuner.json).
const std::map<std::string, std::string>& default_flavours() { return simpletuner_facts().default_flavours; }

// Frame rate a family sets when the config has none (§1.5): num_frames defaults to framerate x 5.
int default_framerate(const std::string& trainer_family) {
  const auto& m = simpletuner_facts().default_framerates;
  auto it = m.find(trainer_family);
  return it == m.end() ? 0 : it->second;
}

bool file_exists(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string fill_placeholders(std::string v, const std::string& model_family, const std::string& output_dir) {
  auto replace = [&v](const std::string& from, const std::string& to) {
    for (std::size_t pos; (pos = v.find(from)) != std::string::npos;) v.replace(pos, from.size(), to);
  };
  if (!model_family.empty()) replace("{model_family}", model_family);
  if (!output_dir.empty()) replace("{output_dir}", output_dir);
  return v;
}

}  // namespace

ordered_json read_json_file(const std::string& path, const std::string& what) {
  return load_ordered_json_file(path, what);
}

// the indentation of a JSON text: spaces before the first indented key (4 when none is)
int json_indent(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos && first > 0 && line[first] == '"') return static_cast<int>(first);
  }
  return 4;
}

std::vector<std::string> candidate_paths(const std::string& value, const std::string& config_path,
                                         const std::string& cwd) {
  std::vector<std::string> out;
  auto add = [&out](const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  const fs::path v(value);
  if (v.is_absolute()) {
    add(v);
    return out;
  }
  std::vector<fs::path> rels;
  const std::string prefix = "config/examples/";
  if (value.rfind(prefix, 0) == 0) rels.push_back(fs::path("simpletuner/examples") / value.substr(prefix.size()));
  rels.push_back(v);
  const fs::path base = cwd.empty() ? fs::current_path() : fs::path(cwd);
  for (const auto& r : rels) add(base / r);
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(config_path), ec).parent_path();
  while (!dir.empty()) {
    for (const auto& r : rels) add(dir / r);
    if (dir == dir.root_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return out;
}

std::string resolve_config_path(const std::string& value, const std::string& key, const std::string& config_path,
                                const std::string& cwd) {
  const auto cands = candidate_paths(value, config_path, cwd);
  for (const auto& c : cands)
    if (file_exists(c)) return c;
  std::string tried;
  for (const auto& c : cands) tried += "\n  " + c;
  // a relative path inside the trainer's own repository (the folder above the config that holds
  // simpletuner/examples; config/examples/ is that folder under its other name): the repository does not
  // ship the file the example names, which no path of this machine mends
  std::string why;
  std::error_code ec;
  if (!fs::path(value).is_absolute())
    for (fs::path dir = fs::absolute(fs::path(config_path), ec).parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (fs::is_directory(dir / "simpletuner" / "examples", ec)) {
        why = ": the trainer's repository (" + dir.lexically_normal().string() + ") does not ship it" +
              (value.rfind("config/examples/", 0) == 0 ? " (config/examples/ is its simpletuner/examples/)" : "") +
              "; pass --data-backend FILE with your own";
        break;
      }
      if (dir == dir.root_path() || dir.parent_path() == dir) break;
    }
  if (key != "data_backend_config" && !why.empty()) why = ": the trainer's repository does not ship it";
  throw InputError(config_path + ": " + key + " '" + brief_text(value) + "' not found" + why + "; tried:" + tried);
}

const std::vector<std::string>& checkpointing_keys() {
  static const std::vector<std::string> k = {"gradient_checkpointing", "gradient_checkpointing_interval",
                                             "gradient_checkpointing_segment_stride", "gradient_checkpointing_backend",
                                             "gradient_checkpointing_offload_attention"};
  return k;
}

namespace {
ordered_json with_checkpointing_keys(const ordered_json& raw, const nlohmann::json& want);
}  // namespace

ordered_json with_schedule(const ordered_json& raw, const Schedule& s) {
  return with_keys(raw, ordered_json::parse(schedule_keys(s).dump()));
}

ordered_json with_keys(const ordered_json& raw, const ordered_json& knobs) {
  const std::vector<std::string>& ck = checkpointing_keys();
  const auto is_checkpointing = [&](const std::string& k) { return std::find(ck.begin(), ck.end(), k) != ck.end(); };
  nlohmann::json want = nlohmann::json::object();
  for (auto it = knobs.begin(); it != knobs.end(); ++it)
    if (is_checkpointing(it.key())) want[it.key()] = nlohmann::json::parse(it.value().dump());
  ordered_json out = want.empty() ? raw : with_checkpointing_keys(raw, want);
  // the other keys (a phase's fix): set in the spelling the file has, else plain, added at the end
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    if (is_checkpointing(it.key())) continue;
    const std::string dashed = "--" + it.key();
    const std::string key = out.contains(dashed) && !out.contains(it.key()) ? dashed : it.key();
    out[key] = it.value();
  }
  return out;
}

namespace {

// `raw` with the checkpointing keys of `want` (every one of the five; null: the trainer's default) set
// as with_schedule says.
ordered_json with_checkpointing_keys(const ordered_json& raw, const nlohmann::json& want) {
  // trainer defaults (§0): a key at its default that the config does not have is not added
  const nlohmann::json defaults = {{"gradient_checkpointing", true},
                                   {"gradient_checkpointing_interval", nullptr},
                                   {"gradient_checkpointing_segment_stride", nullptr},
                                   {"gradient_checkpointing_backend", "torch"},
                                   {"gradient_checkpointing_offload_attention", false}};
  bool dashed = false;
  std::size_t n_dashed = 0;
  for (auto it = raw.begin(); it != raw.end(); ++it) n_dashed += it.key().rfind("--", 0) == 0;
  dashed = n_dashed * 2 > raw.size();
  ordered_json out = ordered_json::object();
  std::map<std::string, bool> written;
  for (auto it = raw.begin(); it != raw.end(); ++it) {
    const std::string& k = it.key();
    const std::string norm = k.rfind("--", 0) == 0 ? k.substr(2) : k;
    if (!want.contains(norm)) {
      out[k] = it.value();
      continue;
    }
    if (written[norm]) continue;  // a second spelling of the same key: one is enough
    written[norm] = true;
    if (want[norm].is_null()) continue;  // unset = the trainer's default
    out[k] = want[norm];
  }
  for (const auto& k : checkpointing_keys()) {
    if (written[k] || want[k] == defaults[k]) continue;
    out[dashed ? "--" + k : k] = want[k];
  }
  return out;
}

}  // namespace

namespace {

// Whether a backend entry of dataset_type `type` trains (§1.1): disabled backends, embed caches,
// conditioning backends (they follow their main dataset and are not sampled alone) and eval sets do not.
bool trains(const Fields& b, const std::string& type) {
  if (b.boolean("disabled", false) || b.boolean("disable", false)) return false;
  static const std::vector<std::string> skipped = {"text_embeds", "image_embeds", "conditioning_image_embeds",
                                                   "distillation_cache"};
  if (std::find(skipped.begin(), skipped.end(), type) != skipped.end()) return false;
  // conditioning backends follow their main dataset and are not sampled alone; eval sets are not
  // training batches (§1.1)
  if (type == "conditioning" || type == "eval" || b.has("conditioning_type")) return false;
  static const std::vector<std::string> training = {"image", "video", "audio", "caption"};
  if (std::find(training.begin(), training.end(), type) == training.end())
    throw InputError(b.where("dataset_type") + ": '" + type +
                     "' is not one of image, video, audio, caption, conditioning, eval, text_embeds, image_embeds, "
                     "conditioning_image_embeds, distillation_cache");
  return true;
}

// The backend's resolution, the backend's own else the config's (§1.2), with its type.
struct BackendResolution {
  double res = 1024;
  std::string rtype;
  bool own = false;
};
BackendResolution backend_resolution(const Fields& b, const Fields& cfg) {
  const bool own_res = b.has("resolution");
  const Fields& rsrc = own_res ? b : cfg;
  std::string rtype = b.has("resolution_type") ? b.str("resolution_type", "pixel_area") : cfg.str("resolution_type", "pixel_area");
  if (rtype != "pixel" && rtype != "pixel_area" && rtype != "area")
    throw InputError((b.has("resolution_type") ? b.where("resolution_type") : cfg.where("resolution_type")) + ": '" +
                     brief_text(rtype) + "' is not one of pixel, pixel_area, area");
  double res = 1024;
  if (rsrc.has("resolution")) {
    const ordered_json& rv = *rsrc.get("resolution");
    if (rtype == "pixel_area") {
      // the edge must be an int or a digit string: 1024.0 raises a ValueError in the trainer (§1.2)
      if (rv.is_number_integer() || (rv.is_string() && digit_string(rv.get<std::string>())))
        res = static_cast<double>(rsrc.integer("resolution", 1024, -kMaxEdgePixels, kMaxEdgePixels));
      else
        throw InputError(rsrc.where("resolution") + ": pixel_area needs an integer edge in pixels, got " +
                         value_str(rv) + " (the trainer raises a ValueError)");
    } else {
      res = rsrc.number("resolution", 1024, -kMaxEdgePixels, kMaxEdgePixels);
    }
  }
  if (res <= 0) throw InputError(rsrc.where("resolution") + ": must be positive, got " + value_str(*rsrc.get("resolution")));
  if (rtype == "area" && res >= 20)
    throw InputError(rsrc.where("resolution") + ": " + value_str(*rsrc.get("resolution")) +
                     " megapixels in area mode (the trainer rejects 20 MP and above)");
  return BackendResolution{res, rtype, own_res};
}

// The aspect the largest bucket is formed at: --aspect, else the assumed source's, else (a random or
// closest crop) the largest of crop_aspect_buckets, recorded in the rules; `note` says which.
double backend_aspect(const Fields& b, const Family& fam, const TrainerReadOptions& opt, const BackendResolution& br,
                      bool crop, const std::string& crop_aspect, bool video, BackendShape& out, std::string& aspect_note) {
  const double res = br.res;
  const std::string& rtype = br.rtype;
  double aspect = opt.source_aspect > 0 ? opt.source_aspect : (video ? 16.0 / 9.0 : 1.0);
  aspect_note = opt.source_aspect > 0 ? "--aspect" : (video ? "assumed 16:9 source" : "assumed square source");
  if (crop && (crop_aspect == "random" || crop_aspect == "closest")) {
    // the largest bucket of crop_aspect_buckets (floats or {aspect, weight})
    const ordered_json* buckets = b.get("crop_aspect_buckets");
    if (!buckets || !buckets->is_array() || buckets->empty())
      throw InputError(b.where("crop_aspect") + ": '" + crop_aspect +
                       "' needs crop_aspect_buckets (the trainer raises an error without them)");
    double best_area = 0;
    for (const auto& bk : *buckets) {
      double a = 0;
      constexpr double kMaxAspect = 1000;
      if (bk.is_number()) a = checked_number(bk, b.where("crop_aspect_buckets"), -kMaxAspect, kMaxAspect);
      else if (bk.is_object() && bk.contains("aspect") && bk["aspect"].is_number())
        a = checked_number(bk["aspect"], b.where("crop_aspect_buckets"), -kMaxAspect, kMaxAspect);
      else throw InputError(b.where("crop_aspect_buckets") + ": " + value_str(bk) + " is neither a number nor {aspect, weight}");
      if (a <= 0) throw InputError(b.where("crop_aspect_buckets") + ": aspect must be positive, got " + value_str(bk));
      out.rules.crop_aspect_buckets.push_back(a);
      const ResolvedSize r = bucket_size(res, rtype, fam.geometry.alignment, a, false);
      if (r.width * static_cast<double>(r.height) > best_area) {
        best_area = r.width * static_cast<double>(r.height);
        aspect = a;
      }
    }
    aspect_note = "largest crop_aspect_bucket";
  }
  return aspect;
}

// A video backend's frames (§1.5): video.num_frames, else framerate x 5, under the family's frame rule;
// min_frames and max_frames kept for the dataset's buckets.
void backend_frames(const Fields& b, const Fields& cfg, const Family& fam, BackendShape& out,
                    std::vector<std::string>& warnings) {
  int frames = 0;
  const ordered_json* v = b.get("video");
  if (v && !v->is_object()) b.bad("video", "an object");
  if (v && v->contains("num_frames") && !(*v)["num_frames"].is_null()) {
    const ordered_json& nf = (*v)["num_frames"];
    if (!nf.is_number_integer() || nf.get<long long>() <= 0)
      throw InputError(b.where("video") + ".num_frames: expected a positive integer, got " + value_str(nf));
    frames = static_cast<int>(checked_integer(nf, b.where("video") + ".num_frames", 1, kMaxFrames));
  } else {
    // §1.5: num_frames defaults to framerate x 5
    const int fr = static_cast<int>(
        cfg.integer("framerate", default_framerate(fam.trainer_family), -kMaxFramerate, kMaxFramerate));
    if (fr <= 0)
      throw InputError(b.where("video") + ".num_frames: unset and no framerate for " + fam.name +
                       " (set video.num_frames)");
    frames = fr * 5;
    warnings.push_back(b.where("video") + ".num_frames unset: the trainer uses framerate " + std::to_string(fr) +
                       " x 5 = " + std::to_string(frames) + " frames");
  }
  if (fam.modality != "video") {
    warnings.push_back(b.where("dataset_type") + ": video backend for " + fam.name + ", which trains on images: frames ignored");
    frames = 1;
  }
  out.frames = apply_frame_rule(fam, frames);
  // min_frames (default num_frames, never below it: the trainer raises an error) and max_frames drop
  // videos when the dataset is read (dataset_buckets.hpp); both are counted under the frame rule (§1.5)
  out.rules.frame_rule = fam.geometry.frame_rule;
  if (v && v->contains("min_frames") && !(*v)["min_frames"].is_null()) {
    const int mf = static_cast<int>(checked_integer((*v)["min_frames"], b.where("video") + ".min_frames", 1, kMaxFrames));
    if (fam.modality == "video" && mf < frames)
      throw InputError(b.where("video") + ".min_frames: " + std::to_string(mf) + " is below num_frames " +
                       std::to_string(frames) + " (the trainer raises an error)");
    out.rules.min_frames = mf;
  }
  if (v && v->contains("max_frames") && !(*v)["max_frames"].is_null())
    out.rules.max_frames = static_cast<int>(checked_integer((*v)["max_frames"], b.where("video") + ".max_frames", 1, kMaxFrames));
  if (v && v->contains("bucket_strategy") && (*v)["bucket_strategy"].is_string())
    out.rules.bucket_strategy = (*v)["bucket_strategy"].get<std::string>();
  out.note += ", " + std::to_string(frames) + " frames" +
              (out.frames != frames ? " -> " + std::to_string(out.frames) + " (" + fam.geometry.frame_rule + ")" : "");
}

// One data-backend entry -> its shape, or nothing when it produces no training batches (§1.1).
bool backend_shape(const ordered_json& entry, std::size_t index, const std::string& file, const Fields& cfg,
                   const Family& fam, const TrainerReadOptions& opt, int global_batch, BackendShape& out,
                   std::vector<std::string>& warnings) {
  if (!entry.is_object())
    throw InputError(file + ": entry " + std::to_string(index) + ": expected an object, got " + type_name(entry));
  std::string id = entry.contains("id") && entry["id"].is_string() ? entry["id"].get<std::string>()
                                                                     : "entry " + std::to_string(index);
  const Fields b(entry, file + ": backend '" + id + "'");
  const std::string type = b.str("dataset_type", "image");
  if (!trains(b, type)) return false;
  out = BackendShape{};
  out.id = id;
  out.dataset_type = type;
  out.batch = static_cast<int>(b.integer("train_batch_size", global_batch, -kMaxBatch, kMaxBatch));
  if (out.batch <= 0) throw InputError(b.where("train_batch_size") + ": must be positive, got " + std::to_string(out.batch));
  if (type == "audio" || type == "caption" || fam.modality == "audio") {
    out.note = "backend '" + id + "' (" + type + "), batch " + std::to_string(out.batch);
    return true;
  }

  const BackendResolution br = backend_resolution(b, cfg);
  const bool own_res = br.own;
  const double res = br.res;
  const std::string& rtype = br.rtype;

  const bool crop = b.boolean("crop", false);
  const std::string crop_aspect = b.str("crop_aspect", "square");
  if (crop_aspect != "square" && crop_aspect != "preserve" && crop_aspect != "random" && crop_aspect != "closest")
    throw InputError(b.where("crop_aspect") + ": '" + brief_text(crop_aspect) + "' is not one of square, preserve, random, closest");
  const bool video = type == "video";
  const bool square = crop && crop_aspect == "square";
  std::string aspect_note;
  const double aspect = backend_aspect(b, fam, opt, br, crop, crop_aspect, video, out, aspect_note);
  if (b.has("maximum_image_size") != b.has("target_downsample_size"))
    warnings.push_back(b.where(b.has("maximum_image_size") ? "maximum_image_size" : "target_downsample_size") +
                       ": maximum_image_size and target_downsample_size must be set together (the trainer raises an "
                       "error); they only change an intermediate resize, not the trained size");
  const ResolvedSize r = bucket_size(res, rtype, fam.geometry.alignment, aspect, square);
  out.rules.instance_data_dir = b.str("instance_data_dir", "");
  out.rules.resolution = res;
  out.rules.resolution_type = rtype;
  out.rules.alignment = fam.geometry.alignment;
  out.rules.crop = crop;
  out.rules.crop_aspect = crop_aspect;
  out.rules.minimum_image_size = b.number("minimum_image_size", 0, 0, kMaxEdgePixels);
  out.rules.repeats = static_cast<int>(b.integer("repeats", 0, 0, 1000000));
  out.width = r.width;
  out.height = r.height;
  out.note = "backend '" + id + "': " + r.note + " [" + aspect_note + (own_res ? "" : ", config-level resolution") + "]";

  if (video) backend_frames(b, cfg, fam, out, warnings);
  out.note += ", batch " + std::to_string(out.batch);
  return true;
}

const Family& resolve_family(const Fields& cfg, const std::string& path, std::vector<std::string>& warnings) {
  if (!cfg.has("model_family")) throw InputError(path + ": model_family: missing (the trainer requires it)");
  const std::string mf = cfg.str("model_family", "");
  std::string flavour = cfg.str("model_flavour", "");
  if (mf == "infinitetalk") {
    // InfiniteTalk is Wan 2.1 I2V-14B with audio cross-attention adapters; it inherits Wan's
    // checkpointing and frame rule (§1.5, §3.2). The adapters are not in families/data.
    warnings.push_back(path + ": model_family infinitetalk is modelled as Wan 2.1 I2V 14B (its base): the audio "
                       "cross-attention adapters and audio encoder are not counted, so peak and time are lower bounds");
    return find_family_by_trainer("wan", "i2v-14b-2.1", path);
  }
  if (mf == "deepfloyd")
    throw InputError(cfg.where("model_family") +
                     ": deepfloyd is not modelled: DeepFloyd IF's U-Net channel widths are not in the references "
                     "(known: pixel space, T5-XXL capped at 77 tokens, flavour sizes I-M 400M, I-L 900M, I-XL 4.3B, II-M "
                     "450M, II-L 1.2B; DeepFloyd/IF-I-XL-v1.0 and IF-II-L-v1.0 model cards)");
  if (!flavour.empty()) return find_family_by_trainer(mf, flavour, path);
  const auto it = default_flavours().find(mf);
  if (it == default_flavours().end()) return find_family_by_trainer(mf, "", path);  // names the nearest families
  try {
    return find_family_by_trainer(mf, it->second, path);
  } catch (const InputError&) {
    const std::string pretrained = cfg.str("pretrained_model_name_or_path", "");
    if (pretrained.empty())
      throw InputError(path + ": model_flavour unset, so the trainer uses " + mf + "'s default flavour '" +
                       it->second + "', which is not modelled; set model_flavour to one that is (segadvise list models)");
    const Family& f = find_family_by_trainer(mf, "", path);
    warnings.push_back(path + ": model_flavour unset (the trainer's default '" + it->second +
                       "' is not modelled); pretrained_model_name_or_path '" + pretrained + "' taken as " + f.name);
    return f;
  }
}

// optimizer (§2.5): SimpleTuner names the cost model's table lacks are sized like one it has
// (families/data/trainer/simpletuner.json)
void read_optimizer(const Fields& cfg, TrainingSetup& s) {
  s.optimizer = cfg.str("optimizer", "adamw_bf16");
  const auto& kAlias = simpletuner_facts().optimizer_aliases;
  bool known = true;
  try {
    optimizer_info(s.optimizer);
  } catch (const InputError&) {
    known = false;
  }
  const auto it = kAlias.find(s.optimizer);
  if (known) {
    // the cost model sizes it itself
  } else if (it != kAlias.end()) {
    s.notes.push_back("optimizer " + s.optimizer + " sized as " + it->second.as + " (" + it->second.why + ")");
    s.optimizer = it->second.as;
  } else if (s.optimizer.rfind("adamw_schedulefree", 0) == 0) {
    s.notes.push_back("optimizer " + s.optimizer + " sized as adamw_schedulefree");
    s.optimizer = "adamw_schedulefree";
  }
  try {
    optimizer_info(s.optimizer);
  } catch (const InputError& e) {
    throw InputError(cfg.where("optimizer") + ": " + e.what());
  }
}

// base_model_precision, sdnq_use_hadamard and the combinations the trainer stops on
void read_precision(const Fields& cfg, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  std::string precision = cfg.str("base_model_precision", "no_change");
  try {
    if (precision_info(precision).backend == "ostris")  // ai-toolkit's quantizers, not a SimpleTuner choice
      throw InputError("'" + precision + "' is an ai-toolkit qtype (model.qtype), not a SimpleTuner base_model_precision");
  } catch (const InputError& e) {
    throw InputError(cfg.where("base_model_precision") + ": " + e.what());
  }
  if (precision == "bf16") precision = "no_change";
  // flavours whose checkpoint is already low precision (trainers/data/simpletuner-setup.json)
  const std::string flavour = cfg.str("model_flavour", "");
  for (const FlavourPrecision& f : flavour_precisions()) {
    if (precision != "no_change" || !f.matches(fam.trainer_family, flavour)) continue;
    if (!f.unless.empty() && cfg.boolean(f.unless, false)) continue;
    precision = f.precision;
    std::string note = f.note;
    const auto at = note.find("{flavour}");
    if (at != std::string::npos) note.replace(at, 9, flavour);
    s.notes.push_back(note);
  }
  s.base_precision = precision;
  const bool hadamard = cfg.boolean("sdnq_use_hadamard", false);
  if (hadamard && precision_info(precision).backend == "sdnq") s.sdnq_hadamard = true;
  else if (hadamard)
    r.warnings.push_back(cfg.where("sdnq_use_hadamard") + ": only used with an SDNQ base_model_precision (here " +
                         precision + "): ignored");
  s.trainer = "simpletuner";
  for (const auto& key : quantized_full_override_keys())
    if (cfg.boolean(key, false)) s.quantized_full_allowed = true;
  // the combinations the trainer stops on: the rule predict and advise apply too (setup_rules.hpp)
  for (auto& why : setup_rejections(fam, s)) r.rejections.push_back(std::move(why));
}

// training (§0 defaults: model_type full, lora_type standard, rank 16, adamw_bf16, bf16)
void read_training(const Fields& cfg, const std::string& path, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  s.model_type = parse_model_type(cfg.str("model_type", "full"), cfg.where("model_type"));
  if (!cfg.has("model_type")) r.warnings.push_back(path + ": model_type unset: the trainer's default is a full fine-tune");
  s.lora_type = parse_lora_type(cfg.str("lora_type", "standard"), cfg.where("lora_type"));
  const long long rank = cfg.integer("lora_rank", 16, -kMaxLoraRank, kMaxLoraRank);
  if (rank <= 0) throw InputError(cfg.where("lora_rank") + ": must be positive, got " + std::to_string(rank));
  s.lora_rank = static_cast<int>(rank);
  s.mixed_precision = cfg.str("mixed_precision", "bf16");
  if (s.mixed_precision != "bf16" && s.mixed_precision != "fp16" && s.mixed_precision != "no" && s.mixed_precision != "fp8")
    throw InputError(cfg.where("mixed_precision") + ": '" + brief_text(s.mixed_precision) + "' is not one of no, fp16, bf16, fp8");
  read_optimizer(cfg, s);
  read_precision(cfg, fam, r);
}

// LyCORIS (§2.4): the config file is read as the trainer hands it to the library. LoKr's size follows
// from its factors, full_matrix and linear_dim on the classes apply_preset targets, resolved against the
// family's module classes (resolve_lokr); what cannot be resolved keeps the estimate, with a warning.
void read_lycoris(const Fields& cfg, const std::string& path, const Family& fam, const TrainerReadOptions& opt, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  if (!cfg.has("lycoris_config"))
    throw InputError(path + ": lycoris_config: missing (lora_type lycoris needs the LyCORIS config file)");
  const std::string ly = resolve_config_path(
      fill_placeholders(cfg.str("lycoris_config", ""), cfg.str("model_family", ""), cfg.str("output_dir", "")),
      "lycoris_config", path, opt.cwd);
  const ordered_json lj = read_json_file(ly, "lycoris_config");
  if (!lj.is_object()) throw InputError("lycoris_config '" + ly + "': expected an object, got " + type_name(lj));
  const Fields lf(lj, ly);
  if (!lf.has("algo")) throw InputError(ly + ": algo: missing (the trainer requires it)");
  LycorisPreset preset;
  preset.algo = lf.str("algo", "");
  auto factor_of = [](const Fields& f, const std::string& key, int def) {
    const long long v = f.integer(key, def, -1, kMaxModelDim);
    if (v == 0) throw InputError(f.where(key) + ": must be -1 (the most balanced factorization) or positive, got 0");
    return static_cast<int>(v);
  };
  preset.factor = factor_of(lf, "factor", -1);
  preset.full_matrix = lf.boolean("full_matrix", false);
  // the trainer reads linear_dim (default 4) and requires it unless full_matrix is set
  if (!preset.full_matrix && !lf.has("linear_dim"))
    throw InputError(ly + ": linear_dim: missing (the trainer requires it unless full_matrix is true)");
  preset.linear_dim = static_cast<int>(lf.integer("linear_dim", 4, 1, 1LL << 30));
  if (const ordered_json* ap = lf.get("apply_preset")) {
    if (!ap->is_object()) lf.bad("apply_preset", "an object");
    const Fields pf(*ap, ly + ": apply_preset");
    const ordered_json* tm = pf.get("target_module");
    const ordered_json* mam = pf.get("module_algo_map");
    if (mam && !mam->is_object()) pf.bad("module_algo_map", "an object");
    if (tm && !tm->is_array()) pf.bad("target_module", "a list of module class names");
    for (const ordered_json& name : tm ? *tm : ordered_json::array()) {
      if (!name.is_string()) throw InputError(pf.where("target_module") + ": expected class names, got " + value_str(name));
      const std::string cls = name.get<std::string>();
      int factor = preset.factor;
      if (mam && mam->contains(cls)) {
        const ordered_json& m = (*mam)[cls];
        if (!m.is_object()) throw InputError(pf.where("module_algo_map") + "." + cls + ": expected an object");
        factor = factor_of(Fields(m, pf.where("module_algo_map") + "." + cls), "factor", preset.factor);
      }
      preset.targets.push_back({cls, factor});
    }
  }
  std::vector<std::string> absent;
  const std::string why = resolve_lokr(fam, preset, s, absent);
  for (const std::string& cls : absent)
    s.notes.push_back(ly + ": target_module '" + cls + "' is no module class of " + fam.id +
                      "'s blocks: nothing adapted there");
  std::string shape;
  if (why.empty()) {
    auto part = [](int f) { return f == 0 ? std::string("not adapted") : f < 0 ? std::string("factor -1") : "factor " + std::to_string(f); };
    shape = ": attention " + part(s.lokr_attention_factor) + ", FFN " + part(s.lokr_ffn_factor) +
            (s.lokr_full_matrix ? ", full w2" : ", w2 rank " + std::to_string(s.lokr_linear_dim));
  }
  s.notes.push_back("LyCORIS " + preset.algo + shape + " (" + ly + ")");
  if (!why.empty())
    r.warnings.push_back(ly + ": " + why + ": trainable parameters are estimated as LoKr factor 16 on the family's "
                         "LoRA targets (small next to the base weights)");
}

// weight streaming (§2.6), EMA, attention and compilation
void read_streaming(const Fields& cfg, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  s.ramtorch = cfg.boolean("ramtorch", false);
  s.ramtorch_percent = cfg.number("ramtorch_transformer_percent", 100, -1e6, 1e6);
  if (s.ramtorch_percent < 0 || s.ramtorch_percent > 100)
    throw InputError(cfg.where("ramtorch_transformer_percent") + ": must be 0..100, got " + std::to_string(s.ramtorch_percent));
  const long long swap = cfg.integer("musubi_blocks_to_swap", 0, -kMaxBlocksToSwap, kMaxBlocksToSwap);
  if (swap < 0)
    r.rejections.push_back("musubi_blocks_to_swap " + std::to_string(swap) + ": negative, the trainer stops");
  s.blocks_to_swap = static_cast<int>(std::max(0LL, swap));
  const int max_swap = fam.checkpointing.max_swappable_blocks;
  if (max_swap > 0 && s.blocks_to_swap > max_swap) {
    r.warnings.push_back(cfg.where("musubi_blocks_to_swap") + ": " + std::to_string(s.blocks_to_swap) +
                         " is clamped by the trainer to " + std::to_string(max_swap));
    s.blocks_to_swap = max_swap;
  }
  s.group_offload = cfg.boolean("enable_group_offload", false);
  if (s.ramtorch && s.blocks_to_swap > 0)
    r.rejections.push_back("ramtorch with musubi_blocks_to_swap " + std::to_string(s.blocks_to_swap) +
                           ": the trainer exits (use one or the other)");
  if (s.ramtorch && s.group_offload)
    r.rejections.push_back("ramtorch with enable_group_offload: the trainer raises an error");
  s.use_ema = cfg.boolean("use_ema", false);
  s.ema_on_gpu = s.use_ema && cfg.str("ema_device", "cpu") == "accelerator";
  s.attention = cfg.str("attention_mechanism", "diffusers");
  s.regional_compile = cfg.boolean("dynamo_use_regional_compilation", false) &&
                       cfg.str("dynamo_backend", "inductor") != "no";
  if (s.attention.rfind("sageattention", 0) == 0) {
    const std::string usage = cfg.str("sageattention_usage", "inference");
    if (usage.find("train") == std::string::npos)
      r.warnings.push_back(cfg.where("attention_mechanism") + ": " + s.attention +
                           " applies to inference only unless sageattention_usage includes training");
  }
}

// schedule (§2.7, §4)
void read_schedule(const Fields& cfg, const Family& fam, TrainerRead& r) {
  Schedule& sc = r.schedule;
  sc.checkpointing = cfg.boolean("gradient_checkpointing", true);
  const long long interval = cfg.integer("gradient_checkpointing_interval", 0, -kMaxScheduleStep, kMaxScheduleStep);
  const long long stride = cfg.integer("gradient_checkpointing_segment_stride", 0, -kMaxScheduleStep, kMaxScheduleStep);
  if (cfg.has("gradient_checkpointing_interval") && interval <= 0)
    r.rejections.push_back("gradient_checkpointing_interval " + std::to_string(interval) + ": the trainer raises an error (must be >= 1)");
  if (cfg.has("gradient_checkpointing_segment_stride") && stride <= 0)
    r.rejections.push_back("gradient_checkpointing_segment_stride " + std::to_string(stride) +
                           ": the trainer raises an error (must be a positive integer)");
  if (interval == 1)
    r.warnings.push_back(cfg.where("gradient_checkpointing_interval") + ": 1 is treated as unset (every block checkpointed)");
  sc.interval = interval > 1 ? static_cast<int>(interval) : 0;
  sc.stride = stride > 0 ? static_cast<int>(stride) : 0;
  const std::string backend = cfg.str("gradient_checkpointing_backend", "torch");
  try {
    sc.backend = parse_backend(backend);
  } catch (const InputError&) {
    r.warnings.push_back(cfg.where("gradient_checkpointing_backend") + ": '" + backend +
                         "' is not a backend the trainer knows: it falls back to torch");
    sc.backend = Backend::Torch;
  }
  sc.offload_attention = cfg.boolean("gradient_checkpointing_offload_attention", false);
  if (sc.checkpointing && is_unsloth(sc.backend) && !fam.checkpointing.backend_setter) {
    // no setter: Diffusers' torch checkpoint runs, the key is a silent no-op (§3.2, inferred there)
    r.warnings.push_back(cfg.where("gradient_checkpointing_backend") + ": " + to_string(sc.backend) + " has no effect on " +
                         fam.name + " (no backend setter: torch checkpointing runs); predicted as " +
                         (is_ffn(sc.backend) ? "torch-ffn" : "torch"));
    sc.backend = is_ffn(sc.backend) ? Backend::TorchFfn : Backend::Torch;
  }
  if (!sc.checkpointing) {
    for (const char* k : {"gradient_checkpointing_interval", "gradient_checkpointing_segment_stride"})
      if (cfg.has(k)) r.warnings.push_back(cfg.where(k) + ": ignored, gradient_checkpointing is false");
    if (cfg.has("gradient_checkpointing_backend") && sc.backend != Backend::Torch)
      r.warnings.push_back(cfg.where("gradient_checkpointing_backend") + ": ignored, gradient_checkpointing is false");
    sc.interval = sc.stride = 0;
    sc.backend = Backend::Torch;
  }
  if (cfg.boolean("gradient_checkpointing_offload_attention_prefetch", false) && !sc.offload_attention)
    r.warnings.push_back(cfg.where("gradient_checkpointing_offload_attention_prefetch") +
                         ": turned off by the trainer without gradient_checkpointing_offload_attention");
}

// data backends (§1): the file, and every backend that trains
void read_backends(const Fields& cfg, const std::string& path, const Family& fam, const TrainerReadOptions& opt, TrainerRead& r) {
  std::string db_value;
  if (!opt.data_backend_override.empty()) {
    if (!file_exists(opt.data_backend_override)) {
      read_input_file(opt.data_backend_override, "--data-backend");  // throws the reason: missing, a directory, a FIFO
      throw InputError("--data-backend '" + opt.data_backend_override + "': no such file");
    }
    r.data_backend_path = opt.data_backend_override;
  } else {
    // unset: <config dir>/multidatabackend.json (§1.6)
    db_value = cfg.has("data_backend_config")
                   ? cfg.str("data_backend_config", "")
                   : (fs::path(path).parent_path() / "multidatabackend.json").string();
    db_value = fill_placeholders(db_value, cfg.str("model_family", ""), cfg.str("output_dir", ""));
    r.data_backend_path = resolve_config_path(db_value, "data_backend_config", path, opt.cwd);
  }
  const ordered_json db = read_json_file(r.data_backend_path, "data_backend_config");
  if (!db.is_array())
    throw InputError("data_backend_config '" + r.data_backend_path + "': expected a JSON list of backends, got " + type_name(db));
  const long long global_batch = cfg.integer("train_batch_size", 4, -kMaxBatch, kMaxBatch);
  if (global_batch <= 0) throw InputError(cfg.where("train_batch_size") + ": must be positive, got " + std::to_string(global_batch));
  for (std::size_t i = 0; i < db.size(); ++i) {
    BackendShape shape;
    if (backend_shape(db[i], i, r.data_backend_path, cfg, fam, opt, static_cast<int>(global_batch), shape, r.warnings))
      r.backends.push_back(shape);
  }
  if (r.backends.empty())
    throw InputError("data_backend_config '" + r.data_backend_path +
                     "': no image, video, audio or caption dataset that trains (text-embed, conditioning, eval and "
                     "disabled backends are skipped)");
}

// the trained shape: the largest per-step activation load (pixels x frames x batch) over the backends
void apply_largest_backend(const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  auto load = [](const BackendShape& b) { return static_cast<double>(b.width) * b.height * b.frames * b.batch; };
  std::stable_sort(r.backends.begin(), r.backends.end(),
                   [&](const BackendShape& a, const BackendShape& b) { return load(a) > load(b); });
  const BackendShape& big = r.backends.front();
  if (fam.modality != "audio" && big.width > 0) {
    s.width = big.width;
    s.height = big.height;
    s.frames = fam.modality == "video" ? big.frames : 1;
  } else {
    const TrainingSetup d = default_setup(fam);
    s.width = d.width;
    s.height = d.height;
    s.frames = d.frames;
  }
  s.batch = big.batch;
  s.notes.push_back(big.note + (r.backends.size() > 1 ? " (largest of " + std::to_string(r.backends.size()) + " training backends)" : ""));
}

}  // namespace

TrainerRead read_simpletuner_config(const std::string& path, const TrainerReadOptions& opt) {
  TrainerRead r;
  r.trainer = "simpletuner";
  r.config_path = path;
  const std::string text = read_input_file(path, "config");
  r.raw = parse_ordered_json_text(text, "config '" + brief_text(path) + "'");
  r.indent = json_indent(text);
  if (!r.raw.is_object()) throw InputError("config '" + path + "': expected a JSON object of trainer keys, got " + type_name(r.raw));
  const Fields cfg(r.raw, path);
  for (const auto& d : cfg.duplicates)
    r.warnings.push_back(path + ": " + d + " is written both with and without `--`: the later one is used");

  const Family& fam = resolve_family(cfg, path, r.warnings);
  for (const NotModelled& n : simpletuner_not_modelled())  // trainers/data/simpletuner-setup.json
    if (fam.trainer_family == n.model_family && cfg.str(n.key, "") == n.value) throw InputError(cfg.where(n.key) + ": " + n.why);
  r.family = &fam;
  r.run = read_run_setup(r.raw, path);
  TrainingSetup& s = r.setup;
  s = TrainingSetup{};
  s.model_id = fam.id;
  s.notes.clear();
  s.notes.push_back("from " + path);
  read_training(cfg, path, fam, r);
  if (s.lora_type == LoraType::Lycoris && s.model_type == ModelType::Lora) read_lycoris(cfg, path, fam, opt, r);
  read_streaming(cfg, fam, r);
  read_schedule(cfg, fam, r);
  read_backends(cfg, path, fam, opt, r);
  apply_largest_backend(fam, r);
  read_multi_gpu_keys(r, opt.accelerate_config, opt.cwd);  // num_processes, fsdp_*, deepspeed_config, …
  r.inputs = {r.config_path, r.data_backend_path};
  r.shape_source = r.backends.front().note;
  return r;
}

// ---- the keys that move the run's other phases (run-phases §A2, §B; trainers/phases.hpp) ----

namespace {

// validation_resolution: "N" (N x N), "WxH", a comma list of either (every one is rendered: the
// largest by area sets the peak); values < 128 are megapixels (cmd_args.py:1033-1046).
std::pair<int, int> largest_validation_resolution(const std::string& value, const std::string& where) {
  std::pair<int, int> best{0, 0};
  std::stringstream list(value);
  std::string item;
  while (std::getline(list, item, ',')) {
    item.erase(std::remove_if(item.begin(), item.end(), ::isspace), item.end());
    if (item.empty()) continue;
    int w = 0, h = 0;
    const auto x = item.find('x');
    if (x != std::string::npos) {
      w = static_cast<int>(parse_integer_text(item.substr(0, x), where, 1, kMaxEdgePixels));
      h = static_cast<int>(parse_integer_text(item.substr(x + 1), where, 1, kMaxEdgePixels));
    } else {
      const double v = parse_number_text(item, where, 1e-3, kMaxEdgePixels);
      w = h = v < 128 ? static_cast<int>(std::lround(std::sqrt(v * 1e6))) : static_cast<int>(v);
    }
    if (static_cast<double>(w) * h > static_cast<double>(best.first) * best.second) best = {w, h};
  }
  if (best.first == 0) throw InputError(where + ": '" + brief_text(value) + "' names no resolution");
  return best;
}

}  // namespace

RunSetup read_run_setup(const nlohmann::ordered_json& raw, const std::string& origin) {
  const Fields cfg(raw, origin);
  RunSetup r;
  r.model_flavour = cfg.str("model_flavour", "");
  r.offload_during_startup = cfg.boolean("offload_during_startup", false);
  r.keep_vae_loaded = cfg.boolean("keep_vae_loaded", false);
  r.vae_cache_ondemand = cfg.boolean("vae_cache_ondemand", false);
  r.vae_cache_disable = cfg.boolean("vae_cache_disable", false);
  r.text_cache_ondemand = cfg.boolean("text_cache_ondemand", false);
  r.text_cache_disable = cfg.boolean("text_cache_disable", false);
  r.validation_disable = cfg.boolean("validation_disable", false);
  r.disable_benchmark = cfg.boolean("disable_benchmark", false);
  const auto res = largest_validation_resolution(cfg.str("validation_resolution", "256"), cfg.where("validation_resolution"));
  r.validation_width = res.first;
  r.validation_height = res.second;
  r.validation_num_video_frames = static_cast<int>(cfg.integer("validation_num_video_frames", 0, 0, kMaxFrames));
  r.num_validation_images = static_cast<int>(cfg.integer("num_validation_images", 1, 1, kMaxBatch));
  r.validation_guidance = cfg.number("validation_guidance", 7.5, 0, 1e6);
  r.validation_guidance_real = cfg.number("validation_guidance_real", 1.0, 0, 1e6);
  r.vae_enable_tiling = cfg.boolean("vae_enable_tiling", false);
  r.vae_enable_slicing = cfg.boolean("vae_enable_slicing", false);
  r.vae_batch_size = static_cast<int>(cfg.integer("vae_batch_size", 0, 0, kMaxBatch));
  r.text_encoder_batch_size = static_cast<int>(cfg.integer("text_encoder_batch_size", 1, 1, kMaxBatch));
  r.quantize_via = cfg.str("quantize_via", "accelerator");
  if (r.quantize_via != "accelerator" && r.quantize_via != "cpu" && r.quantize_via != "pipeline")
    throw InputError(cfg.where("quantize_via") + ": '" + r.quantize_via + "' is not accelerator, cpu or pipeline");
  for (int i = 1; i <= 4; ++i) {
    const std::string key = "text_encoder_" + std::to_string(i) + "_precision";
    const std::string p = cfg.str(key, "no_change");
    if (p != "no_change") {
      try {
        precision_info(p);
      } catch (const InputError&) {
        throw InputError(cfg.where(key) + ": '" + p + "' is not a precision the trainer knows");
      }
    }
    r.text_encoder_precision.push_back(p);
  }
  r.ramtorch_text_encoder = cfg.boolean("ramtorch", false) && cfg.boolean("ramtorch_text_encoder", false);
  r.set_grads_to_none = cfg.boolean("set_grads_to_none", false);
  r.use_ema = cfg.boolean("use_ema", false);
  r.ema_device = cfg.str("ema_device", "cpu");
  r.ema_cpu_only = cfg.boolean("ema_cpu_only", false);
  r.ema_validation = cfg.str("ema_validation", "comparison");
  r.offload_during_save = cfg.boolean("offload_during_save", false);
  r.save_text_encoder = cfg.boolean("save_text_encoder", false);
  // validation_steps is the older spelling (registry/validation.py:18)
  const char* interval_key = cfg.has("validation_step_interval") ? "validation_step_interval" : "validation_steps";
  r.validation_step_interval = static_cast<int>(cfg.integer(interval_key, 100, 0, std::numeric_limits<int>::max()));
  r.max_train_steps = static_cast<int>(cfg.integer("max_train_steps", 0, 0, std::numeric_limits<int>::max()));
  return r;
}

nlohmann::json schedule_keys(const Schedule& s) {
  nlohmann::json j;
  j["gradient_checkpointing"] = s.checkpointing;
  if (s.checkpointing) {
    j["gradient_checkpointing_interval"] = s.interval > 1 ? nlohmann::json(s.interval) : nlohmann::json(nullptr);
    j["gradient_checkpointing_segment_stride"] = s.stride > 0 ? nlohmann::json(s.stride) : nlohmann::json(nullptr);
    j["gradient_checkpointing_backend"] = to_string(s.backend);
  } else {
    j["gradient_checkpointing_interval"] = nullptr;
    j["gradient_checkpointing_segment_stride"] = nullptr;
    j["gradient_checkpointing_backend"] = "torch";
  }
  j["gradient_checkpointing_offload_attention"] = s.offload_attention;
  return j;
}

namespace {

// an interval without a stride: on the segmented path stride = interval is the same schedule
bool unstrided_interval(const Schedule& s) { return s.checkpointing && s.interval > 1 && s.stride <= 0; }

}  // namespace

nlohmann::json setup_keys(const Family& fam, const TrainingSetup& setup) {
  nlohmann::json j = nlohmann::json::object();
  // read_streaming's keys, where the setup differs from a config without them
  if (setup.ramtorch) {
    j["ramtorch"] = true;
    if (setup.ramtorch_percent < 100) j["ramtorch_transformer_percent"] = setup.ramtorch_percent;
  }
  if (setup.blocks_to_swap > 0) j["musubi_blocks_to_swap"] = setup.blocks_to_swap;
  if (setup.group_offload) j["enable_group_offload"] = true;
  if (setup.use_ema) {
    j["use_ema"] = true;
    j["ema_device"] = setup.ema_on_gpu ? "accelerator" : "cpu";
  }
  if (setup.attention != "diffusers") j["attention_mechanism"] = setup.attention;
  if (setup.regional_compile) {
    j["dynamo_use_regional_compilation"] = true;
    j["dynamo_backend"] = "inductor";  // read_streaming: compiled unless the backend is "no"
  }
  if (setup.mixed_precision != "bf16") j["mixed_precision"] = setup.mixed_precision;
  // read_precision's, always (a quantized base is the commonest difference between configs), as the
  // trainer spells it: int8-sdnq with sdnq_use_hadamard, no_change for bf16. Left out where a flavour of
  // the family implies the precision at no_change (Ideogram's fp8 checkpoint:
  // trainers/data/simpletuner-setup.json): the config's own no_change already means it there.
  bool by_flavour = false;
  for (const FlavourPrecision& f : flavour_precisions())
    by_flavour = by_flavour || (f.model_family == fam.trainer_family && f.precision == setup.base_precision);
  if (!by_flavour) {
    const bool hadamard_alias = setup.base_precision == "int8-sdnq-hadamard";
    j["base_model_precision"] = hadamard_alias ? "int8-sdnq"
                                : setup.base_precision == "bf16" ? "no_change" : setup.base_precision;
    if (hadamard_alias || setup.sdnq_hadamard) j["sdnq_use_hadamard"] = true;
  }
  return j;
}

nlohmann::json simpletuner_keys(const Family& fam, const Schedule& s, const TrainingSetup& setup) {
  nlohmann::json j = schedule_keys(s);
  if (j["gradient_checkpointing_interval"].is_null()) j["gradient_checkpointing_interval"] = 1;
  if (unstrided_interval(s) && interval_path(fam, s, setup).rule == IntervalRule::Segmented)
    j["gradient_checkpointing_segment_stride"] = s.interval;
  if (j["gradient_checkpointing_segment_stride"].is_null()) j.erase("gradient_checkpointing_segment_stride");
  j.update(setup_keys(fam, setup));
  return j;
}

std::vector<std::string> keys_to_remove(const Family& fam, const Schedule& s, const TrainingSetup& setup) {
  if (unstrided_interval(s) && fam.checkpointing.stride && interval_path(fam, s, setup).rule == IntervalRule::PerBlock)
    return {"gradient_checkpointing_segment_stride"};
  return {};
}

}  // namespace segadvise
