// musubi-tuner: a training command line, or a --config_file TOML (sections flattened,
// parser_common.py:780-810), with the --dataset_config TOML that holds batch size, resolution and
// frames (dataset/config_utils.py). Facts: trainers/musubi/musubi.json.
#include <toml.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/families/analyzer.hpp"
#include "musubi/musubi_parts.hpp"

namespace segadvise::readers {

namespace {

namespace fs = std::filesystem;
using musubi_parts::flag;
using musubi_parts::where;

// toml11 parses arrays and inline tables by recursion: refuse nesting past kMaxJsonDepth first
// (outside strings and comments), and more keys than a JSON document may hold (kMaxJsonKeys in the
// file, kMaxKeysPerObject in one table or inline table: each `=` outside strings and comments is a
// key), naming the line and column
void check_toml_depth(const std::string& text, const std::string& path) {
  int depth = 0, line = 1;
  std::size_t line_start = 0, keys = 0;
  std::vector<std::size_t> keys_in(1, 0);  // the current table's keys, then one per open [ or {
  auto fail = [&](std::size_t i, const std::string& what) {
    throw InputError(path + ":" + std::to_string(line) + ":" + std::to_string(i - line_start + 1) + ": " + what);
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      const std::string close = multi ? std::string(3, c) : std::string(1, c);
      for (i += close.size(); i < text.size(); ++i) {
        if (text[i] == '\n') {
          if (!multi) break;  // toml11 reports the unterminated string
          ++line;
          line_start = i + 1;
        } else if (c == '"' && text[i] == '\\') {
          if (i + 1 < text.size() && text[i + 1] == '\n') {
            ++line;
            line_start = i + 2;
          }
          ++i;
        } else if (text.compare(i, close.size(), close) == 0) {
          i += close.size() - 1;
          break;
        }
      }
      if (i < text.size() && text[i] == '\n') --i;  // counted by the loop
    } else if (c == '[' || c == '{') {
      const bool header = depth == 0 && c == '[' &&
                          text.find_first_not_of(" \t", line_start) == i;  // `[table]` or `[[array]]` starts a line
      if (header) keys_in.front() = 0;
      if (++depth > kMaxJsonDepth) fail(i, "arrays and tables nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      keys_in.push_back(0);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
      keys_in.pop_back();
    } else if (c == '=') {
      if (++keys > kMaxJsonKeys) fail(i, "more than " + std::to_string(kMaxJsonKeys) + " keys");
      if (++keys_in.back() > kMaxKeysPerObject)
        fail(i, "more than " + std::to_string(kMaxKeysPerObject) + " keys in one table");
    }
  }
}

// (`script_text`: the text a launch script writes at `path` itself, FlagFile, instead of the disk's)
toml::value parse_toml(const std::string& path, const std::string& what, const std::string* script_text = nullptr) {
  const std::string text = script_text ? *script_text : read_text_file(path, what);  // the input file rules, with the usual message
  check_toml_depth(text, path);
  try {
    std::istringstream in(text);
    return toml::parse(in, path);
  } catch (const toml::syntax_error& e) {
    throw InputError(path + ":" + std::to_string(e.location().line()) + ":" + std::to_string(e.location().column()) +
                     ": not valid TOML: " + e.what());
  } catch (const std::exception& e) {
    throw InputError(path + ": not valid TOML: " + e.what());
  }
}

std::string at(const std::string& path, const toml::value& v, const std::string& key) {
  return path + ":" + std::to_string(v.location().line()) + ": " + key;
}

// what a TOML value is, for a message: its type, and a scalar's text cut to kMaxEchoChars
std::string found(const toml::value& v) {
  switch (v.type()) {
    case toml::value_t::table: return "a table";
    case toml::value_t::array:
      return !v.as_array().empty() && v.as_array().front().is_table() ? "an array of tables" : "an array";
    case toml::value_t::string: return "the string \"" + brief_text(v.as_string().str) + "\"";
    case toml::value_t::boolean: return std::string("the boolean ") + (v.as_boolean() ? "true" : "false");
    case toml::value_t::integer: return "the integer " + brief_text(std::to_string(v.as_integer()));
    case toml::value_t::floating: return "the float " + brief_text(toml::format(v));
    default: return "a " + toml::stringize(v.type());  // a date or time
  }
}

// "<file>:<line>: <key>: is <what it is>; expected <what>"
[[noreturn]] void mistyped(const std::string& path, const toml::value& v, const std::string& key,
                           const std::string& expected) {
  throw InputError(at(path, v, key) + ": is " + found(v) + "; expected " + expected);
}

// a --config_file TOML as flags: key -> (value as text, line)
CommandLine flatten_config(const toml::value& root, const std::string& path) {
  CommandLine cl;
  auto add = [&](const std::string& k, const toml::value& v) {
    std::string text;
    if (v.is_boolean()) text = v.as_boolean() ? "true" : "false";
    else if (v.is_integer()) text = std::to_string(v.as_integer());
    else if (v.is_floating()) text = std::to_string(v.as_floating());
    else if (v.is_string()) text = v.as_string().str;
    else if (v.is_array()) {
      // a list flag (network_args, optimizer_args: nargs="*"), as argparse takes it: its items
      for (const auto& item : v.as_array()) {
        if (item.is_table() || item.is_array()) mistyped(path, item, k, "a list of booleans, numbers or strings");
        text += (text.empty() ? "" : " ") + (item.is_string() ? item.as_string().str : toml::format(item));
      }
    } else
      mistyped(path, v, k, "a boolean, number, string or list (a section's key, parser_common.py:796-804)");
    cl.values[k] = text;
    cl.lines[k] = static_cast<int>(v.location().line());
  };
  for (const auto& kv : root.as_table()) {
    if (kv.second.is_table())
      for (const auto& inner : kv.second.as_table()) add(inner.first, inner.second);
    else
      add(kv.first, kv.second);
  }
  return cl;
}

// the family entry's musubi-specific fields (second_dit, control_in_sequence, fp8 rules) in trainers/musubi/musubi.json
const nlohmann::json* family_entry(const TrainerFacts& facts, const Family& fam) {
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == fam.id) return &e;
  return nullptr;
}

// one of general/datasets[i] -> int, with the dataset's value first
template <typename F>
auto ascend(const toml::value& ds, const toml::value* general, const std::string& key, F read) -> decltype(read(ds)) {
  if (ds.contains(key)) return read(ds.at(key));
  if (general && general->contains(key)) return read(general->at(key));
  return read(toml::value());
}

// an integer in [lo, hi] (the setup limits of constants.hpp), else the value and its type named
int bounded(const std::string& path, const toml::value& v, const std::string& key, int lo, int hi) {
  const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_integer() || v.as_integer() < lo || v.as_integer() > hi) mistyped(path, v, key, range);
  return static_cast<int>(v.as_integer());
}

std::pair<int, int> resolution_of(const std::string& path, const toml::value& v, const std::string& key) {
  if (v.is_uninitialized()) return {960, 544};  // dataset/config_utils.py:34
  if (v.is_integer()) {
    const int e = bounded(path, v, key, 1, kMaxEdgePixels);
    return {e, e};
  }
  if (!v.is_array() || v.as_array().size() != 2)
    mistyped(path, v, key, "an integer or [W, H] (dataset/config_utils.py:116)");
  return {bounded(path, v.as_array()[0], key + "[0]", 1, kMaxEdgePixels),
          bounded(path, v.as_array()[1], key + "[1]", 1, kMaxEdgePixels)};
}

// a dataset's num_repeats: musubi multiplies its sample list by it; past 65,536 it is no real dataset
constexpr int kMaxRepeats = 1 << 16;

int int_of(const std::string& path, const toml::value& v, const std::string& key, int def, int hi) {
  if (v.is_uninitialized()) return def;
  return bounded(path, v, key, 1, hi);
}

// FramePack (musubi.json families[].sections): a video dataset trains one section of
// fp_latent_window_size latent frames per sample, the count window x 4 - 3 frames give, and caching
// stops on a clip shorter than window x 4 + 1 frames (`shortest`: the dataset's shortest clip); an
// image dataset is one-frame training (one target frame), whose caching reads control images
int framepack_frames(const nlohmann::json& sections, const std::string& path, const toml::value& ds, const std::string& name,
                     bool video, int shortest, TrainerRead& r) {
  const std::string key = sections.at("dataset_key").get<std::string>(), src = sections.at("source").get<std::string>();
  const int window = int_of(path, ds.contains(key) ? ds.at(key) : toml::value(), name + "." + key,
                            sections.at("default").get<int>(), (kMaxFrames - 1) / 4);
  if (!video) {
    if (ds.contains("image_directory") && !ds.contains("control_directory"))
      r.rejections.push_back(path + ": " + name + ": an image dataset trains FramePack's one-frame training, whose caching "
                             "(fpack_cache_latents.py --one_frame) reads each image's control image, and it has no control_directory (" + src + ")");
    bool no_post = false;
    if (ds.contains("fp_1f_no_post")) {
      const toml::value& v = ds.at("fp_1f_no_post");
      if (!v.is_boolean()) mistyped(path, v, name + ".fp_1f_no_post", "true or false");
      no_post = v.as_boolean();
    }
    r.setup.notes.push_back(name + ": FramePack one-frame training: one target latent frame beside its clean context (" + src + ")");
    if (no_post)
      r.warnings.push_back(name + ".fp_1f_no_post: no zero post frame among the clean latents: counted with one (one control image, the post "
                           "frame and the 2x/4x inputs), an upper bound by one frame's tokens");
    return 1;
  }
  if (shortest < window * 4 + 1)
    r.rejections.push_back(path + ": " + name + ": a clip of " + std::to_string(shortest) + " frame(s), below the " +
                           std::to_string(window * 4 + 1) + " one section of " + key + " " + std::to_string(window) +
                           " needs: fpack_cache_latents.py stops with \"Not enough frames for FramePack\" (" + src + ")");
  r.setup.notes.push_back(name + ": FramePack trains one section per sample: " + key + " " + std::to_string(window) +
                          " latent frames (" + std::to_string(window * 4 - 3) + " frames' worth) beside its clean context, "
                          "whatever the clip's length (" + src + ")");
  return window * 4 - 3;
}

void read_dataset(const std::string& path, TrainerRead& r, const std::string* script_text = nullptr) {
  const toml::value root = parse_toml(path, "musubi dataset config", script_text);
  r.inputs.push_back(path);
  const toml::value* general = root.contains("general") ? &root.at("general") : nullptr;
  if (general && !general->is_table()) mistyped(path, *general, "general", "a table ([general])");
  if (!root.contains("datasets") || (root.at("datasets").is_array() && root.at("datasets").as_array().empty()))
    throw InputError(path + ": datasets: missing or empty (a musubi dataset config has [[datasets]] entries)");
  if (!root.at("datasets").is_array())
    mistyped(path, root.at("datasets"), "datasets", "an array of tables ([[datasets]] entries)");
  long best = -1;
  const auto& list = root.at("datasets").as_array();
  // FramePack's sections (musubi.json families[].sections): a sample is one section, not the clip
  const nlohmann::json* fe = family_entry(trainer_facts("musubi"), *r.family);
  const nlohmann::json* sections = fe && fe->contains("sections") ? &fe->at("sections") : nullptr;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const toml::value& ds = list[i];
    const std::string name = "datasets[" + std::to_string(i) + "]";
    if (!ds.is_table()) mistyped(path, ds, name, "a table (a [[datasets]] entry)");
    const auto wh = ascend(ds, general, "resolution", [&](const toml::value& v) { return resolution_of(path, v, name + ".resolution"); });
    const int batch = ascend(ds, general, "batch_size", [&](const toml::value& v) { return int_of(path, v, name + ".batch_size", 1, kMaxBatch); });
    int frames = 1, shortest = 1;  // the longest and the shortest clip a video dataset yields
    const bool video = ds.contains("video_directory") || ds.contains("video_jsonl_file");
    if (video) {
      std::string extraction = "head";
      if (ds.contains("frame_extraction")) {
        const toml::value& fe = ds.at("frame_extraction");
        if (!fe.is_string()) mistyped(path, fe, name + ".frame_extraction", "a string");
        extraction = fe.as_string().str;
      }
      if (extraction == "full") {
        frames = shortest = int_of(path, ds.contains("max_frames") ? ds.at("max_frames") : toml::value(), name + ".max_frames", 129, kMaxFrames);
      } else if (ds.contains("target_frames")) {
        const toml::value& tfv = ds.at("target_frames");
        if (!tfv.is_array()) mistyped(path, tfv, name + ".target_frames", "a list of integers");
        frames = 0;
        shortest = kMaxFrames;
        for (const auto& f : tfv.as_array()) {
          const int n = int_of(path, f, name + ".target_frames", 1, kMaxFrames);
          frames = std::max(frames, n);
          shortest = std::min(shortest, n);
        }
      }
    }
    if (sections) frames = framepack_frames(*sections, path, ds, name, video, shortest, r);
    if (wh.first <= 0 || wh.second <= 0 || batch <= 0 || frames <= 0)
      throw InputError(path + ": " + name + ": resolution, batch_size and frames must be positive");
    // the dataset's files, where its directory is on this machine (docs/datasets.md): every sample at the
    // resolution; with enable_bucket (default false, dataset/config_utils.py:35) musubi's BucketSelector
    // picks an aspect bucket of about that area, whose code is not among the copied sources
    const std::string dir_key = video ? "video_directory" : "image_directory";
    if (ds.contains(dir_key) && ds.at(dir_key).is_string()) {
      DatasetSpec d;
      d.id = name + "." + dir_key;
      d.dir = ds.at(dir_key).as_string().str;
      d.recursive = false;
      d.rule = "musubi";
      d.dataset_type = video ? "video" : "image";
      d.width = wh.first;
      d.height = wh.second;
      d.batch = batch;
      d.repeats = ascend(ds, general, "num_repeats", [&](const toml::value& v) { return int_of(path, v, name + ".num_repeats", 1, kMaxRepeats); });
      if (d.repeats < 1) throw InputError(path + ": " + name + ".num_repeats: must be at least 1");
      const bool buckets = ascend(ds, general, "enable_bucket", [&](const toml::value& v) {
        if (v.is_uninitialized()) return false;
        if (!v.is_boolean()) throw InputError(at(path, v, name + ".enable_bucket") + ": expected true or false");
        return v.as_boolean();
      });
      // bucket_no_upscale (default false, ignored without enable_bucket: docs/dataset_config.md) keeps a
      // smaller sample at its own area; 16 is taken as its bucket step (musubi's step is in its
      // BucketSelector, which is not among the copied sources)
      const bool no_upscale = buckets && ascend(ds, general, "bucket_no_upscale", [&](const toml::value& v) {
        if (v.is_uninitialized()) return false;
        if (!v.is_boolean()) throw InputError(at(path, v, name + ".bucket_no_upscale") + ": expected true or false");
        return v.as_boolean();
      });
      d.no_upscale = no_upscale;
      d.align = 16;
      if (buckets)
        d.why = std::string("enable_bucket: each sample takes an aspect bucket of about the resolution's area (musubi's BucketSelector, "
                            "not modelled): counted at the resolution") +
                (no_upscale ? ", or, bucket_no_upscale, a smaller sample at its own area" : "");
      if (video) {
        if (ds.contains("frame_extraction") && ds.at("frame_extraction").is_string()) d.frame_extraction = ds.at("frame_extraction").as_string().str;
        if (ds.contains("target_frames") && ds.at("target_frames").is_array())
          for (const auto& f : ds.at("target_frames").as_array()) d.target_frames.push_back((int_of(path, f, name + ".target_frames", 1, kMaxFrames) - 1) / 4 * 4 + 1);
        else
          d.target_frames = {1};  // dataset/config_utils.py:67
        d.frame_stride = int_of(path, ds.contains("frame_stride") ? ds.at("frame_stride") : toml::value(), name + ".frame_stride", 1, kMaxFrames);
        d.frame_sample = int_of(path, ds.contains("frame_sample") ? ds.at("frame_sample") : toml::value(), name + ".frame_sample", 1, kMaxFrames);
        d.max_frames = int_of(path, ds.contains("max_frames") ? ds.at("max_frames") : toml::value(), name + ".max_frames", 129, kMaxFrames);
      }
      r.datasets.push_back(d);
    }
    const long tokens = static_cast<long>(wh.first) * wh.second / 64 * frames * batch;
    if (tokens > best) {
      best = tokens;
      r.setup.width = wh.first;
      r.setup.height = wh.second;
      r.setup.batch = batch;
      r.setup.frames = frames;
      r.shape_source = path + " " + name + ": resolution [" + std::to_string(wh.first) + ", " + std::to_string(wh.second) +
                       "], batch_size " + std::to_string(batch) + ", " + std::to_string(frames) + " frame(s)" +
                       (list.size() > 1 ? " (the largest of " + std::to_string(list.size()) + " datasets)" : "");
    }
  }
  if (r.setup.frames > 1) {
    if (r.family->modality != "video") throw InputError(path + ": video datasets, but " + r.family->name + " trains on images");
    // "the number of target_frames must be N*4+1 … otherwise it will be truncated" (docs/dataset_config.md)
    const int f = (r.setup.frames - 1) / 4 * 4 + 1;
    if (f != r.setup.frames) r.warnings.push_back("target_frames " + std::to_string(r.setup.frames) + " is truncated to " + std::to_string(f) + " (N*4+1)");
    r.setup.frames = f;
  }
}

}  // namespace

std::string resolve_near(const std::string& value, const std::string& config_path, const std::string& cwd,
                         const std::string& key, std::vector<std::string>& notes, const std::string& trainer) {
  std::vector<fs::path> tried;
  const bool windows = value.size() > 2 && std::isalpha(static_cast<unsigned char>(value[0])) && value[1] == ':';
  const fs::path beside = fs::path(config_path).parent_path();
  const std::string name = value.substr(value.find_last_of("/\\") == std::string::npos ? 0 : value.find_last_of("/\\") + 1);
  if (fs::path(value).is_absolute() || windows) {
    if (!windows) tried.push_back(value);
    if (!name.empty()) tried.push_back(beside / name);
  } else {
    tried.push_back((cwd.empty() ? fs::current_path() : fs::path(cwd)) / value);
    tried.push_back(beside / value);
    // the trainer's repository as the working directory, the config in a folder below it
    // (examples/x.toml naming examples/dataset.toml): the folders above the config, up to three
    fs::path up = beside;
    for (int i = 0; i < 3 && up.has_parent_path() && up.parent_path() != up; ++i) {
      up = up.parent_path();
      tried.push_back(up / value);
    }
  }
  std::string list;
  for (std::size_t i = 0; i < tried.size(); ++i) {
    std::error_code ec;
    if (fs::exists(tried[i], ec)) {
      if (i > 0 || windows)
        notes.push_back(key + " '" + brief_text(value) + "' is not at " + (tried.size() > 1 && i > 0 ? tried[0].string() : value) +
                        ", where " + trainer + " opens it (relative to its working directory): read from " + tried[i].string() + ", beside " +
                        fs::path(config_path).filename().string());
      return tried[i].string();
    }
    list += (list.empty() ? "" : ", ") + tried[i].string();
  }
  throw InputError(config_path + ": " + key + " '" + brief_text(value) + "': no such file (tried " + (list.empty() ? value : list) + ")");
}

namespace {

void read_flags(const TrainerFacts& facts, const CommandLine& cl, const TrainerFamily* tf, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const std::string& path = r.config_path;
  bool attention = false;
  for (const auto& a : facts.raw.at("attention_flags").at("flags")) attention |= flag(cl, a.get<std::string>());
  if (!attention)
    r.rejections.push_back("no attention flag (--sdpa, --flash_attn, --flash3, --sage_attn or --xformers): musubi stops (trainer_base.py:1513)");
  // the kernel the flag picks (trainer_base.py:1501-1508), where the card decides whether it runs (card_limits.hpp)
  if (!flag(cl, "sdpa") && flag(cl, "flash_attn")) s.attention = "flash-attn";
  else if (!flag(cl, "sdpa") && flag(cl, "xformers")) s.attention = "xformers";
  for (const auto& f : facts.raw.at("refused_flags"))
    if (flag(cl, f.at("flag").get<std::string>())) refuse_flag(r, f.at("flag").get<std::string>(), f.at("why").get<std::string>());
  const nlohmann::json* fe = family_entry(facts, *r.family);
  auto fe_bool = [&](const char* k) { return fe && fe->value(k, false); };
  r.schedule = Schedule{};
  r.schedule.checkpointing = flag(cl, "gradient_checkpointing");
  if (flag(cl, "gradient_checkpointing_cpu_offload")) {
    if (r.schedule.checkpointing) r.schedule.backend = Backend::Unsloth;
    else r.warnings.push_back("--gradient_checkpointing_cpu_offload is used only with --gradient_checkpointing (trainer_base.py:1608-1609): ignored");
  }
  if (cl.values.count("blocks_to_swap")) {
    const int n = to_int(cl.values.at("blocks_to_swap"), where(path, cl, "blocks_to_swap"), 0, kMaxBlocksToSwap);
    const int max = tf ? tf->blocks_to_swap_max : 0;
    if (n < 0) throw InputError(where(path, cl, "blocks_to_swap") + ": must not be negative");
    if (max > 0 && n > max)
      r.rejections.push_back("--blocks_to_swap " + std::to_string(n) + " is above " + r.family->name + "'s maximum " +
                             std::to_string(max) + ": musubi stops with an AssertionError (" + tf->source + ")");
    if (tf && tf->blocks_to_swap_meaning == "flux2_ratio" && n > 0 && n <= max) {
      const auto [d, sg] = musubi_flux2_split(n, tf->double_blocks, tf->single_blocks);
      r.warnings.push_back("--blocks_to_swap " + std::to_string(n) + " on " + r.family->name + " swaps " + std::to_string(d) + " double and " +
                           std::to_string(sg) + " single blocks (flux_2/flux2_models.py enable_block_swap)");
    }
    s.blocks_to_swap = tf ? musubi_swapped_chain_blocks(*tf, std::min(n, max > 0 ? max : n)) : n;
    if (tf) s.blocks_to_swap_per_list = musubi_swapped_per_list(*tf, std::min(n, max > 0 ? max : n));
    if (tf && tf->blocks_to_swap_meaning == "flux_double_single" && n > 0 && (max <= 0 || n <= max))
      r.warnings.push_back("--blocks_to_swap " + std::to_string(n) + " on " + r.family->name + " swaps " + std::to_string(n / 2) + " double and " +
                           std::to_string((n - n / 2) * 2 + 1) + " single blocks (" + tf->source + ")");
  }
  if (fe_bool("no_fp8_scaled") && cl.values.count("fp8_scaled"))
    refuse_flag(r, "fp8_scaled", r.family->name + "'s script has no such flag, argparse stops on it (" + tf->source + ")");
  else if (flag(cl, "fp8_scaled") && !flag(cl, "fp8_base"))
    r.rejections.push_back("--fp8_scaled needs --fp8_base (trainer_base.py:1398)");
  if (fe_bool("fp8_base_needs_scaled") && flag(cl, "fp8_base") && !flag(cl, "fp8_scaled"))
    r.rejections.push_back("--fp8_base without --fp8_scaled: " + r.family->name + " supports only scaled fp8 and stops (" + tf->source + ")");
  musubi_parts::read_checkpoint_precision(facts, cl, r);
  if (flag(cl, "fp8_base")) {
    if (fe_bool("fp8_base_ignored") && s.base_precision == "no_change")
      r.warnings.push_back("--fp8_base: " + r.family->name + "'s DiT dtype comes from --dit_dtype (bfloat16 by default), not --fp8_base: predicted with bf16 weights (" + tf->source + ")");
    else if (!fe_bool("fp8_base_ignored"))
      s.base_precision = "fp8wo-torchao";  // fp8 weights, upcast per layer: weight-only (training/trainer_base.py:1474-1475)
  }
  // Wan 2.2: --dit_high_noise loads the second DiT beside --dit (wan_train_network.py:75-90, :480-500)
  if (cl.values.count("dit_high_noise")) {
    if (!fe_bool("second_dit")) {
      r.warnings.push_back("--dit_high_noise is read by Wan 2.2 A14B only (--task t2v-A14B or i2v-A14B): ignored for " + r.family->name);
    } else {
      s.experts = 2;
      s.idle_experts_on_host = flag(cl, "offload_inactive_dit");
      if (s.idle_experts_on_host && cl.values.count("blocks_to_swap") && to_int(cl.values.at("blocks_to_swap"), where(path, cl, "blocks_to_swap"), 0, kMaxBlocksToSwap) > 0)
        r.rejections.push_back("--offload_inactive_dit with --blocks_to_swap: musubi stops, block swap is not supported with offloading the inactive DiT (wan_train_network.py:82-86)");
      s.notes.push_back(std::string("two DiTs (--dit and --dit_high_noise), one runs per step; ") +
                        (s.idle_experts_on_host ? "--offload_inactive_dit: the idle one waits on the CPU" : "both on the GPU") + " (wan_train_network.py)");
    }
  } else if (flag(cl, "offload_inactive_dit")) {
    r.warnings.push_back("--offload_inactive_dit without --dit_high_noise: one DiT, nothing to offload");
  }
  // FLUX.1 Kontext: the control image's latents join the image tokens
  if (fe_bool("control_in_sequence")) {
    s.reference_images = 1;
    s.notes.push_back("one control image: its latents join the image tokens (x2), " + tf->source);
  }
  const std::string mp = cl.values.count("mixed_precision") ? cl.values.at("mixed_precision") : "";
  if (mp.empty()) r.warnings.push_back("--mixed_precision unset: accelerate's default 'no' (fp32) is assumed unless its own config sets it");
  else if (mp != "no" && mp != "fp16" && mp != "bf16") throw InputError(where(path, cl, "mixed_precision") + ": '" + mp + "' is not no, fp16 or bf16");
  s.mixed_precision = mp.empty() ? "no" : mp;
  bool full = false;
  if (fe && fe->contains("full_finetune_scripts"))
    for (const auto& f : fe->at("full_finetune_scripts")) full |= f.get<std::string>() == cl.script;
  if (full) {
    // qwen_image_train.py / zimage_train.py: the DiT itself trains, in bf16 with --full_bf16, else float32
    s.model_type = ModelType::Full;
    const std::string src = facts.raw.at("full_finetune").at("source").get<std::string>();
    if (flag(cl, "full_bf16")) {
      if (mp != "bf16") r.rejections.push_back("--full_bf16 needs --mixed_precision bf16: musubi stops (" + src + ")");
    } else {
      // a float32 DiT (zimage_train.py:106-107), its matmuls under --mixed_precision's autocast
      if (s.mixed_precision != "no") s.weight_storage_bytes = 4;
      r.warnings.push_back("no --full_bf16: the DiT trains in float32 (weights, gradients, optimizer state), its activations " +
                           std::string(s.mixed_precision == "no" ? "too (no mixed precision)" : "in " + s.mixed_precision + " under autocast") +
                           " (" + src + ")");
    }
  } else {
    s.model_type = ModelType::Lora;  // *_train_network.py trains a network (LoRA)
    s.lora_rank = cl.values.count("network_dim") ? to_int(cl.values.at("network_dim"), where(path, cl, "network_dim"), 1, kMaxLoraRank) : 4;
    if (!cl.values.count("network_dim")) r.warnings.push_back("--network_dim unset: the LoRA module's default rank 4 is assumed");
  }
  s.optimizer = musubi_parts::optimizer_of(facts, cl, r);
  const std::string opt = cl.values.count("optimizer_type") ? cl.values.at("optimizer_type") : "adamw";
  // --fused_backward_pass (full fine-tune scripts): a post-accumulate-grad hook steps each parameter and
  // sets its grad to None (qwen_image_train.py:363-381, zimage_train.py:289), so about one layer's
  // gradients are resident; the patch is Adafactor's ("adafactor only")
  if (full && flag(cl, "fused_backward_pass")) {
    const std::string src = facts.raw.at("full_finetune").at("source").get<std::string>();
    if (s.optimizer == "adafactor") {
      s.fused_back_pass = true;
      r.warnings.push_back("--fused_backward_pass: each gradient is applied and freed as it is produced: about one layer's gradients resident (" + src + ")");
    } else {
      r.warnings.push_back("--fused_backward_pass patches Adafactor only (" + src + "): with --optimizer_type " + opt +
                           " gradients are counted in full, an upper bound");
    }
  } else if (!full && flag(cl, "fused_backward_pass")) {
    refuse_flag(r, "fused_backward_pass", cl.script + " has no such flag (only the full fine-tune scripts qwen_image_train.py and zimage_train.py): argparse stops");
  }
}

}  // namespace

TrainerRead read_musubi(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("musubi");
  TrainerRead r;
  r.trainer = "musubi";
  r.config_path = path;
  r.inputs = {path};
  const bool is_toml = lower(fs::path(path).extension().string()) == ".toml";
  CommandLine cl;
  bool dataset_only = false;
  std::vector<std::string> path_notes;
  std::string dataset_named_in = path;  // the file whose dataset_config key is read
  if (is_toml) {
    // a run described by its --config_file alone: every section flattened (parser_common.py:794-807)
    const toml::value root = parse_toml(path, "musubi config");
    dataset_only = root.contains("datasets");
    if (!dataset_only) {
      cl = flatten_config(root, path);
      musubi_parts::warn_unknown_keys(facts, cl.lines, path, r);
    }
  } else {
    cl = parse_command_line(musubi_parts::with_module_scripts(read_text_file(path, "musubi command line")), path, facts);
    r.warnings.insert(r.warnings.end(), cl.warnings.begin(), cl.warnings.end());  // the launch script's (shell_script.hpp)
    if (!cl.script.empty()) musubi_parts::refuse_unknown_flags(facts, cl, r);
    if (cl.values.count("config_file")) {  // flags on the command line win over the file's (argparse namespace)
      std::string cf = cl.values.at("config_file");
      if (cf.size() < 5 || cf.compare(cf.size() - 5, 5, ".toml") != 0) cf += ".toml";  // parser_common.py:784
      // the file the script writes itself (a heredoc), else the one on disk (shell_script.hpp)
      const FlagFile cff = flag_file(cl, "config_file", cf, path,
                                     [&](const std::string& v) { return resolve_near(v, path, o.cwd, "config_file", path_notes); }, r);
      const std::string& cf_path = cff.path;
      const CommandLine from_file = flatten_config(parse_toml(cf_path, "musubi config", cff.text), cf_path);
      musubi_parts::warn_unknown_keys(facts, from_file.lines, cf_path, r);
      r.inputs.push_back(cf_path);
      r.config_file = cf_path;
      if (!cl.values.count("dataset_config")) dataset_named_in = cf_path;
      // every key the file sets: one the command line also sets still comes back when a plan drops the flag
      for (const auto& kv : from_file.values) {
        r.config_file_keys[kv.first] = kv.second;
        cl.values.emplace(kv.first, kv.second);
      }
    }
  }
  musubi_parts::ModelRead model;
  if (dataset_only) model.why_not = path + " is a musubi dataset config: it does not name the model";
  else model = musubi_parts::model_of(facts, cl, path);
  const Family& fam = choose_family(o, model.family, model.why_not);
  start_setup(r, fam, "musubi-tuner");
  if (o.model.empty()) {
    r.setup.family_guessed_from = model.guessed_from;
    for (const auto& n : model.notes) r.setup.notes.push_back(n);
    for (const auto& w : model.warnings) r.warnings.push_back(w);
  }
  const TrainerFamily* tf = facts.find(fam);
  if (!tf) r.warnings.push_back("musubi-tuner has no training script for " + fam.name + " (as far as known)");
  else if (!tf->script_verified) r.warnings.push_back("the musubi script name for " + fam.name + " (" + tf->scripts.front() + ") is not verified");
  if (dataset_only) {
    // only the dataset: the usual LoRA command line is assumed, and said so
    cl.values = {{"sdpa", "true"}, {"gradient_checkpointing", "true"}, {"mixed_precision", "bf16"}, {"network_dim", "16"}};
    r.warnings.push_back("a dataset config alone: the command line is assumed to be --sdpa --gradient_checkpointing --mixed_precision bf16 --network_dim 16");
    read_flags(facts, cl, tf, r);
    read_dataset(path, r);
    r.inputs.erase(r.inputs.begin());
    return r;
  }
  read_flags(facts, cl, tf, r);
  if (!cl.values.count("dataset_config"))
    throw InputError(path + ": dataset_config: missing (musubi reads batch size, resolution and frames from the dataset TOML)");
  // the file the script writes itself (a heredoc), else the one on disk (shell_script.hpp)
  const std::string& dc = cl.values.at("dataset_config");
  const FlagFile dcf = flag_file(cl, "dataset_config", dc, dataset_named_in, [&](const std::string& v) {
    return resolve_near(v, dataset_named_in, o.cwd, "dataset_config", path_notes);
  }, r);
  read_dataset(dcf.path, r, dcf.text);
  for (const auto& n : path_notes) r.warnings.push_back(n);
  // the run's phases by the keys as read here (the training command, its --config_file, a TOML alone):
  // --sample_prompts turns sampling on (musubi.json phases.samples)
  r.run.other = trainer_run_from_data(facts, r);
  if (cl.values.count("sample_prompts")) {
    r.run.other.samples = true;
    r.run.other.sample_key = "--sample_prompts";
  }
  return r;
}

const std::vector<std::pair<std::string, std::string>>& musubi_optimizers() {
  // --optimizer_type as musubi-tuner takes it (musubi.json "optimizers"): its three names, then the classes
  static const std::vector<std::pair<std::string, std::string>> t = [] {
    const nlohmann::json& j = trainer_facts("musubi").raw.at("optimizers");
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [name, ours] : j.at("builtin").items()) out.emplace_back(name, ours.get<std::string>());
    for (const auto& c : j.at("classes")) out.emplace_back(c.at("class").get<std::string>(), c.at("optimizer").get<std::string>());
    return out;
  }();
  return t;
}

namespace {

// a parsed TOML value as JSON (tables as objects, dates and times as written); `lines` (when given)
// receives each key's line by its dotted path
nlohmann::ordered_json toml_json(const toml::value& root, std::map<std::string, int>* lines) {
  struct Convert {
    std::map<std::string, int>* lines;
    nlohmann::ordered_json operator()(const toml::value& v, const std::string& at = "") const {
      if (lines && !at.empty()) lines->emplace(at, static_cast<int>(v.location().line()));
      const std::string dot = at.empty() ? "" : at + ".";
      if (v.is_table()) {
        nlohmann::ordered_json o = nlohmann::ordered_json::object();
        for (const auto& kv : v.as_table()) o[kv.first] = (*this)(kv.second, dot + kv.first);
        return o;
      }
      if (v.is_array()) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const auto& item : v.as_array()) a.push_back((*this)(item, at + "[" + std::to_string(a.size()) + "]"));
        return a;
      }
      if (v.is_boolean()) return v.as_boolean();
      if (v.is_integer()) return v.as_integer();
      if (v.is_floating()) return v.as_floating();
      if (v.is_string()) return v.as_string().str;
      return toml::format(v);  // a date or time, as written
    }
  };
  return Convert{lines}(root);  // nesting already bounded by check_toml_depth
}

}  // namespace

// a TOML file as JSON, under parse_toml's input rules (SimpleTuner's config.toml, simpletuner_formats.cpp)
nlohmann::ordered_json toml_file_json(const std::string& path, const std::string& what, std::map<std::string, int>* lines) {
  return toml_json(parse_toml(path, what), lines);
}

nlohmann::ordered_json toml_text_json(const std::string& text, const std::string& path, const std::string& what) {
  return toml_json(parse_toml(path, what, &text), nullptr);
}

}  // namespace segadvise::readers
