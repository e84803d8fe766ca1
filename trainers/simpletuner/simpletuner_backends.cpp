// SimpleTuner's data-backend file (§1) and the paths a config names, as the trainer reads them: the
// shape each training backend feeds a step. Every rule cites SimpleTuner bc8e6ab (docs/sources/simpletuner.md).
#include "segadvise/trainers/simpletuner_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "simpletuner/simpletuner_parts.hpp"

namespace segadvise {

using nlohmann::ordered_json;
namespace fs = std::filesystem;
using namespace simpletuner;

namespace {

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

}  // namespace

namespace simpletuner {

std::string fill_placeholders(std::string v, const std::string& model_family, const std::string& output_dir) {
  auto replace = [&v](const std::string& from, const std::string& to) {
    for (std::size_t pos; (pos = v.find(from)) != std::string::npos;) v.replace(pos, from.size(), to);
  };
  if (!model_family.empty()) replace("{model_family}", model_family);
  if (!output_dir.empty()) replace("{output_dir}", output_dir);
  return v;
}

}  // namespace simpletuner

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
                   std::vector<std::string>& warnings, std::vector<std::string>& rejections) {
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
  // each falls back to the config's key (data_backend/config/image.py:130-131); maximum_image_size without
  // target_downsample_size raises ValueError (data_backend/config/validators.py:65-68); the other way
  // round nothing reads target_downsample_size. Either only changes an intermediate resize.
  auto size_key = [&](const char* k) -> const Fields* {
    const Fields* f = b.has(k) ? &b : cfg.has(k) ? &cfg : nullptr;
    return f && f->number(k, 0, -kMaxEdgePixels, kMaxEdgePixels) != 0 ? f : nullptr;
  };
  const Fields* most = size_key("maximum_image_size");
  const Fields* target = size_key("target_downsample_size");
  if (most && !target)
    rejections.push_back(most->where("maximum_image_size") + " without target_downsample_size: the trainer raises "
                         "ValueError (data_backend/config/validators.py:65-68)");
  else if (target && !most)
    warnings.push_back(target->where("target_downsample_size") + ": not used without maximum_image_size "
                       "(data_backend/config/validators.py:65-68); the trained size is unchanged");
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

// The reference conditioning sets a training backend links (conditioning_data: an id or a list of ids),
// of conditioning_type reference_strict or reference_loose: the ones that provide the model's
// reference latents (helpers/data_backend/factory.py:1094-1140, :1587-1617). The most any training
// backend links; a linked id that no backend of the file has is a warning.
int linked_reference_sets(const ordered_json& db, const std::string& file, const std::vector<BackendShape>& training,
                          std::vector<std::string>& warnings) {
  std::map<std::string, std::string> conditioning_type;
  for (const auto& e : db)
    if (e.is_object() && e.contains("id") && e["id"].is_string())
      conditioning_type[e["id"].get<std::string>()] =
          e.contains("conditioning_type") && e["conditioning_type"].is_string() ? e["conditioning_type"].get<std::string>() : "";
  int most = 0;
  for (const auto& e : db) {
    if (!e.is_object() || !e.contains("id") || !e["id"].is_string() || !e.contains("conditioning_data")) continue;
    const std::string id = e["id"].get<std::string>();
    if (std::none_of(training.begin(), training.end(), [&](const BackendShape& t) { return t.id == id; })) continue;
    const Fields b(e, file + ": backend '" + id + "'");
    const ordered_json* cdp = b.get("conditioning_data");
    if (!cdp || cdp->is_null()) continue;  // factory.py reads it with backend.get: null links nothing
    const ordered_json& cd = *cdp;
    std::vector<std::string> ids;
    if (cd.is_string()) ids.push_back(cd.get<std::string>());
    else if (cd.is_array())
      for (const auto& x : cd) {
        if (!x.is_string()) throw InputError(b.where("conditioning_data") + ": expected dataset ids, got " + value_str(x));
        ids.push_back(x.get<std::string>());
      }
    else throw InputError(b.where("conditioning_data") + ": expected a dataset id or a list of them, got " + value_str(cd));
    int refs = 0;
    for (const auto& c : ids) {
      const auto it = conditioning_type.find(c);
      if (it == conditioning_type.end())
        warnings.push_back(b.where("conditioning_data") + ": '" + brief_text(c) + "' names no backend of the file");
      else if (it->second == "reference_strict" || it->second == "reference_loose")
        ++refs;
    }
    most = std::max(most, refs);
  }
  return most;
}

}  // namespace

namespace simpletuner {

// The data-backend file is not on this machine (an example shared without it): one training backend
// with no keys of its own, so every size key falls back to the config's (data_backend/config/image.py:
// 130-131: resolution, resolution_type, train_batch_size, crop), of the family's modality, a video one at
// the family's example frames; said to be assumed (readers::assume_shape).
void assume_backend(const Fields& cfg, const std::string& value, const std::string& why, const Family& fam,
                    const TrainerReadOptions& opt, TrainerRead& r) {
  ordered_json entry = ordered_json::object();
  entry["id"] = "assumed";
  entry["dataset_type"] = fam.modality == "video" ? "video" : fam.modality == "audio" ? "audio" : "image";
  if (fam.modality == "video") entry["video"] = {{"num_frames", fam.example.frames}};
  const long long global_batch = cfg.integer("train_batch_size", 4, -kMaxBatch, kMaxBatch);
  if (global_batch <= 0) throw InputError(cfg.where("train_batch_size") + ": must be positive, got " + std::to_string(global_batch));
  BackendShape shape;
  backend_shape(entry, 0, "data_backend_config (not on this machine)", cfg, fam, opt, static_cast<int>(global_batch), shape,
                r.warnings, r.rejections);
  r.backends.push_back(shape);
  r.data_backend_path = value + " (not on this machine)";
  apply_largest_backend(fam, r);
  // why: "<config>: data_backend_config '…' not found[: the repository does not ship it …]; tried: …"
  readers::AssumedShape a;
  a.missing = why;
  const std::size_t tried = a.missing.find("; tried:");
  if (tried != std::string::npos) {
    // one line: "\n  PATH" each
    for (std::size_t pos = a.missing.find("\n  ", tried); pos != std::string::npos; pos = a.missing.find("\n  ", pos + 3))
      a.tried += (a.tried.empty() ? "" : ", ") + a.missing.substr(pos + 3, a.missing.find("\n  ", pos + 3) - pos - 3);
    a.missing.erase(tried);
  }
  a.trainer = "SimpleTuner stops at start without it (FileNotFoundError \"Data backend config file … not found.\", "
              "helpers/data_backend/factory.py:1839-1840)";
  a.size_from = std::string("one ") + entry["dataset_type"].get<std::string>() +
                " backend with no size keys of its own: the config's resolution and resolution_type" +
                (fam.modality == "video" ? ", " + fam.name + "'s example " + std::to_string(fam.example.frames) + " frames" : "");
  a.batch_from = cfg.has("train_batch_size") ? "the config's train_batch_size" : "train_batch_size's default";
  a.hint = "pass --data-backend FILE for the real one";
  readers::assume_shape(a, r);
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
    db_value = fill_placeholders(db_value, model_family_name(cfg, fam), cfg.str("output_dir", ""));
    try {
      r.data_backend_path = resolve_config_path(db_value, "data_backend_config", path, opt.cwd, &r.warnings);
    } catch (const InputError& e) {
      assume_backend(cfg, db_value, e.what(), fam, opt, r);
      return;
    }
  }
  const ordered_json db = read_json_file(r.data_backend_path, "data_backend_config");
  if (!db.is_array())
    throw InputError("data_backend_config '" + r.data_backend_path + "': expected a JSON list of backends, got " + type_name(db));
  const long long global_batch = cfg.integer("train_batch_size", 4, -kMaxBatch, kMaxBatch);
  if (global_batch <= 0) throw InputError(cfg.where("train_batch_size") + ": must be positive, got " + std::to_string(global_batch));
  for (std::size_t i = 0; i < db.size(); ++i) {
    BackendShape shape;
    if (backend_shape(db[i], i, r.data_backend_path, cfg, fam, opt, static_cast<int>(global_batch), shape, r.warnings,
                      r.rejections))
      r.backends.push_back(shape);
  }
  if (r.backends.empty())
    throw InputError("data_backend_config '" + r.data_backend_path +
                     "': no image, video, audio or caption dataset that trains (text-embed, conditioning, eval and "
                     "disabled backends are skipped)");
  const int refs = linked_reference_sets(db, r.data_backend_path, r.backends, r.warnings);
  if (refs > 0) {
    const std::string flavour = fam.trainer_family + ":" + cfg.str("model_flavour", "");
    const auto& in_sequence = simpletuner_facts().reference_latents_in_sequence;
    const std::string sets = std::to_string(refs) + " reference conditioning set" + (refs > 1 ? "s" : "");
    if (std::find(in_sequence.begin(), in_sequence.end(), flavour) != in_sequence.end()) {
      r.setup.reference_images = refs;
      r.setup.notes.push_back(sets + " (conditioning_data): " + flavour + " appends their latents to the image tokens, "
                              "each at the training size");
    } else {
      r.setup.notes.push_back(sets + " (conditioning_data): not counted in " + flavour +
                              "'s sequence (how this model uses reference latents is not in the sources read)");
    }
  }
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

}  // namespace simpletuner

std::string backend_list_error(const std::string& path, const ordered_json& j) {
  if (!j.is_array() || j.empty()) return "";
  std::vector<std::string> training;
  for (const auto& e : j) {
    if (!e.is_object() || !(e.contains("id") || e.contains("dataset_type"))) return "";
    const std::string type = e.contains("dataset_type") && e["dataset_type"].is_string() ? e["dataset_type"].get<std::string>() : "image";
    const simpletuner::Fields b(e, path);
    if (trains(b, type)) training.push_back((e.contains("id") && e["id"].is_string() ? "'" + brief_text(e["id"].get<std::string>()) + "' " : "") + "(" + brief_text(type) + ")");
  }
  std::string what = path + ": a SimpleTuner data-backend list (" + std::to_string(j.size()) + " backend(s)";
  if (!training.empty()) {
    what += "; training: ";
    for (std::size_t i = 0; i < training.size() && i < 4; ++i) what += (i ? ", " : "") + training[i];
    if (training.size() > 4) what += ", …";
  }
  what += "), the file a config's data_backend_config names (helpers/data_backend/factory.py:1843-1844), not a training config: "
          "it names no model, so nothing here says what it costs; check the config that names it";
  // the configs beside it that name it: its folder's subfolders' config.json (SimpleTuner's examples/NAME/)
  const fs::path file(path);
  const std::string name = file.filename().string();
  std::vector<std::string> naming;
  std::error_code ec;
  int seen = 0;
  for (fs::directory_iterator it(file.parent_path().empty() ? fs::path(".") : file.parent_path(), ec), end; !ec && it != end && seen < 1000;
       it.increment(ec), ++seen) {
    const fs::path cfg = it->path() / "config.json";
    if (!it->is_directory(ec) || !file_exists(cfg.string())) continue;
    std::string text;
    try {
      text = read_input_file(cfg.string(), "config");
    } catch (const InputError&) {
      continue;
    }
    if (text.find("\"" + name + "\"") != std::string::npos || text.find("/" + name + "\"") != std::string::npos)
      naming.push_back(cfg.lexically_normal().string());
  }
  std::sort(naming.begin(), naming.end());
  if (!naming.empty()) {
    what += " (named by ";
    for (std::size_t i = 0; i < naming.size() && i < 3; ++i) what += (i ? ", " : "") + naming[i];
    what += naming.size() > 3 ? ", …)" : ")";
  }
  return what;
}

}  // namespace segadvise
