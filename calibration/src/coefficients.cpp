#include "segadvise/calibration/coefficients.hpp"

#include <nlohmann/json.hpp>

#include "segadvise/costmodel/embedded.hpp"

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"

namespace segadvise {

using nlohmann::json;

json to_json(const Coefficients& c) {
  auto g = [](const GpuCoefficients& x) {
    return json{{"matmul_efficiency", x.matmul_efficiency},
                {"attention_efficiency", x.attention_efficiency},
                {"elementwise_efficiency", x.elementwise_efficiency},
                {"overhead_s", x.overhead_s},
                {"pcie_efficiency", x.pcie_efficiency},
                {"reserve_gib", x.reserve_bytes / kGiB}};
  };
  json gpus = json::object();
  for (const auto& [id, x] : c.gpu) gpus[id] = g(x);
  return {{"source", c.source},
          {"default_gpu", g(c.default_gpu)},
          {"gpu", gpus},
          {"activation_scale", c.activation_scale},
          {"matmul_time_factor", c.matmul_time_factor},
          {"quantized_input_scale", c.quantized_input_scale},
          {"dequant_passes", c.dequant_passes},
          {"quantized_call_s", c.quantized_call_s},
          {"backward_factor", c.backward_factor},
          {"fragmentation", c.fragmentation},
          {"offload_overlap", c.offload_overlap},
          {"stream_overlap", c.stream_overlap},
          {"launch_s", c.launch_s},
          {"backward_host_ratio", c.backward_host_ratio},
          {"checkpoint_host_ratio", c.checkpoint_host_ratio},
          {"offload_share_checkpointed", c.offload_share_checkpointed},
          {"offload_staging_blocks", c.offload_staging_blocks}};
}

Coefficients coefficients_from_json(const json& j, const std::string& origin) {
  Coefficients c;
  auto num = [&](const json& obj, const std::string& key, double def, const std::string& path) {
    if (!obj.contains(key)) return def;
    return checked_number(obj[key], origin + ": field '" + path + key + "'", -kMaxCoefficient, kMaxCoefficient);
  };
  auto gpu = [&](const json& obj, const std::string& path) {
    if (!obj.is_object()) throw InputError(origin + ": field '" + path + "' must be an object");
    GpuCoefficients x;
    x.matmul_efficiency = num(obj, "matmul_efficiency", x.matmul_efficiency, path + ".");
    x.attention_efficiency = num(obj, "attention_efficiency", x.attention_efficiency, path + ".");
    x.elementwise_efficiency = num(obj, "elementwise_efficiency", x.elementwise_efficiency, path + ".");
    x.overhead_s = num(obj, "overhead_s", x.overhead_s, path + ".");
    x.pcie_efficiency = num(obj, "pcie_efficiency", x.pcie_efficiency, path + ".");
    x.reserve_bytes = num(obj, "reserve_gib", x.reserve_bytes / kGiB, path + ".") * kGiB;
    if (x.matmul_efficiency <= 0 || x.matmul_efficiency > 1 || x.elementwise_efficiency <= 0 ||
        x.elementwise_efficiency > 1 || x.pcie_efficiency <= 0 || x.pcie_efficiency > 1)
      throw InputError(origin + ": field '" + path + "' has an efficiency outside (0, 1]");
    if (x.attention_efficiency <= 0 || x.attention_efficiency > 2)
      throw InputError(origin + ": field '" + path + ".attention_efficiency' is outside (0, 2]");
    return x;
  };
  if (!j.is_object()) throw InputError(origin + ": a coefficients file must be a JSON object");
  c.source = FieldReader{j, origin, ""}.str("source", origin);
  if (j.contains("default_gpu")) c.default_gpu = gpu(j["default_gpu"], "default_gpu");
  if (j.contains("gpu") && !j["gpu"].is_object()) throw InputError(origin + ": field 'gpu' must be an object");
  if (j.contains("gpu"))
    for (const auto& [id, v] : j["gpu"].items()) c.gpu[id] = gpu(v, "gpu." + id);
  bool allow_zero = false;
  auto num_map = [&](const std::string& key, std::map<std::string, double>& out) {
    if (!j.contains(key)) return;
    if (!j[key].is_object()) throw InputError(origin + ": field '" + key + "' must be an object");
    for (const auto& [k, v] : j[key].items()) {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= kMaxCoefficient) ||
          (v.get<double>() == 0 && !allow_zero))
        throw InputError(origin + ": field '" + key + "." + brief_text(k) + "' must be a " +
                         (allow_zero ? "non-negative" : "positive") + " number, got " + brief(v));
      out[k] = v.get<double>();
    }
  };
  num_map("activation_scale", c.activation_scale);
  num_map("matmul_time_factor", c.matmul_time_factor);
  allow_zero = true;
  num_map("quantized_input_scale", c.quantized_input_scale);
  num_map("dequant_passes", c.dequant_passes);
  num_map("quantized_call_s", c.quantized_call_s);
  c.backward_factor = num(j, "backward_factor", c.backward_factor, "");
  c.fragmentation = num(j, "fragmentation", c.fragmentation, "");
  c.offload_overlap = num(j, "offload_overlap", c.offload_overlap, "");
  c.stream_overlap = num(j, "stream_overlap", c.stream_overlap, "");
  if (c.stream_overlap < 0 || c.stream_overlap > 1)
    throw InputError(origin + ": field 'stream_overlap' must be in [0, 1], got " + std::to_string(c.stream_overlap));
  c.launch_s = num(j, "launch_s", c.launch_s, "");
  c.backward_host_ratio = num(j, "backward_host_ratio", c.backward_host_ratio, "");
  c.checkpoint_host_ratio = num(j, "checkpoint_host_ratio", c.checkpoint_host_ratio, "");
  c.offload_share_checkpointed = num(j, "offload_share_checkpointed", c.offload_share_checkpointed, "");
  c.offload_staging_blocks = num(j, "offload_staging_blocks", c.offload_staging_blocks, "");
  return c;
}

Coefficients load_coefficients(const std::string& path) {
  return coefficients_from_json(load_json_file(path, "--calibration"), path);
}

const Coefficients& default_coefficients() {
  static const Coefficients c = [] {
    for (std::size_t i = 0; i < kCalibrationDataCount; ++i)
      if (std::string(kCalibrationData[i].name) == "coefficients.json")
        return coefficients_from_json(
            parse_json_text(kCalibrationData[i].text, "calibration/data/coefficients.json"),
            "calibration/data/coefficients.json");
    return Coefficients{};
  }();
  return c;
}

Coefficients coefficients_for(const std::string& path) {
  if (path.empty()) return default_coefficients();
  return load_coefficients(path);
}

Coefficients starting_coefficients(const std::string& path) {
  if (!path.empty()) return coefficients_for(path);
  Coefficients c;
  c.source = "built-in starting values";
  return c;
}

}  // namespace segadvise
