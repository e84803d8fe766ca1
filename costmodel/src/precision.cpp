#include "segadvise/costmodel/precision.hpp"

#include "segadvise/io/json_input.hpp"

#include <algorithm>
#include <map>

namespace segadvise {

namespace {

// bytes_per_param: weight bytes of one quantized linear parameter, including its scales.
// SimpleTuner training/quantisation/__init__.py: int8 = 1 B + per-group scale. SDNQ's group size is 32 with a bf16 scale
// (2/32 = 0.0625 B); quanto and TorchAO keep a per-row scale (negligible: ~2/in_features);
// fp8-native keeps an fp32 per-output-row scale (4/in_features). 4-bit: 0.5 B + group scales.
const std::vector<PrecisionInfo>& table() {
  static const std::vector<PrecisionInfo> t = {
      {"no_change", false, 2.0, "bf16", "none"},
      {"bf16", false, 2.0, "bf16", "none"},
      {"int8-quanto", true, 1.01, "int8-quanto", "quanto"},
      // quanto qint4: two codes a byte, a bf16 scale and a bf16 shift per group of 128 (0.5 + 4/128 B)
      {"int4-quanto", true, 0.5 + 4.0 / 128, "int4-quanto", "quanto"},
      {"int2-quanto", true, 0.28, "int4-quanto", "quanto"},
      {"fp8-quanto", true, 1.01, "fp8-quanto", "quanto"},
      {"fp8uz-quanto", true, 1.01, "fp8-quanto", "quanto"},
      {"int8-torchao", true, 1.01, "int8-torchao", "torchao"},
      {"int8dq-torchao", true, 1.01, "int8-torchao", "torchao"},
      {"int8dq-int4-torchao", true, 0.53, "int4-torchao", "torchao"},
      {"fp8-torchao", true, 1.01, "fp8-torchao", "torchao"},
      // Float8WeightOnlyConfig: no fp8 matmul; each call dequantizes the weight and runs F.linear on the
      // bf16 copy, which autograd keeps for the input gradient (the sweep: with nothing checkpointed,
      // the peak exceeds bf16's by about the fp8 weight bytes, i.e. bf16 copies minus the saving)
      {"fp8wo-torchao", true, 1.01, "fp8wo-torchao", "torchao", true},
      {"fp8-int4-torchao", true, 0.53, "int4-torchao", "torchao"},
      {"int4-torchao", true, 0.53, "int4-torchao", "torchao"},
      // bitsandbytes NF4 (Linear4bit through a BitsAndBytesConfig): two 4-bit codes a byte and one fp32
      // absmax per block of 64 weights (quantize_4bit's blocksize): 0.5 + 4/64 B. Double quantization
      // (bnb_4bit_use_double_quant, off by default) would store the absmax as uint8 + an fp32 per 256
      // blocks (0.5 + 1/64 + 4/16384 B); the configs read here do not set it (diffusion-pipe
      // models/hidream.py:97-102); SimpleTuner's preset file is not in the mirrored sources.
      {"nf4-bnb", true, 0.5 + 4.0 / 64, "nf4-bnb", "bnb"},
      {"fp8-native", true, 1.0, "fp8-native", "native"},
      // TransformerEngine stores fp8 weights only for LoRA runs (§2.2); the full case is handled by
      // the caller through model_type.
      {"fp8-transformerengine", true, 1.0, "fp8-native", "transformerengine"},
      {"int8-sdnq", true, 1.0625, "int8-sdnq", "sdnq"},
      {"uint8-sdnq", true, 1.0625, "int8-sdnq", "sdnq"},
      {"int8-sdnq-hadamard", true, 1.0625, "int8-sdnq-hadamard", "sdnq"},
      {"int16-sdnq", true, 2.0625, "int8-sdnq", "sdnq"},
      {"uint16-sdnq", true, 2.0625, "int8-sdnq", "sdnq"},
      {"fp16-sdnq", true, 2.0625, "int8-sdnq", "sdnq"},
      {"fp8-sdnq", true, 1.0, "fp8-sdnq", "sdnq"},
      // <= 5 bits add an SVD branch of rank 32: ~(O+I)*32 params per layer, about 2-4% of a
      // 4096-wide layer's weights at 2 B each; folded in as +0.08 B/param.
      {"int6-sdnq", true, 0.8125, "int8-sdnq", "sdnq"},
      {"int5-sdnq", true, 0.77, "int8-sdnq", "sdnq"},
      {"uint5-sdnq", true, 0.77, "int8-sdnq", "sdnq"},
      {"uint4-sdnq", true, 0.64, "int8-sdnq", "sdnq"},
      {"uint3-sdnq", true, 0.52, "int8-sdnq", "sdnq"},
      {"uint2-sdnq", true, 0.39, "int8-sdnq", "sdnq"},
      // ai-toolkit's own quantizers (ostris/ai-toolkit toolkit/util/*_quant.py; docs/sources/trainers.md):
      // uintN = N bits packed + a bf16 scale and a uint8 zero point per 64 weights (3/64 B); orbitN = N-bit
      // codebook indices + a per-row norm; orbitvqN = N-bit lattice indices + a 16-bit scale per 128;
      // convrot4 = nvfp4 codes (0.5 B) + e4m3 scales per 16 twice (plain and swizzled, 2/16 B);
      // convrot8 = int8 + an fp32 per-row scale; convrotintN = N bits + an fp32 ratio per 128 (N <= 7);
      // convrotbitnet = 5 ternary codes a byte (0.2 B) + the per-128 ratios; convrotcomfyw4a4 = int4 +
      // an fp32 per-row scale; nvfp4 = e2m1 codes + an e4m3 scale per 16. Their time factors are not fitted.
      {"uint2-ostris", true, 0.296875, "uint2-ostris", "ostris"},
      {"uint3-ostris", true, 0.421875, "uint3-ostris", "ostris"},
      {"uint4-ostris", true, 0.546875, "uint4-ostris", "ostris"},
      {"uint5-ostris", true, 0.671875, "uint5-ostris", "ostris"},
      {"uint6-ostris", true, 0.796875, "uint6-ostris", "ostris"},
      {"uint7-ostris", true, 0.921875, "uint7-ostris", "ostris"},
      {"orbit2-ostris", true, 0.25, "orbit2-ostris", "ostris"},
      {"orbit3-ostris", true, 0.375, "orbit3-ostris", "ostris"},
      {"orbit4-ostris", true, 0.5, "orbit4-ostris", "ostris"},
      {"orbitvq2-ostris", true, 0.265625, "orbitvq2-ostris", "ostris"},
      {"orbitvq3-ostris", true, 0.390625, "orbitvq3-ostris", "ostris"},
      {"orbitvq4-ostris", true, 0.515625, "orbitvq4-ostris", "ostris"},
      {"convrot4-ostris", true, 0.625, "convrot4-ostris", "ostris"},
      {"convrot8-ostris", true, 1.0, "convrot8-ostris", "ostris"},
      {"convrotint2-ostris", true, 0.28125, "convrotint2-ostris", "ostris"},
      {"convrotint3-ostris", true, 0.40625, "convrotint3-ostris", "ostris"},
      {"convrotint4-ostris", true, 0.53125, "convrotint4-ostris", "ostris"},
      {"convrotint5-ostris", true, 0.65625, "convrotint5-ostris", "ostris"},
      {"convrotint6-ostris", true, 0.78125, "convrotint6-ostris", "ostris"},
      {"convrotint7-ostris", true, 0.90625, "convrotint7-ostris", "ostris"},
      {"convrotint8-ostris", true, 1.0, "convrot8-ostris", "ostris"},
      {"convrotbitnet-ostris", true, 0.23125, "convrotbitnet-ostris", "ostris"},
      {"convrotcomfyw4a4-ostris", true, 0.5, "convrotcomfyw4a4-ostris", "ostris"},
      {"nvfp4-ostris", true, 0.5625, "nvfp4-ostris", "ostris"},
  };
  return t;
}

// state_bytes_per_param (bf16 trainable parameters; docs/sources/simpletuner.md §2.5): SimpleTuner's
// adamw_bf16 keeps exp_avg, exp_avg_sq and its shift buffer in the parameter dtype (6 B); optimi's
// AdamW, StableAdamW and Lion add a Kahan-summation buffer to their moments (2 + 1 and 1 + 1 bf16
// buffers: 6 B and 4 B); torch AdamW two fp32 moments (8 B); bitsandbytes Lion one fp32 momentum (4 B);
// 8-bit AdamW two int8 moments + block scales (~2.1 B); 4-bit ~1.1 B; Prodigy four fp32 buffers (16 B);
// Adafactor factored second moment (~0.1 B); SOAP two moments plus preconditioners (~24 B, estimate);
// CAME (came_pytorch) one fp32 first moment and factored second moments and residuals (~4.1 B, estimate).
// update_bytes_per_param: what one step reads and writes per parameter (the parameter, its gradient and
// each state buffer read, the parameter and the buffers written), rounded up as the table has it.
const std::vector<OptimizerInfo>& optimizers() {
  static const std::vector<OptimizerInfo> t = {
      {"adamw_bf16", 6, 20},       {"adamw", 8, 24},           {"torch-adamw", 8, 24},
      {"adamw_schedulefree", 8, 24},
      {"adamw8bit", 2.1, 12},      {"bnb-adamw8bit", 2.1, 12}, {"bnb-adamw-paged", 8, 24},
      {"ao-adamw8bit", 2.1, 12},   {"ao-adamw4bit", 1.1, 10},  {"ao-adamwfp8", 2.1, 12},
      {"ao-adamw-fp8", 2.1, 12},   {"optimi-adamw", 6, 20},    {"optimi-lion", 4, 14},
      {"lion", 2, 10},             {"bnb-lion", 4, 14},        {"bnb-lion8bit", 1.1, 8},
      {"optimi-stableadamw", 6, 20}, {"stableadamw", 4, 16},   {"prodigy", 16, 40},
      {"adafactor", 0.1, 8},       {"soap", 24, 48},           {"muon", 2, 12},
      {"optimi-adan", 6, 20},      {"optimi-ranger", 6, 20},   {"optimi-sgd", 2, 8},
      {"sgd", 0, 6},               {"adamw8bit-paged", 2.1, 12},
      // bitsandbytes' one-state optimizers at 32 bits (one fp32 buffer) and 8 bits (one int8 buffer + block
      // scales), LAMB's two moments, AdEMAMix's three buffers (OneTrainer's optimizers, create.py)
      {"adagrad", 4, 14},          {"rmsprop", 4, 14},         {"lars", 4, 14},
      {"bnb-adagrad8bit", 1.1, 8}, {"bnb-rmsprop8bit", 1.1, 8}, {"bnb-lars8bit", 1.1, 8},
      {"bnb-sgd8bit", 1.1, 8},     {"lamb", 8, 24},            {"bnb-lamb8bit", 2.1, 12},
      {"ademamix", 12, 32},        {"bnb-ademamix8bit", 3.1, 16},
      {"came", 4.1, 16},
  };
  return t;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::vector<std::string> nearest_names(const std::string& wanted_raw, const std::vector<std::string>& names,
                                       std::size_t max_count) {
  // edit distance is length x length: a 1 MB value is compared by its first kMaxEchoChars bytes
  const std::string wanted = wanted_raw.substr(0, kMaxEchoChars);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& n : names) {
    std::size_t d = edit_distance(wanted, n);
    // a name that contains what was typed is a good suggestion whatever its length
    if (!wanted.empty() && n.find(wanted) != std::string::npos) d = std::min<std::size_t>(d, 1);
    scored.emplace_back(d, n);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& [d, n] : scored) {
    if (out.size() >= max_count) break;
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

PrecisionInfo precision_info(const std::string& name) {
  for (const auto& p : table())
    if (p.name == name) return p;
  throw InputError("unknown precision '" + brief_text(name) + "'; nearest: " +
                   join(nearest_names(name, precision_names())) + " (segadvise list precisions)");
}

std::vector<std::string> precision_names() {
  std::vector<std::string> out;
  for (const auto& p : table()) out.push_back(p.name);
  return out;
}

std::string precision_key(const TrainingSetup& setup) {
  const PrecisionInfo p = precision_info(setup.base_precision);
  if (!p.quantized) return "bf16";
  if (p.backend == "sdnq" && setup.sdnq_hadamard && p.kernel == "int8-sdnq") return "int8-sdnq-hadamard";
  return p.kernel;
}

OptimizerInfo optimizer_info(const std::string& name) {
  for (const auto& o : optimizers())
    if (o.name == name) return o;
  throw InputError("unknown optimizer '" + brief_text(name) + "'; nearest: " + join(nearest_names(name, optimizer_names())));
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> out;
  for (const auto& o : optimizers()) out.push_back(o.name);
  return out;
}

double weight_dtype_bytes(const TrainingSetup& setup) {
  // §2.1: bf16 with mixed_precision bf16 (or a quantized LoRA base); fp16 with fp16; else fp32.
  if (setup.mixed_precision == "bf16" || setup.mixed_precision == "fp16" || setup.mixed_precision == "fp8") return kBf16Bytes;
  if (precision_info(setup.base_precision).quantized && setup.model_type == ModelType::Lora) return kBf16Bytes;
  return kFp32Bytes;
}

double stored_weight_bytes(const TrainingSetup& setup) {
  return setup.weight_storage_bytes > 0 ? setup.weight_storage_bytes : weight_dtype_bytes(setup);
}

}  // namespace segadvise
