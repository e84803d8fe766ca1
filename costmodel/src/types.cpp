#include <cctype>

#include "segadvise/costmodel/types.hpp"

#include "segadvise/io/json_input.hpp"

namespace segadvise {

std::string to_string(Backend b) {
  switch (b) {
    case Backend::Torch: return "torch";
    case Backend::TorchFfn: return "torch-ffn";
    case Backend::Unsloth: return "unsloth";
    case Backend::UnslothFfn: return "unsloth-ffn";
  }
  return "torch";
}

Backend parse_backend(const std::string& s) {
  if (s == "torch") return Backend::Torch;
  if (s == "torch-ffn") return Backend::TorchFfn;
  if (s == "unsloth") return Backend::Unsloth;
  if (s == "unsloth-ffn") return Backend::UnslothFfn;
  throw InputError("unknown gradient_checkpointing_backend '" + s + "' (torch, torch-ffn, unsloth, unsloth-ffn)");
}

std::string to_string(ModelType t) { return t == ModelType::Full ? "full" : "lora"; }

std::string to_string(LoraType t) { return t == LoraType::Lycoris ? "lycoris" : "standard"; }

ModelType parse_model_type(const std::string& s, const std::string& where) {
  if (s == "lora") return ModelType::Lora;
  if (s == "full") return ModelType::Full;
  throw InputError(where + " is '" + brief_text(s) + "'; expected one of lora, full");
}

LoraType parse_lora_type(const std::string& s, const std::string& where) {
  if (s == "standard") return LoraType::Standard;
  if (s == "lycoris") return LoraType::Lycoris;
  throw InputError(where + " is '" + brief_text(s) + "'; expected one of standard, lycoris");
}

std::string Schedule::name() const {
  std::string n;
  if (!checkpointing) {
    n = offload_attention ? "none-offload" : "none";
  } else if (interval <= 1 && stride <= 0) {
    n = "layer";
  } else if (stride > 0 && interval > 1) {
    n = "seg" + std::to_string(interval) + "-stride" + std::to_string(stride);
  } else if (stride > 0) {
    n = "seg1-stride" + std::to_string(stride);
  } else {
    n = "interval" + std::to_string(interval);
  }
  // the sweep's `activation-offload` is per-block checkpointing plus attention offload
  // (docs/sources/measured-sweep.md)
  if (checkpointing && offload_attention) n = (n == "layer" ? "activation-offload" : n + "-offload");
  if (checkpointing && backend != Backend::Torch) n += "+" + to_string(backend);
  return n;
}

Schedule Schedule::parse(const std::string& raw) {
  Schedule s;
  std::string name = raw;
  const auto plus = name.find('+');
  if (plus != std::string::npos) {
    try {
      s.backend = parse_backend(name.substr(plus + 1));
    } catch (const InputError& e) {
      throw InputError("schedule '" + brief_text(raw) + "': " + e.what());
    }
    name = name.substr(0, plus);
  }
  // interval 0 is reported below; a stride is at least 1 (seg2-stride0 is not interval2)
  auto interval = [&](const std::string& digits) {
    return static_cast<int>(parse_integer_text(digits, "schedule '" + brief_text(raw) + "': interval", 0, kMaxScheduleStep));
  };
  auto stride = [&](const std::string& digits) {
    return static_cast<int>(parse_integer_text(digits, "schedule '" + brief_text(raw) + "': stride", 1, kMaxScheduleStep));
  };
  // intervalK, segK, segK-strideS, each optionally -offload; read left to right (no regex: a
  // 30,000-digit K must be an out-of-range error, not a recursion)
  auto digits_at = [&](std::size_t& pos) {
    const std::size_t from = pos;
    while (pos < name.size() && name[pos] >= '0' && name[pos] <= '9') ++pos;
    return name.substr(from, pos - from);
  };
  auto starts_at = [&](std::size_t pos, const std::string& word) { return name.compare(pos, word.size(), word) == 0; };
  auto offload_tail = [&](std::size_t pos, bool& offload) {
    if (pos == name.size()) return true;
    offload = name.compare(pos, std::string::npos, "-offload") == 0;
    return offload;
  };
  std::string k_digits, s_digits;
  bool shaped = false, offload = false;
  if (starts_at(0, "interval")) {
    std::size_t pos = 8;
    k_digits = digits_at(pos);
    shaped = !k_digits.empty() && offload_tail(pos, offload);
  } else if (starts_at(0, "seg")) {
    std::size_t pos = 3;
    k_digits = digits_at(pos);
    if (!k_digits.empty() && starts_at(pos, "-stride")) {
      pos += 7;
      s_digits = digits_at(pos);
      shaped = !s_digits.empty() && offload_tail(pos, offload);
    } else {
      shaped = !k_digits.empty() && offload_tail(pos, offload);
    }
  }
  if (name == "none") {
    s.checkpointing = false;
  } else if (name == "none-offload") {
    s.checkpointing = false;
    s.offload_attention = true;
  } else if (name == "layer" || name == "layer-offload" || name == "activation-offload") {
    // the sweep's `activation-offload` rows ran `gradient_checkpointing: true` (every block) plus
    // `gradient_checkpointing_offload_attention: true` (simpletuner-sweep/README.md)
    s.offload_attention = name != "layer";
  } else if (shaped) {
    s.interval = interval(k_digits);
    if (!s_digits.empty()) s.stride = stride(s_digits);
    s.offload_attention = offload;
  } else {
    throw InputError("unknown schedule '" + brief_text(raw) +
                     "' (none, layer, intervalK, segK-strideS, activation-offload (= layer + attention offload), "
                     "segK-strideS-offload, none-offload, "
                     "optionally +torch-ffn / +unsloth / +unsloth-ffn)");
  }
  if (s.checkpointing && s.interval == 0 && s.stride == 0 && name != "layer" && name != "layer-offload" &&
      name != "activation-offload")
    throw InputError("schedule '" + brief_text(raw) + "': interval must be at least 1");
  if (s.backend != Backend::Torch && !s.checkpointing)
    throw InputError("schedule '" + brief_text(raw) + "': a checkpointing backend needs checkpointing on");
  return s;
}

const GpuCoefficients& Coefficients::for_gpu(const std::string& id) const {
  const auto it = gpu.find(id);
  return it == gpu.end() ? default_gpu : it->second;
}

double Coefficients::scale(const std::string& kind, const std::string& side) const {
  auto it = activation_scale.find(kind + "." + side);
  if (it != activation_scale.end()) return it->second;
  it = activation_scale.find("*." + side);
  return it == activation_scale.end() ? 1.0 : it->second;
}

double Coefficients::time_factor(const std::string& precision) const {
  const auto it = matmul_time_factor.find(precision);
  return it == matmul_time_factor.end() ? 1.0 : it->second;
}

double Coefficients::input_scale(const std::string& precision) const {
  if (precision.empty()) return 0;
  const auto it = quantized_input_scale.find(precision);
  return it == quantized_input_scale.end() ? 0.0 : it->second;
}

double Coefficients::call_s(const std::string& precision) const {
  if (precision.empty() || precision == "bf16") return 0;
  const auto it = quantized_call_s.find(precision);
  return it == quantized_call_s.end() ? 0.0 : it->second;
}

double Coefficients::dequant(const std::string& precision) const {
  if (precision.empty() || precision == "bf16") return 0;
  const auto it = dequant_passes.find(precision);
  return it == dequant_passes.end() ? 0.0 : it->second;
}

}  // namespace segadvise
