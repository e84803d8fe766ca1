// SimpleTuner config.json -> RunSetup: the keys that move the run's other phases (run-phases §A2, §B;
// trainers/phases.hpp). Every rule cites SimpleTuner bc8e6ab.
#include "segadvise/trainers/simpletuner_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/io/json_input.hpp"
#include "simpletuner/simpletuner_parts.hpp"

namespace segadvise {

using namespace simpletuner;

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

}  // namespace segadvise
