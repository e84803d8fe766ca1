// An sd-scripts run's dataset (sd_scripts_parts.hpp): the --dataset_config TOML (library/config_util.py:
// [general], [[datasets]], [[datasets.subsets]]; each value from the subset, else the dataset, else
// [general], else the command line, else the default, :437-470), or without one the N_name folders of
// --train_data_dir (:607-636). The bucket asserts (library/train_util.py:747-771) and the script's
// bucket_reso_steps divisor are rejections, as sd-scripts stops on them.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "sd_scripts/sd_scripts_parts.hpp"
#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise::readers::sd_scripts_parts {

namespace {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr int kMaxRepeats = 1 << 16;

// The dataset values as config_util.py resolves them, one level after another
struct Level {
  const ojson* j = nullptr;
  std::string name;  // "datasets[0]", "general", …
};

std::string what(const ojson& v) {
  const std::string d = v.dump();
  return brief_text(d);
}

// the first level that sets `key` (config_util.py search_value: a value that is not None)
const ojson* lookup(const std::vector<Level>& levels, const std::string& key, std::string& at) {
  for (const auto& l : levels)
    if (l.j && l.j->is_object() && l.j->contains(key) && !l.j->at(key).is_null()) {
      at = l.name + "." + key;
      return &l.j->at(key);
    }
  return nullptr;
}

int int_value(const std::string& file, const ojson& v, const std::string& at, int lo, int hi) {
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    throw InputError(file + ": " + at + ": is " + what(v) + "; expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(v.get<long long>());
}

// resolution: an int or [W, H] (config_util.py:244, __validate_and_convert_scalar_or_twodim), or the
// command line's "W,H" / "E"
std::pair<int, int> resolution_value(const std::string& file, const ojson& v, const std::string& at) {
  if (v.is_number_integer()) {
    const int e = int_value(file, v, at, 1, kMaxEdgePixels);
    return {e, e};
  }
  if (v.is_array() && v.size() == 2)
    return {int_value(file, v[0], at + "[0]", 1, kMaxEdgePixels), int_value(file, v[1], at + "[1]", 1, kMaxEdgePixels)};
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const std::size_t comma = s.find(',');
    if (comma == std::string::npos) {
      const int e = to_int(s, file + ": " + at, 1, kMaxEdgePixels);
      return {e, e};
    }
    return {to_int(s.substr(0, comma), file + ": " + at, 1, kMaxEdgePixels), to_int(s.substr(comma + 1), file + ": " + at, 1, kMaxEdgePixels)};
  }
  throw InputError(file + ": " + at + ": is " + what(v) + "; expected an integer or [W, H] (library/config_util.py:244)");
}

// the command line's dataset values (config_util.py's argparse_config level: train_batch_size as batch_size)
ojson command_line_level(const CommandLine& cl) {
  ojson a = ojson::object();
  auto text = [&](const char* k, const char* as) {
    if (cl.values.count(k)) a[as] = cl.values.at(k);
  };
  text("resolution", "resolution");
  text("train_batch_size", "batch_size");
  text("min_bucket_reso", "min_bucket_reso");
  text("max_bucket_reso", "max_bucket_reso");
  text("bucket_reso_steps", "bucket_reso_steps");
  if (cl.values.count("enable_bucket")) a["enable_bucket"] = flag(cl, "enable_bucket");
  if (cl.values.count("bucket_no_upscale")) a["bucket_no_upscale"] = flag(cl, "bucket_no_upscale");
  for (const char* k : {"color_aug", "random_crop", "shuffle_caption"})
    if (cl.values.count(k)) a[k] = flag(cl, k);
  for (const char* k : {"caption_dropout_rate", "caption_tag_dropout_rate", "token_warmup_step"})
    if (cl.values.count(k)) a[k] = cl.values.at(k);
  return a;
}

// a number given as text (the command line) or as a TOML value
int int_of(const std::string& file, const ojson* v, const std::string& at, int def, int lo, int hi) {
  if (!v) return def;
  if (v->is_string()) return to_int(v->get<std::string>(), file + ": " + at, lo, hi);
  return int_value(file, *v, at, lo, hi);
}
bool truthy(const ojson* v) {
  if (!v) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) return v->get<double>() != 0;
  if (v->is_string()) return v->get<std::string>() != "false" && v->get<std::string>() != "0";
  return false;
}

struct Shape {
  int w = 0, h = 0, batch = 1;
};

// One dataset's values, its subsets' datasets and the asserts. `levels`: the dataset's own, [general],
// the command line
void read_one(const std::string& file, const std::string& name, const std::vector<Level>& levels, const ojson* subsets,
              const CommandLine& cl, const std::string& data_dir_key, TrainerRead& r, Shape& best, std::string& best_from) {
  std::string at;
  const ojson* res = lookup(levels, "resolution", at);
  std::pair<int, int> wh{0, 0};
  std::string res_at = at;
  if (res) wh = resolution_value(file, *res, at);
  std::string bat;
  const int batch = int_of(file, lookup(levels, "batch_size", bat), bat, 1, 1, kMaxBatch);
  std::string a1, a2, a3, a4, a5;
  const bool buckets = truthy(lookup(levels, "enable_bucket", a1));
  const int min_reso = int_of(file, lookup(levels, "min_bucket_reso", a2), a2, 256, 1, kMaxEdgePixels);
  const int max_reso = int_of(file, lookup(levels, "max_bucket_reso", a3), a3, 1024, 1, kMaxEdgePixels);
  const int steps = int_of(file, lookup(levels, "bucket_reso_steps", a4), a4, 64, 1, kMaxEdgePixels);
  const bool no_upscale = truthy(lookup(levels, "bucket_no_upscale", a5));
  if (!res) {
    const int edge = r.family && r.family->id.rfind("sd1", 0) == 0 ? 512 : 1024;
    wh = {edge, edge};
    r.rejections.push_back(file + ": " + name + ": no resolution in the dataset, its [general] or --resolution: sd-scripts stops "
                           "(\"resolution is required\", library/train_util.py:1921); predicted at " + std::to_string(edge) + "x" +
                           std::to_string(edge));
  }
  // the script's bucket step divisor (verify_bucket_reso_steps, library/train_util.py:1093-1097)
  const nlohmann::json* e = script_entry(cl.script);
  if (e && e->contains("bucket_reso_steps")) {
    const int div = e->at("bucket_reso_steps").get<int>();
    if (steps % div != 0)
      r.rejections.push_back(name + ": bucket_reso_steps " + std::to_string(steps) + " must be divisible by " + std::to_string(div) + ": " +
                             cl.script + " stops (verify_bucket_reso_steps, library/train_util.py:1093-1097; " + e->at("source").get<std::string>() + ")");
  }
  if (buckets) {
    // min/max rounded to the step (down, up), then they must bracket the resolution (library/train_util.py:747-771)
    const int lo = min_reso - min_reso % steps;
    const int hi = max_reso % steps ? max_reso + steps - max_reso % steps : max_reso;
    if (std::min(wh.first, wh.second) < lo)
      r.rejections.push_back(name + ": min_bucket_reso " + std::to_string(lo) + " is above the resolution's smaller side " +
                             std::to_string(std::min(wh.first, wh.second)) + ": sd-scripts stops (\"min_bucket_reso must be equal or less than resolution\", library/train_util.py:766-768)");
    if (std::max(wh.first, wh.second) > hi)
      r.rejections.push_back(name + ": max_bucket_reso " + std::to_string(hi) + " is below the resolution's larger side " +
                             std::to_string(std::max(wh.first, wh.second)) + ": sd-scripts stops (\"max_bucket_reso must be equal or greater than resolution\", library/train_util.py:769-771)");
  }
  // the subsets' image folders (each a DatasetSpec where its directory is given)
  auto add_dir = [&](const std::string& dir, int repeats, const std::string& id) {
    DatasetSpec d;
    d.id = id;
    d.dir = dir;
    d.recursive = false;
    d.batch = batch;
    d.repeats = repeats;
    if (buckets) {
      d.rule = "area";
      d.width = wh.first;
      d.height = wh.second;
      d.align = steps;
      d.no_upscale = no_upscale;
      d.why = "enable_bucket: aspect buckets of at most " + std::to_string(wh.first) + "x" + std::to_string(wh.second) +
              " pixels, sides multiples of bucket_reso_steps " + std::to_string(steps) + " between " + std::to_string(min_reso) + " and " +
              std::to_string(max_reso) + " (library/train_util.py:231 make_bucket_resolutions): each sample counted at that area" +
              (no_upscale ? ", a smaller one at its own (bucket_no_upscale)" : "");
    } else {
      d.rule = "listed";
      d.listed = {{wh.first, wh.second}};
      d.why = "no enable_bucket: every image resized and cropped to the resolution";
    }
    r.datasets.push_back(d);
  };
  if (subsets && subsets->is_array()) {
    for (std::size_t i = 0; i < subsets->size(); ++i) {
      const ojson& s = (*subsets)[i];
      const std::string sname = name + ".subsets[" + std::to_string(i) + "]";
      if (!s.is_object()) throw InputError(file + ": " + sname + ": is " + what(s) + "; expected a table ([[datasets.subsets]])");
      std::vector<Level> sub = {{&s, sname}};
      sub.insert(sub.end(), levels.begin(), levels.end());
      std::string ra;
      const int repeats = int_of(file, lookup(sub, "num_repeats", ra), ra, 1, 1, kMaxRepeats);
      // the caching refusals (train_network.py:581-588; library/train_util.py:1102-1113) per subset
      std::string x;
      auto mark = [&](const char* m) {
        if (std::find(r.setup.notes.begin(), r.setup.notes.end(), m) == r.setup.notes.end()) r.setup.notes.push_back(m);
      };
      if (truthy(lookup(sub, "color_aug", x)) || truthy(lookup(sub, "random_crop", x))) mark(kNoLatentCache);
      for (const char* k : {"shuffle_caption", "caption_dropout_rate", "caption_tag_dropout_rate", "token_warmup_step"})
        if (truthy(lookup(sub, k, x))) mark(kNoTextCache);
      for (const char* k : {"color_aug", "random_crop"})
        if (truthy(lookup(sub, k, x)) && (flag(cl, "cache_latents") || flag(cl, "cache_latents_to_disk")))
          r.rejections.push_back(sname + ": " + k + " with --cache_latents: sd-scripts stops (\"when caching latents, either color_aug or random_crop cannot be used\", train_network.py:581-588)");
      for (const char* k : {"shuffle_caption", "caption_dropout_rate", "caption_tag_dropout_rate", "token_warmup_step"})
        if (truthy(lookup(sub, k, x)) && (flag(cl, "cache_text_encoder_outputs") || flag(cl, "cache_text_encoder_outputs_to_disk")))
          r.rejections.push_back(sname + ": " + k + " with --cache_text_encoder_outputs: sd-scripts stops (\"when caching Text Encoder output, either caption_dropout_rate, shuffle_caption, token_warmup_step or caption_tag_dropout_rate cannot be used\", library/train_util.py:1102-1113)");
      if (s.contains(data_dir_key) && s.at(data_dir_key).is_string()) add_dir(s.at(data_dir_key).get<std::string>(), repeats, sname + "." + data_dir_key);
    }
  }
  const long long tokens = static_cast<long long>(wh.first) * wh.second * batch;
  if (tokens > static_cast<long long>(best.w) * best.h * best.batch) {
    best = {wh.first, wh.second, batch};
    best_from = name + ": resolution " + std::to_string(wh.first) + "x" + std::to_string(wh.second) + (res ? " (" + res_at + ")" : " (assumed)") +
                ", batch_size " + std::to_string(batch) + (bat.empty() ? " (default)" : " (" + bat + ")");
  }
}

}  // namespace

void read_dataset(const CommandLine& cl, const std::string& named_in, const std::string& cwd, TrainerRead& r) {
  const ojson argv = command_line_level(cl);
  Shape best;
  std::string from;
  if (cl.values.count("dataset_config")) {
    const std::string& dc = cl.values.at("dataset_config");
    std::string file;
    const std::string* text = nullptr;
    const ShellWrittenFile* w = written_file(cl.written_files, dc);
    if (w) {
      file = dc + " (heredoc at " + named_in + ":" + std::to_string(w->line) + ")";
      text = &w->text;
    } else {
      // as sd-scripts opens it (the working directory), else beside or above the file naming it, said so
      std::vector<std::string> notes;
      try {
        file = resolve_near(dc, named_in, cwd, "--dataset_config", notes, "sd-scripts");
      } catch (const InputError&) {
        file.clear();  // not on this machine: the shape is assumed below
      }
      for (const auto& n : notes) r.warnings.push_back(n);
    }
    if (file.empty()) {
      // not on this machine: the shape from the command line, else assumed, and said so
      std::pair<int, int> wh{1024, 1024};
      if (r.family && r.family->id.rfind("sd1", 0) == 0) wh = {512, 512};
      if (argv.contains("resolution")) wh = resolution_value(named_in, argv.at("resolution"), "resolution");
      const int batch = argv.contains("batch_size") ? int_of(named_in, &argv.at("batch_size"), "train_batch_size", 1, 1, kMaxBatch) : 1;
      r.setup.width = wh.first;
      r.setup.height = wh.second;
      r.setup.batch = batch;
      AssumedShape a;
      a.missing = "--dataset_config '" + brief_text(dc) + "' is not on this machine (tried relative to the working directory and beside " + named_in + ")";
      a.size_from = argv.contains("resolution") ? "--resolution" : "the model's usual size";
      a.batch_from = argv.contains("batch_size") ? "--train_batch_size" : "sd-scripts' default";
      a.hint = "--resolution/--train_batch_size or the TOML give the real one";
      assume_shape(a, r);
      return;
    }
    const ojson root = text ? toml_text_json(*text, file, "sd-scripts dataset config") : toml_file_json(file, "sd-scripts dataset config");
    r.inputs.push_back(file);
    const ojson* general = root.contains("general") ? &root.at("general") : nullptr;
    if (general && !general->is_object()) throw InputError(file + ": general: is " + what(*general) + "; expected a table ([general])");
    if (!root.contains("datasets") || !root.at("datasets").is_array() || root.at("datasets").empty())
      throw InputError(file + ": datasets: missing or not a list of [[datasets]] tables (library/config_util.py)");
    const ojson& list = root.at("datasets");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string name = "datasets[" + std::to_string(i) + "]";
      if (!list[i].is_object()) throw InputError(file + ": " + name + ": is " + what(list[i]) + "; expected a table ([[datasets]])");
      const std::vector<Level> levels = {{&list[i], name}, {general, "general"}, {&argv, "the command line"}};
      const ojson* subsets = list[i].contains("subsets") ? &list[i].at("subsets") : nullptr;
      if (subsets && !subsets->is_array()) throw InputError(file + ": " + name + ".subsets: is " + what(*subsets) + "; expected [[datasets.subsets]] tables");
      read_one(file, name, levels, subsets, cl, "image_dir", r, best, from);
    }
    if (list.size() > 1) from += " (the largest of " + std::to_string(list.size()) + " datasets)";
    r.shape_source = file + " " + from;
  } else {
    // --train_data_dir's folders N_name (num_repeats N; library/config_util.py:607-636), the shape from the flags
    ojson subsets = ojson::array();
    if (cl.values.count("train_data_dir")) {
      const std::string dir = cl.values.at("train_data_dir");
      std::error_code ec;
      fs::path base(dir);
      if (base.is_relative()) {
        base = (cwd.empty() ? fs::current_path() : fs::path(cwd)) / dir;
        if (!fs::is_directory(base, ec)) base = fs::path(named_in).parent_path() / dir;  // beside the file naming it
      }
      if (fs::is_directory(base, ec)) {
        int seen = 0;
        for (fs::directory_iterator it(base, ec), end; !ec && it != end && seen < 4096; it.increment(ec), ++seen) {
          if (!it->is_directory(ec)) continue;
          const std::string n = it->path().filename().string();
          const std::size_t us = n.find('_');
          const std::string head = n.substr(0, us);
          if (head.empty() || !std::all_of(head.begin(), head.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) || head.size() > 6) {
            r.warnings.push_back("--train_data_dir: folder '" + brief_text(n) + "' has no repeat count (N_name): sd-scripts ignores it (library/config_util.py:611-614)");
            continue;
          }
          const int repeats = std::stoi(head);
          if (repeats < 1) continue;
          subsets.push_back(ojson{{"image_dir", it->path().string()}, {"num_repeats", repeats}});
        }
      } else {
        r.warnings.push_back("--train_data_dir '" + brief_text(dir) + "' is not on this machine: its images are not counted");
      }
    } else {
      r.warnings.push_back("neither --dataset_config nor --train_data_dir: sd-scripts has no images to train on");
    }
    const std::vector<Level> levels = {{&argv, "the command line"}};
    read_one(named_in, "the command line", levels, &subsets, cl, "image_dir", r, best, from);
    r.shape_source = named_in + " " + from;
  }
  r.setup.width = best.w;
  r.setup.height = best.h;
  r.setup.batch = best.batch;
}

}  // namespace segadvise::readers::sd_scripts_parts
