// diffusion-pipe: the main TOML (train.py), or a launch script running `deepspeed train.py --deepspeed
// --config X.toml`, and the dataset TOML its `dataset` key names (utils/dataset.py). Facts:
// trainers/diffusion_pipe/diffusion-pipe.json, each with its file and line at 8f83dbf.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise::readers {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

const char* kTrainer = "diffusion-pipe";

// A TOML read as JSON, with each key's line, for messages
struct Toml {
  std::string path;
  ordered_json j;
  std::map<std::string, int> lines;
  std::string at(const std::string& key) const {
    auto it = lines.find(key);
    return path + (it == lines.end() ? "" : ":" + std::to_string(it->second)) + ": " + key;
  }
};

Toml read_toml(const std::string& path, const std::string& what) {
  Toml t;
  t.path = path;
  t.j = toml_file_json(path, what, &t.lines);
  return t;
}

const ordered_json* table(const Toml& t, const ordered_json& parent, const std::string& key, const std::string& dotted) {
  if (!parent.contains(key)) return nullptr;
  if (!parent.at(key).is_object()) throw InputError(t.at(dotted) + ": expected a table ([" + key + "])");
  return &parent.at(key);
}

int int_at(const Toml& t, const ordered_json& v, const std::string& dotted, int lo, int hi) {
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    throw InputError(t.at(dotted) + ": is " + brief_text(v.dump()) + "; expected an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  return v.get<int>();
}

double number_at(const Toml& t, const ordered_json& v, const std::string& dotted) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    throw InputError(t.at(dotted) + ": is " + brief_text(v.dump()) + "; expected a positive number");
  return v.get<double>();
}

std::string string_at(const Toml& t, const ordered_json& v, const std::string& dotted) {
  if (!v.is_string()) throw InputError(t.at(dotted) + ": is " + brief_text(v.dump()) + "; expected a string");
  return v.get<std::string>();
}

// a key's list of names the trainer reads, as one warning (the first 12 with their lines)
void warn_unknown(const Toml& t, const ordered_json& obj, const json& known, const std::string& prefix, const std::string& why,
                  TrainerRead& r) {
  std::string unknown;
  int n = 0;
  for (const auto& kv : obj.items()) {
    if (std::find(known.begin(), known.end(), json(kv.key())) != known.end()) continue;
    const std::string dotted = prefix.empty() ? kv.key() : prefix + "." + kv.key();
    auto it = t.lines.find(dotted);
    if (++n <= 12)
      unknown += (unknown.empty() ? "" : ", ") + brief_text(dotted) + (it == t.lines.end() ? "" : " (line " + std::to_string(it->second) + ")");
  }
  if (n == 0) return;
  if (n > 12) unknown += " and " + std::to_string(n - 12) + " more";
  r.warnings.push_back(t.path + ": keys diffusion-pipe does not read, kept and never used: " + unknown + " (" + why + ")");
}

std::string lower_name(const std::string& path) {
  std::string n = lower(path);
  std::replace(n.begin(), n.end(), '\\', '/');
  return n;
}

const Family* known_family(const std::string& id) {
  for (const auto& f : builtin_families())
    if (f.id == id) return &f;
  return nullptr;
}

struct ModelPick {
  const json* type = nullptr;  // its entry in model_types.types
  const Family* family = nullptr;
  std::string why_not, guessed_from, note;
  int round = 16;
};

// Wan's variant: ckpt_path's config.json (model_type, dim) as models/wan/wan.py:80-174 reads it, where it is
// on this machine; else the path's name, a guess
void wan_variant(const json& facts, const Toml& t, const ordered_json& model, ModelPick& m) {
  const json& wv = facts.at("wan_variants");
  const std::string src = wv.at("source").get<std::string>();
  std::string ckpt = model.contains("ckpt_path") && model.at("ckpt_path").is_string() ? model.at("ckpt_path").get<std::string>() : "";
  const std::string tpath = model.contains("transformer_path") && model.at("transformer_path").is_string() ? model.at("transformer_path").get<std::string>() : "";
  if (ckpt.empty()) throw InputError(t.at("model") + ": ckpt_path: missing (models/wan/wan.py:80: the Wan checkpoint folder, required)");
  std::vector<fs::path> configs;
  std::error_code ec;
  if (!tpath.empty() && fs::is_directory(tpath, ec)) configs.push_back(fs::path(tpath) / "config.json");
  configs.push_back(fs::path(ckpt) / "config.json");
  configs.push_back(fs::path(ckpt) / "low_noise_model" / "config.json");
  for (const auto& c : configs) {
    if (!fs::is_regular_file(c, ec)) continue;
    const json cj = parse_json_text(read_text_file(c.string(), "Wan config.json"), c.string());
    const std::string mt = cj.is_object() && cj.contains("model_type") && cj.at("model_type").is_string() ? cj.at("model_type").get<std::string>() : "";
    const long long dim = cj.is_object() && cj.contains("dim") && cj.at("dim").is_number_integer() ? cj.at("dim").get<long long>() : 0;
    for (const auto& e : wv.at("by_config"))
      if (e.at("model_type") == mt && e.at("dim").get<long long>() == dim) {
        m.family = &find_family(e.at("family").get<std::string>());
        m.round = e.value("round", 16);
        m.note = "[model] type 'wan': " + c.string() + " says model_type " + mt + ", dim " + std::to_string(dim) + ": " + m.family->name + " (" + src + ")";
        return;
      }
    m.why_not = c.string() + ": model_type '" + brief_text(mt) + "', dim " + std::to_string(dim) +
                ": diffusion-pipe stops (RuntimeError 'Could not autodetect model variant', models/wan/wan.py:118-119)";
    return;
  }
  const std::string name = lower_name(ckpt + " " + tpath);
  for (const auto& e : wv.at("by_name"))
    if (contains_any(name, e.at("contains"))) {
      m.family = &find_family(e.at("family").get<std::string>());
      m.round = e.value("round", 16);
      break;
    }
  if (!m.family) m.family = &find_family(wv.at("default_guess").get<std::string>());
  m.guessed_from = "the Wan checkpoint path '" + brief_text(ckpt) + "' (ckpt_path; its config.json is not on this machine)";
}

ModelPick pick_model(const json& facts, const Toml& t, const ordered_json& model) {
  ModelPick m;
  if (!model.contains("type")) throw InputError(t.at("model") + ": type: missing (train.py:310 reads config['model']['type'])");
  const std::string type = string_at(t, model.at("type"), "model.type");
  for (const auto& e : facts.at("model_types").at("types"))
    if (e.at("type") == type) m.type = &e;
  if (!m.type) {
    std::string list;
    for (const auto& e : facts.at("model_types").at("types")) list += (list.empty() ? "" : ", ") + e.at("type").get<std::string>();
    m.why_not = t.at("model.type") + ": '" + brief_text(type) + "': diffusion-pipe stops (NotImplementedError 'Model type " + brief_text(type) +
                " is not implemented', train.py:382); its types: " + list;
    return m;
  }
  m.round = m.type->value("round", 16);
  if (m.type->value("by_checkpoint", false)) {
    wan_variant(facts, t, model, m);
    return m;
  }
  if (m.type->contains("by_name")) {
    const std::string key = m.type->at("by_name").get<std::string>();
    const char* path_key = key == "sd3" ? "diffusers_path" : "diffusion_model";
    const std::string value = model.contains(path_key) && model.at(path_key).is_string() ? model.at(path_key).get<std::string>() : "";
    for (const auto& e : facts.at("name_guesses").at(key))
      if (!value.empty() && contains_any(lower_name(value), e.at("contains"))) {
        m.family = &find_family(e.at("family").get<std::string>());
        m.guessed_from = "the " + std::string(path_key) + " name '" + brief_text(value) + "'";
        return m;
      }
    if (m.type->at("family").is_null()) {
      m.why_not = "[model] type '" + type + "': " + m.type->value("why", "no segadvise family") + " (" + m.type->at("source").get<std::string>() + "); --model names one";
      return m;
    }
    m.family = &find_family(m.type->at("family").get<std::string>());
    m.guessed_from = "[model] type '" + type + "' (no " + path_key + " name says the size: " + m.family->name + " assumed)";
    return m;
  }
  if (m.type->at("family").is_null()) {
    m.why_not = "[model] type '" + type + "': " + m.type->value("why", "no segadvise family") + " (" + m.type->at("source").get<std::string>() + "); --model names one";
    return m;
  }
  m.family = known_family(m.type->at("family").get<std::string>());
  if (!m.family)
    m.why_not = "[model] type '" + type + "': its family '" + m.type->at("family").get<std::string>() + "' is not in this segadvise build; --model names one";
  return m;
}

// the dataset TOML: the largest per-step shape (utils/dataset.py)
struct Shape {
  int w = 0, h = 0, frames = 1, batch = 1;
  std::string where;
};

// micro_batch_size_per_gpu: an int, or [[size, batch], …] (train.py:396-400): the batch for `res`
int batch_for(const Toml& t, const ordered_json& main, const char* key, double res, int fallback) {
  if (!main.contains(key)) return fallback;
  const ordered_json& v = main.at(key);
  if (v.is_number_integer()) return int_at(t, v, key, 1, kMaxBatch);
  if (!v.is_array() || v.empty()) throw InputError(t.at(key) + ": expected an integer or a list of [size, batch] (train.py:396-400)");
  int first = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
    if (!v[i].is_array() || v[i].size() != 2) throw InputError(t.at(key) + ": " + at + ": expected [size, batch]");
    const int b = int_at(t, v[i][1], at, 1, kMaxBatch);
    if (i == 0) first = b;
    if (v[i][0].is_number() && std::abs(v[i][0].get<double>() - res) < 0.5) return b;
  }
  return first;
}

void read_dataset(const json& facts, const Toml& main, const std::string& path, int round, const Family& fam, TrainerRead& r) {
  const Toml d = read_toml(path, "diffusion-pipe dataset config");
  r.inputs.push_back(path);
  const json& dk = facts.at("dataset_keys");
  warn_unknown(d, d.j, dk.at("top"), "", dk.at("source").get<std::string>(), r);
  if (!d.j.contains("directory") || !d.j.at("directory").is_array() || d.j.at("directory").empty())
    throw InputError(path + ": directory: missing or empty (a diffusion-pipe dataset config has [[directory]] entries, utils/dataset.py:940)");
  const bool video = fam.modality == "video";
  Shape best;
  long double best_tokens = -1;
  const int mb = batch_for(main, main.j, "micro_batch_size_per_gpu", 0, 1);
  const ordered_json& dirs = d.j.at("directory");
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const std::string name = "directory[" + std::to_string(i) + "]";
    if (!dirs[i].is_object()) throw InputError(d.at(name) + ": expected a table ([[directory]])");
    const ordered_json& dir = dirs[i];
    warn_unknown(d, dir, dk.at("directory"), name, dk.at("source").get<std::string>(), r);
    // a [[directory]] key wins over the file's (utils/dataset.py:456-513)
    auto get = [&](const std::string& k) -> std::pair<const ordered_json*, std::string> {
      if (dir.contains(k)) return {&dir.at(k), name + "." + k};
      if (d.j.contains(k)) return {&d.j.at(k), k};
      return {nullptr, k};
    };
    if (!dir.contains("path")) throw InputError(d.at(name) + ": path: missing (utils/dataset.py:477 reads directory_config['path'])");
    const std::string dpath = string_at(d, dir.at("path"), name + ".path");
    int repeats = 1;
    if (auto nr = get("num_repeats"); nr.first) repeats = int_at(d, *nr.first, nr.second, 1, 1 << 16);
    std::vector<std::array<int, 3>> sizes;  // (w, h, frames) this directory trains at
    std::vector<double> resolutions;
    std::vector<std::pair<int, int>> listed;
    if (auto sb = get("size_buckets"); sb.first) {
      // [[W, H, F], …] (utils/dataset.py:460-466)
      if (!sb.first->is_array() || sb.first->empty()) throw InputError(d.at(sb.second) + ": expected a list of [W, H, frames]");
      for (std::size_t k = 0; k < sb.first->size(); ++k) {
        const ordered_json& e = (*sb.first)[k];
        const std::string at = sb.second + "[" + std::to_string(k) + "]";
        if (!e.is_array() || e.size() != 3) throw InputError(d.at(sb.second) + ": " + at + ": expected [W, H, frames]");
        sizes.push_back({int_at(d, e[0], at, 1, kMaxEdgePixels), int_at(d, e[1], at, 1, kMaxEdgePixels), int_at(d, e[2], at, 1, kMaxFrames)});
      }
    } else {
      auto rs = get("resolutions");
      if (!rs.first) throw InputError(d.at(name) + ": resolutions: missing here and at the top (utils/dataset.py:469 reads dataset_config['resolutions'])");
      if (!rs.first->is_array() || rs.first->empty()) throw InputError(d.at(rs.second) + ": expected a list of sides or [W, H]");
      for (std::size_t k = 0; k < rs.first->size(); ++k) {
        const ordered_json& e = (*rs.first)[k];
        const std::string at = rs.second + "[" + std::to_string(k) + "]";
        if (e.is_array()) {
          if (e.size() != 2) throw InputError(d.at(rs.second) + ": " + at + ": expected [W, H] (utils/dataset.py:886 asserts two)");
          resolutions.push_back(std::sqrt(static_cast<double>(int_at(d, e[0], at, 1, kMaxEdgePixels)) * int_at(d, e[1], at, 1, kMaxEdgePixels)));
        } else {
          const double v = number_at(d, e, at);
          if (v > kMaxEdgePixels) throw InputError(d.at(rs.second) + ": " + at + ": " + brief_text(e.dump()) + " is above " + std::to_string(kMaxEdgePixels));
          resolutions.push_back(v);
        }
      }
      std::sort(resolutions.begin(), resolutions.end());
      resolutions.erase(std::unique(resolutions.begin(), resolutions.end()), resolutions.end());
      if (rs.first->size() > 3)
        r.rejections.push_back(d.at(rs.second) + ": " + std::to_string(rs.first->size()) + " resolutions: diffusion-pipe quits unless run with --i_know_what_i_am_doing (" +
                               dk.at("too_many_resolutions").get<std::string>() + ")");
      // aspect ratios: enable_ar_bucket (default false: 1.0), ar_buckets, else geomspace(min_ar, max_ar, num_ar_buckets)
      std::vector<double> ars = {1.0};
      bool ar_bucket = false;
      if (auto e = get("enable_ar_bucket"); e.first) {
        if (!e.first->is_boolean()) throw InputError(d.at(e.second) + ": expected true or false");
        ar_bucket = e.first->get<bool>();
      }
      if (ar_bucket) {
        ars.clear();
        if (auto ab = get("ar_buckets"); ab.first && ab.first->is_array() && !ab.first->empty()) {
          for (std::size_t k = 0; k < ab.first->size(); ++k) {
            const ordered_json& e = (*ab.first)[k];
            const std::string at = ab.second + "[" + std::to_string(k) + "]";
            if (e.is_array()) {
              if (e.size() != 2) throw InputError(d.at(ab.second) + ": " + at + ": expected [W, H] (utils/dataset.py:877 asserts two)");
              ars.push_back(number_at(d, e[0], at) / number_at(d, e[1], at));
            } else {
              ars.push_back(number_at(d, e, at));
            }
          }
        } else {
          auto mn = get("min_ar"), mx = get("max_ar"), nb = get("num_ar_buckets");
          for (const auto* k : {&mn, &mx, &nb})
            if (!k->first)
              throw InputError(d.at(name) + ": " + k->second + ": missing (enable_ar_bucket without ar_buckets reads min_ar, max_ar and num_ar_buckets, utils/dataset.py:502-505)");
          const double lo = number_at(d, *mn.first, mn.second), hi = number_at(d, *mx.first, mx.second);
          const int count = int_at(d, *nb.first, nb.second, 1, 1000);
          for (int k = 0; k < count; ++k)
            ars.push_back(count == 1 ? lo : lo * std::pow(hi / lo, static_cast<double>(k) / (count - 1)));  // numpy.geomspace
        }
      }
      std::sort(ars.begin(), ars.end());  // dedup_and_sort (utils/dataset.py:506)
      ars.erase(std::unique(ars.begin(), ars.end()), ars.end());
      std::vector<int> frames = {1};
      if (auto fb = get("frame_buckets"); fb.first) {
        if (!fb.first->is_array()) throw InputError(d.at(fb.second) + ": expected a list of frame counts");
        for (std::size_t k = 0; k < fb.first->size(); ++k)
          frames.push_back(int_at(d, (*fb.first)[k], fb.second + "[" + std::to_string(k) + "]", 1, kMaxFrames));
      }
      // the largest clip is the longest frame bucket (an image is 1 frame, at its own micro-batch); of
      // many resolutions the largest 16 (a smaller side cannot give the largest bucket)
      frames = {1, *std::max_element(frames.begin(), frames.end())};
      if (frames[1] == 1) frames.pop_back();
      const std::size_t first_res = resolutions.size() > 16 ? resolutions.size() - 16 : 0;
      for (std::size_t ri = first_res; ri < resolutions.size(); ++ri)
        for (const double ar : ars) {
          const double res = resolutions[ri];
          // utils/dataset.py:419-424: w = sqrt(area * ar), h = area / w, each to the nearest multiple
          const double area = res * res, edge = static_cast<double>(kMaxEdgePixels);
          const double wf = std::min(edge, std::sqrt(area * ar)), hf = std::min(edge, area / std::sqrt(area * ar));  // an extreme ratio capped
          const int w = std::max(round, static_cast<int>(std::lround(wf / round)) * round);
          const int h = std::max(round, static_cast<int>(std::lround(hf / round)) * round);
          if (res == resolutions.back()) listed.emplace_back(w, h);
          for (const int f : frames) sizes.push_back({w, h, f});
        }
    }
    // the dataset's files where its directory is on this machine: every image to the nearest aspect
    // bucket of the largest resolution (each item is cached and trained at every resolution)
    if (!listed.empty()) {
      DatasetSpec ds;
      ds.id = name + ".path";
      ds.dir = dpath;
      ds.recursive = false;
      ds.rule = "listed";
      ds.listed = listed;
      ds.repeats = repeats;
      ds.batch = batch_for(main, main.j, "image_micro_batch_size_per_gpu", resolutions.back(), batch_for(main, main.j, "micro_batch_size_per_gpu", resolutions.back(), mb));
      ds.why = "each item takes the aspect bucket nearest its own (log aspect, utils/dataset.py) at every listed resolution: counted at the largest";
      if (video) ds.why += "; a video's frame bucket is the longest not above its length (not modelled per file)";
      r.datasets.push_back(ds);
    }
    for (const auto& s : sizes) {
      const int f = video ? s[2] : 1;
      const double res = std::sqrt(static_cast<double>(s[0]) * s[1]);
      const int batch = f == 1 ? batch_for(main, main.j, "image_micro_batch_size_per_gpu", res, batch_for(main, main.j, "micro_batch_size_per_gpu", res, mb))
                               : batch_for(main, main.j, "micro_batch_size_per_gpu", res, mb);
      const long double tokens = static_cast<long double>(s[0]) * s[1] * f * batch;
      if (tokens > best_tokens) {
        best_tokens = tokens;
        best = {s[0], s[1], f, batch, path + " " + name + " ('" + brief_text(dpath) + "')"};
      }
    }
  }
  r.setup.width = best.w;
  r.setup.height = best.h;
  r.setup.frames = best.frames;
  r.setup.batch = best.batch;
  r.shape_source = best.where + ": " + std::to_string(best.w) + "x" + std::to_string(best.h) + ", " + std::to_string(best.frames) +
                   " frame(s), micro-batch " + std::to_string(best.batch) + " (the largest bucket of " + std::to_string(dirs.size()) +
                   " director" + (dirs.size() == 1 ? "y" : "ies") + "; " + dk.at("bucket_size").get<std::string>() + ")";
}

// the launch script: `deepspeed [--num_gpus N] train.py --deepspeed --config X.toml` (shell_script.hpp)
struct Launch {
  std::string config;  // the --config TOML found
  int gpus = 0;        // --num_gpus (0: not given)
};

Launch read_launch(const TrainerFacts& facts, const std::string& path, const TrainerReadOptions& o, TrainerRead& r) {
  const std::string text = read_text_file(path, "diffusion-pipe launch script");
  const CommandLine cl = parse_command_line(text, path, facts);
  r.warnings.insert(r.warnings.end(), cl.warnings.begin(), cl.warnings.end());
  if (cl.script != "train.py") throw InputError(path + ": no `train.py` command (diffusion-pipe runs `deepspeed train.py --deepspeed --config X.toml`)");
  const json& flags = facts.raw.at("command_line").at("flags");
  for (const auto& [k, line] : cl.lines)
    if (std::find(flags.begin(), flags.end(), json(k)) == flags.end())
      refuse_flag(r, k, "train.py has no such flag: argparse stops with \"unrecognized arguments\" (" + path + ", line " + std::to_string(line) +
                            "; " + facts.raw.at("command_line").at("source").get<std::string>() + ")");
  if (!cl.values.count("config")) throw InputError(path + ":" + std::to_string(cl.script_line) + ": --config: missing (train.py opens args.config, train.py:283)");
  Launch l;
  std::vector<std::string> notes;
  const FlagFile f = flag_file(cl, "config", cl.values.at("config"), path,
                               [&](const std::string& v) { return resolve_near(v, path, o.cwd, "--config", notes, kTrainer); }, r);
  if (f.text) throw InputError(path + ": --config: the script writes its config itself (a heredoc): write it to a file and pass that file");
  l.config = f.path;
  r.warnings.insert(r.warnings.end(), notes.begin(), notes.end());
  // the launcher's --num_gpus N / --num_gpus=N on the training command's line (before train.py)
  std::size_t line_start = 0;
  for (int ln = 1; ln < cl.script_line && line_start != std::string::npos; ++ln) {
    line_start = text.find('\n', line_start);
    if (line_start != std::string::npos) ++line_start;
  }
  if (line_start != std::string::npos) {
    const std::string line = text.substr(line_start, text.find('\n', line_start) - line_start);
    const std::size_t g = line.find("--num_gpus");
    if (g != std::string::npos && g < line.find("train.py")) {
      std::size_t v = g + 10;
      while (v < line.size() && (line[v] == ' ' || line[v] == '=' || line[v] == '\t')) ++v;
      std::size_t e = v;
      while (e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
      if (e > v) l.gpus = to_int(line.substr(v, e - v), path + ":" + std::to_string(cl.script_line) + ": --num_gpus", 1, 65536);
    }
  }
  return l;
}

void read_precision(const json& facts, const Toml& t, const ordered_json& model, const ModelPick& m, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const json& dt = facts.at("dtypes");
  const std::string src = dt.at("source").get<std::string>();
  auto dtype_of = [&](const char* key) -> std::string {
    const std::string dotted = std::string("model.") + key;
    const std::string v = string_at(t, model.at(key), dotted);
    if (!dt.at("names").contains(v) && !(std::string(key) == "transformer_dtype" && m.type->at("type") == "hidream" && v == "nf4"))
      throw InputError(t.at(dotted) + ": '" + brief_text(v) + "' is not one of float32, float16, bfloat16, float8, float8_e4m3fn, float8_e5m2: diffusion-pipe stops (KeyError, " + src + ")");
    return v;
  };
  if (!model.contains("dtype")) throw InputError(t.at("model") + ": dtype: missing (train.py:107 reads model_config['dtype'])");
  const std::string dtype = dtype_of("dtype");
  s.mixed_precision = dtype == "bfloat16" ? "bf16" : dtype == "float16" ? "fp16" : dtype == "float32" ? "no" : "bf16";
  if (dt.at("names").at(dtype).get<int>() == 1) r.warnings.push_back(t.at("model.dtype") + ": a float8 dtype is the autocast and base dtype: predicted as bf16");
  const std::string fkey = m.type->value("float8_key", "");
  for (const char* key : {"transformer_dtype", "diffusion_model_dtype"}) {
    if (!model.contains(key)) continue;
    const std::string v = dtype_of(key);
    if (fkey != key) {
      r.warnings.push_back(t.at(std::string("model.") + key) + ": " + m.type->at("module").get<std::string>() + " does not read it (" +
                           (fkey.empty() ? "the model has no such key" : "it reads " + fkey) + "): its weights stay in dtype");
      continue;
    }
    if (v == "nf4") {
      s.base_precision = "nf4-bnb";
      r.warnings.push_back(dt.at("hidream_extra").at("source").get<std::string>());
    } else if (dt.at("names").at(v).get<int>() == 1) {
      s.base_precision = dt.at("float8_precision").get<std::string>();
      s.notes.push_back(std::string(key) + " '" + v + "': " + dt.at("float8_note").get<std::string>() + " (" + src + ")");
    } else if (v == "float32") {
      s.weight_storage_bytes = 4;
    }
  }
}

void read_optimizer(const json& facts, const Toml& t, TrainerRead& r, int dp) {
  if (!t.j.contains("optimizer")) throw InputError(t.path + ": optimizer: missing ([optimizer] with its type: train.py:422 reads config['optimizer'])");
  const ordered_json& opt = *table(t, t.j, "optimizer", "optimizer");
  if (!opt.contains("type")) throw InputError(t.at("optimizer") + ": type: missing (train.py:655 reads optim_config['type'])");
  const std::string type = string_at(t, opt.at("type"), "optimizer.type");
  const json& o = facts.at("optimizers");
  const std::string src = o.at("source").get<std::string>();
  const std::string low = lower(type);
  std::string ours;
  if (o.at("builtin").contains(low)) {
    const json& e = o.at("builtin").at(low);
    ours = e.at("optimizer").get<std::string>();
    // torch AdamW's moments take the trained parameters' dtype: bf16 unless they are float32 (float32
    // adapters, a float32 transformer_dtype or dtype for a full fine-tune)
    const bool fp32 = r.setup.model_type == ModelType::Lora ? r.setup.adapter_weight_bytes == 4
                                                            : r.setup.weight_storage_bytes == 4 || r.setup.mixed_precision == "no";
    if (low == "adamw" && !fp32) ours = e.at("bf16").get<std::string>();
    if (e.value("lower_bound", false) || e.value("estimate", false))
      r.warnings.push_back(t.at("optimizer.type") + " '" + type + "': " + e.at("why").get<std::string>() + " (" + src + ")");
    else
      r.setup.notes.push_back("[optimizer] type '" + type + "': " + e.at("why").get<std::string>());
  } else if (o.at("classes").contains(type)) {
    ours = o.at("classes").at(type).at("optimizer").get<std::string>();
    r.setup.notes.push_back("[optimizer] type '" + type + "': " + o.at("classes").at(type).at("why").get<std::string>());
  } else {
    ours = "adamw";
    r.warnings.push_back(t.at("optimizer.type") + " '" + brief_text(type) + "': looked up as a pytorch_optimizer class (case-sensitive, train.py:699-700); its state is not known to segadvise: sized as AdamW");
  }
  r.setup.optimizer = ours;
  if (opt.contains("gradient_release") && opt.at("gradient_release").is_boolean() && opt.at("gradient_release").get<bool>()) {
    r.setup.fused_back_pass = true;
    r.setup.notes.push_back("[optimizer] gradient_release: each parameter is stepped in its gradient hook and its gradient freed (" + o.at("gradient_release").get<std::string>() + ")");
    if (dp > 1)
      r.rejections.push_back(t.at("optimizer.gradient_release") + ": " + std::to_string(dp) +
                             " data-parallel copies: diffusion-pipe stops (AssertionError 'When using gradient release, data parallel world size must be 1. Make sure pipeline_stages = num_gpus.', train.py:714)");
  }
}

}  // namespace

TrainerRead read_diffusion_pipe(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts(kTrainer);
  const json& raw = facts.raw;
  TrainerRead r;
  r.trainer = kTrainer;
  r.config_path = path;
  r.inputs = {path};
  std::string toml_path = path;
  Launch launch;
  if (lower(fs::path(path).extension().string()) != ".toml") {
    launch = read_launch(facts, path, o, r);
    toml_path = launch.config;
    r.config_file = toml_path;
    r.inputs.push_back(toml_path);
  }
  const Toml t = read_toml(toml_path, "diffusion-pipe config");
  if (!t.j.contains("model")) {
    if (t.j.contains("directory") || t.j.contains("resolutions"))
      throw InputError(toml_path + ": a diffusion-pipe dataset config ([[directory]], resolutions): pass the main config, the TOML whose `dataset` key names this file");
    throw InputError(toml_path + ": model: missing (a diffusion-pipe config has a [model] table with its type, train.py:310)");
  }
  const ordered_json& model = *table(t, t.j, "model", "model");
  const json& mk = raw.at("main_keys");
  warn_unknown(t, t.j, mk.at("top"), "", mk.at("why").get<std::string>(), r);
  warn_unknown(t, model, mk.at("model"), "model", mk.at("why").get<std::string>(), r);
  const ordered_json* adapter = table(t, t.j, "adapter", "adapter");
  if (adapter) warn_unknown(t, *adapter, mk.at("adapter"), "adapter", mk.at("why").get<std::string>(), r);
  if (const ordered_json* mon = table(t, t.j, "monitoring", "monitoring")) warn_unknown(t, *mon, mk.at("monitoring"), "monitoring", mk.at("why").get<std::string>(), r);

  ModelPick m = pick_model(raw, t, model);
  const Family& fam = choose_family(o, m.family, m.why_not);
  start_setup(r, fam, "diffusion-pipe");
  TrainingSetup& s = r.setup;
  if (o.model.empty()) {
    s.family_guessed_from = m.guessed_from;
    if (!m.note.empty()) s.notes.push_back(m.note);
    if (!m.guessed_from.empty())
      r.warnings.push_back(fam.name + " is guessed from " + m.guessed_from + "; --model names it");
  }
  if (!m.type) {  // --model named the family of a type diffusion-pipe does not have
    r.rejections.push_back(m.why_not);
    for (const auto& e : raw.at("model_types").at("types"))
      if (e.at("family") == fam.id) m.type = &e;
    if (!m.type) m.type = &raw.at("model_types").at("types").at(0);
  }
  const TrainerFamily* tf = facts.find(fam);

  // the run's GPUs: the launcher's --num_gpus; a TOML alone: as many as the pipeline needs
  int pipeline = 1;
  if (t.j.contains("pipeline_stages")) pipeline = int_at(t, t.j.at("pipeline_stages"), "pipeline_stages", 1, 1024);
  const int gpus = launch.gpus > 0 ? launch.gpus : pipeline;
  if (launch.gpus == 0 && pipeline > 1) s.notes.push_back("no launch script: run on pipeline_stages = " + std::to_string(pipeline) + " GPUs assumed");
  if (gpus % pipeline != 0)
    r.rejections.push_back(t.at("pipeline_stages") + ": " + std::to_string(pipeline) + " stages do not divide the " + std::to_string(gpus) +
                           " GPUs of --num_gpus: DeepSpeed's process grid stops");
  const int dp = std::max(1, gpus / pipeline);

  // save_every_n_* is required (train.py:95)
  if (!t.j.contains("save_every_n_epochs") && !t.j.contains("save_every_n_steps") && !t.j.contains("save_every_n_examples"))
    r.rejections.push_back(t.path + ": none of save_every_n_epochs, save_every_n_steps, save_every_n_examples: diffusion-pipe stops (AssertionError, train.py:95)");
  if (!t.j.contains("dataset")) throw InputError(t.path + ": dataset: missing (train.py:393 opens config['dataset'])");
  if (!t.j.contains("output_dir")) r.rejections.push_back(t.path + ": output_dir: missing: diffusion-pipe stops (KeyError, train.py:541-545)");

  read_precision(raw, t, model, m, r);
  // [adapter]: LoRA or LoKr at its rank and dtype; none: a full fine-tune (train.py:114-133, :531-536)
  const json& ad = raw.at("adapter");
  if (adapter) {
    s.model_type = ModelType::Lora;
    if (!adapter->contains("type")) throw InputError(t.at("adapter") + ": type: missing (train.py:117 reads adapter_config['type'])");
    const std::string atype = string_at(t, adapter->at("type"), "adapter.type");
    if (atype != "lora" && atype != "lokr")
      r.rejections.push_back(t.at("adapter.type") + " '" + brief_text(atype) + "': diffusion-pipe stops (NotImplementedError 'Adapter type " + brief_text(atype) + " is not implemented', train.py:133)");
    if (atype == "lokr") {
      s.lora_type = LoraType::Lycoris;
      r.warnings.push_back(t.at("adapter.type") + " 'lokr': PEFT LoKr's size on this model is an estimate (its factorization is PEFT's, not among the copied sources)");
    }
    if (!adapter->contains("rank")) throw InputError(t.at("adapter") + ": rank: missing (train.py:122 reads adapter_config['rank'])");
    s.lora_rank = int_at(t, adapter->at("rank"), "adapter.rank", 1, kMaxLoraRank);
    if (adapter->contains("alpha")) {
      r.rejections.push_back(t.at("adapter.alpha") + ": diffusion-pipe stops (NotImplementedError, train.py:118-122): '" + ad.at("alpha_refused").get<std::string>() + "'");
      r.refused_keys.push_back("adapter.alpha");  // the file written back drops it
    }
    const std::string adtype = adapter->contains("dtype") ? string_at(t, adapter->at("dtype"), "adapter.dtype") : string_at(t, model.at("dtype"), "model.dtype");
    if (!raw.at("dtypes").at("names").contains(adtype))
      throw InputError(t.at("adapter.dtype") + ": '" + brief_text(adtype) + "' is not in DTYPE_MAP: diffusion-pipe stops (KeyError, train.py:124)");
    s.adapter_weight_bytes = raw.at("dtypes").at("names").at(adtype).get<int>() == 4 ? 4 : 2;
  } else {
    s.model_type = ModelType::Full;
    s.notes.push_back("no [adapter]: a full fine-tune (train.py:531-537)");
    if (m.type->value("comfy", false) && s.base_precision != "no_change")
      r.rejections.push_back("a full fine-tune of a float8 ComfyUI model: diffusion-pipe stops (" + ad.at("full_quantized_refused").get<std::string>() + ")");
  }
  read_optimizer(raw, t, r, dp);

  // activation_checkpointing false / true / 'unsloth' (train.py:97-101, :587-603)
  r.schedule = Schedule{};
  if (t.j.contains("activation_checkpointing")) {
    const ordered_json& ac = t.j.at("activation_checkpointing");
    if (ac.is_boolean()) r.schedule.checkpointing = ac.get<bool>();
    else if (ac.is_string() && ac.get<std::string>() == "unsloth") {
      r.schedule.checkpointing = true;
      r.schedule.backend = Backend::Unsloth;
      s.notes.push_back("activation_checkpointing 'unsloth': " + raw.at("checkpointing").at("unsloth").get<std::string>());
    } else {
      r.rejections.push_back(t.at("activation_checkpointing") + " " + brief_text(ac.dump()) + ": diffusion-pipe stops (NotImplementedError 'activation_checkpointing=… is not implemented', train.py:598)");
    }
  }

  // blocks_to_swap (train.py:576-584; the model's enable_block_swap)
  const json& bs = raw.at("block_swap");
  if (t.j.contains("blocks_to_swap")) {
    const int n = int_at(t, t.j.at("blocks_to_swap"), "blocks_to_swap", 0, kMaxBlocksToSwap);
    const std::string at = t.at("blocks_to_swap") + " " + std::to_string(n);
    if (n > 0) {
      if (pipeline != 1) r.rejections.push_back(at + " with pipeline_stages " + std::to_string(pipeline) + ": diffusion-pipe stops (AssertionError '" + bs.at("requires_stages_1").get<std::string>() + "', train.py:577)");
      if (!adapter) r.rejections.push_back(at + " on a full fine-tune: diffusion-pipe stops (AssertionError '" + bs.at("requires_adapter").get<std::string>() + "', train.py:578)");
      if (m.type->value("swap", "none") == "none" || !tf || tf->blocks_to_swap_max <= 0) {
        r.rejections.push_back(at + ": " + m.type->at("module").get<std::string>() + " has no enable_block_swap: diffusion-pipe stops (NotImplementedError '" +
                               bs.at("not_implemented").get<std::string>() + "', models/base.py:438-439)");
      } else if (n > tf->blocks_to_swap_max) {
        r.rejections.push_back(at + " is above " + fam.name + "'s maximum " + std::to_string(tf->blocks_to_swap_max) + ": diffusion-pipe stops with an AssertionError ('Cannot swap more than …', " + tf->source + ")");
      } else {
        s.blocks_to_swap = musubi_swapped_chain_blocks(*tf, n);
        if (tf->blocks_to_swap_meaning == "flux_double_single")
          r.warnings.push_back("blocks_to_swap " + std::to_string(n) + " swaps " + std::to_string(n / 2) + " double and " + std::to_string((n - n / 2) * 2 + 1) +
                               " single blocks (" + tf->source + "): predicted as the last " + std::to_string(s.blocks_to_swap) + " blocks");
        s.notes.push_back("blocks_to_swap " + std::to_string(n) + ": the swapped blocks' weights wait on the CPU, their LoRA weights stay on the GPU (" + bs.at("source").get<std::string>() + ")");
      }
    }
  }

  // pipeline_stages: each GPU holds its stage's layers (train.py:605-617)
  int gas = 1;
  if (t.j.contains("gradient_accumulation_steps")) gas = int_at(t, t.j.at("gradient_accumulation_steps"), "gradient_accumulation_steps", 1, 1 << 16);
  s.pipeline_micro_batches = gas;
  if (pipeline > 1) {
    s.pipeline_stages = pipeline;
    const json& pl = raw.at("pipeline");
    const std::string method = t.j.contains("partition_method") ? string_at(t, t.j.at("partition_method"), "partition_method") : "parameters";
    if (lower(method) == "manual" && t.j.contains("partition_split")) {
      const ordered_json& ps = t.j.at("partition_split");
      if (!ps.is_array() || static_cast<int>(ps.size()) != pipeline - 1)
        r.rejections.push_back(t.at("partition_split") + ": must have pipeline_stages - 1 = " + std::to_string(pipeline - 1) +
                               " entries: diffusion-pipe stops (AssertionError, utils/pipeline.py:21)");
      r.warnings.push_back(t.at("partition_split") + ": a manual split: the prediction takes the blocks as split evenly (the layer list is the model's to_layers, not counted here)");
    }
    int blocks = 0;
    for (const auto& l : fam.block_lists) blocks += l.count;
    const int first = (blocks + pipeline - 1) / pipeline;
    const int in_flight = std::min(pipeline, gas);
    s.notes.push_back("pipeline_stages " + std::to_string(pipeline) + ": " + fam.name + "'s " + std::to_string(blocks) + " blocks split over " + std::to_string(pipeline) +
                      " GPUs, the first stage holding " + std::to_string(first) + " of them and " + std::to_string(in_flight) + " micro-batch(es) in flight; predicted per GPU for that stage (" +
                      pl.at("source").get<std::string>() + "; " + pl.at("schedule").get<std::string>() + ")");
    const double bubble = static_cast<double>(pipeline - 1) / (gas + pipeline - 1);
    s.notes.push_back("pipeline bubble: each step runs " + std::to_string(gas) + " micro-batch(es) in " + std::to_string(gas + pipeline - 1) + " stage slots, " +
                      std::to_string(static_cast<int>(std::lround(bubble * 100))) + "% of them idle; the step time predicted is one stage's pass for one micro-batch" +
                      (gas < pipeline ? ": raise gradient_accumulation_steps to shrink it" : ""));
    if (fam.id == "minimax-h3" && model.contains("cfg"))
      r.warnings.push_back("MiniMax-H3 CFG training needs pipeline_stages == 1 (models/minimax_h3.py:214)");
  }
  if (dp > 1) s.notes.push_back(std::to_string(dp) + " data-parallel copies (" + raw.at("pipeline").at("data_parallel").get<std::string>() + "): per-GPU memory is one copy's");
  if (t.j.contains("micro_batch_size_per_gpu")) batch_for(t, t.j, "micro_batch_size_per_gpu", 0, 1);  // validated

  // the dataset TOML, opened relative to the working directory as train.py:393 does
  const std::string dataset = string_at(t, t.j.at("dataset"), "dataset");
  std::vector<std::string> path_notes;
  std::string dpath, missing;
  try {
    dpath = resolve_near(dataset, toml_path, o.cwd, "dataset", path_notes, kTrainer);
  } catch (const InputError& e) {
    missing = e.what();
  }
  int round = m.round;
  if (missing.empty()) {
    read_dataset(raw, t, dpath, round, fam, r);
  } else {
    // the dataset file is not on this machine (a config shared without it): the family's usual shape at
    // the file's micro-batch, said to be assumed, rather than no answer
    example_shape(fam, s);
    s.batch = batch_for(t, t.j, "micro_batch_size_per_gpu", 0, 1);
    AssumedShape a;
    a.missing = missing;
    a.size_from = fam.name + "'s usual size";
    a.batch_from = "micro_batch_size_per_gpu";
    a.hint = "pass the dataset TOML beside the config for the real one";
    assume_shape(a, r);
  }
  for (const auto& n : path_notes) r.warnings.push_back(n);

  // the run: caching in this process before the model loads, one encoder at a time (train.py:512-531)
  TrainerRun& run = r.run.other;
  run.trainer = facts.id;
  run.name = facts.name;
  run.latent_caching = true;
  run.text_caching = !(model.contains("cache_text_embeddings") && model.at("cache_text_embeddings").is_boolean() && !model.at("cache_text_embeddings").get<bool>());
  run.text_caching_key = "[model] cache_text_embeddings";
  run.caching_batch = t.j.contains("caching_batch_size") ? int_at(t, t.j.at("caching_batch_size"), "caching_batch_size", 1, kMaxBatch) : 1;
  run.samples = false;
  run.sample_key = "";
  run.load_key = "[model] " + m.type->value("float8_key", std::string("dtype"));
  run.save_key = "save_every_n_epochs";
  run.source = raw.at("caching").at("source").get<std::string>();
  if (!run.text_caching) {
    // the text encoders stay on the GPU and run each step (models/wan/wan.py:77, 379)
    const FamilyPhaseData pd = phase_data(fam);
    const bool fp8 = model.contains("text_encoder_fp8") && model.at("text_encoder_fp8").is_boolean() && model.at("text_encoder_fp8").get<bool>();
    for (const auto& te : pd.text_encoders) {
      s.kept_model_bytes += te.params * (fp8 ? 1.0 : te.dtype_bytes);
      s.kept_models += (s.kept_models.empty() ? "" : ", ") + te.name;
    }
    r.warnings.push_back(t.at("model.cache_text_embeddings") + " false: the text encoder stays on the GPU and encodes every step (" + run.source + ")");
  }
  return r;
}

}  // namespace segadvise::readers
