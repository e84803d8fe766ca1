// What a card cannot run, as each trainer handles it (trainers/common/card-capabilities.json,
// trainers/card_limits.hpp), and the cards of the catalog that lack bf16, flash-attn 2 or fp8
// (families/data/gpus.json, docs/sources/gpus.md).
#include <doctest/doctest.h>

#include <sstream>

#include "check_options.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "emitters.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/kernels.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/card_limits.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_plans.hpp"

using namespace segadvise;
using namespace segadvise::cli;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/check/card-limits/";

int check_on(const std::string& file, const std::string& gpu, nlohmann::json& j) {
  CheckOptions o;
  o.config = kDir + file;
  o.flags.gpu = gpu;
  o.flags.format = "json";
  o.flags.ranges = std::string(SEGADVISE_FIXTURES_DIR) + "/check/point-ranges.json";
  o.read.cwd = "/nonexistent-working-directory";
  std::ostringstream out;
  const int rc = run_check(o, out);
  j = nlohmann::json::parse(out.str());
  return rc;
}

// every warning and rejection text of a check's JSON, joined
std::string said(const nlohmann::json& j) {
  std::string all;
  for (const char* k : {"warnings", "rejections", "diagnostics"})
    if (j.contains(k))
      for (const auto& w : j[k]) all += (w.is_string() ? w.get<std::string>() : w.dump()) + "\n";
  if (j.contains("prediction") && j["prediction"].contains("reason") && j["prediction"]["reason"].is_string())
    all += j["prediction"]["reason"].get<std::string>();
  return all;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// exactly one message, which says `part`
bool only(const std::vector<std::string>& msgs, const std::string& part) { return msgs.size() == 1 && has(msgs[0], part); }

}  // namespace

TEST_CASE("catalog: the RTX 4060 Ti and the T4 as the survey gives them") {
  // 4060 Ti 16GB: nvidia-smi 16380 MiB / 1024 = 15.996 GiB; GeForce bf16 = half the fp16-accumulate 88.3
  // (44.1, as listed); PCIe Gen4 x8: 2 GB/s a lane x 8 = 16 GB/s; Ada sm_89 with fp8 tensor cores
  const GpuSpec& g = find_gpu("RTX 4060 Ti");
  CHECK(g.id == "4060ti");
  CHECK(g.total_bytes == doctest::Approx(15.996 * kGiB));
  CHECK(g.bf16_flops_per_s == doctest::Approx(44.1e12));
  CHECK(g.pcie_bytes_per_s == doctest::Approx(16e9));
  CHECK(g.pcie_gen == 4);
  CHECK(g.arch == "ada");
  CHECK(g.sm == 89);
  CHECK(g.fp8_tensor);
  CHECK(g.display);
  CHECK(find_gpu("nvidia geforce rtx 4060 ti").id == "4060ti");
  // T4: 15360 MiB with ECC = 15.0 GiB; no bf16: the fp16 fp32-accumulate rate 65; Gen3 x16 = 16 GB/s
  const GpuSpec& t4 = find_gpu("tesla t4");
  CHECK(t4.id == "t4");
  CHECK(t4.total_bytes == doctest::Approx(15.0 * kGiB));
  CHECK(t4.bf16_flops_per_s == doctest::Approx(65e12));
  CHECK(t4.pcie_bytes_per_s == doctest::Approx(16e9));
  CHECK(t4.arch == "turing");
  CHECK_FALSE(t4.bf16_native);
  CHECK_FALSE(t4.flash_attention_2);
  CHECK_FALSE(t4.display);
  // MI250X: one GCD, 64 GiB and half the package's 383 TFLOP/s
  CHECK(find_gpu("mi250x").total_bytes == doctest::Approx(64.0 * kGiB));
  CHECK(find_gpu("mi250x").bf16_flops_per_s == doctest::Approx(191.5e12));
}

TEST_CASE("SDPA on Turing and Volta: the memory-efficient kernel in fp16, math in bf16; elsewhere unchanged") {
  const GpuSpec& t4 = find_gpu("t4");
  CHECK(attention_kernel("diffusers", t4) == AttentionKernel::MemEfficient);
  CHECK(attention_kernel("xformers", t4) == AttentionKernel::MemEfficient);
  CHECK(attention_kernel("diffusers", t4, true) == AttentionKernel::Unfused);
  CHECK(attention_kernel("diffusers", find_gpu("v100")) == AttentionKernel::MemEfficient);
  CHECK(attention_kernel("diffusers", find_gpu("l40s"), true) == AttentionKernel::Fa2);
  CHECK(attention_kernel("diffusers", find_gpu("h100"), true) == AttentionKernel::Cudnn);
}

TEST_CASE("bf16 on a card without bf16 tensor cores: emulated, at the fp32 CUDA-core rate") {
  TrainingSetup s;
  s.trainer = "sd-scripts";
  s.mixed_precision = "bf16";
  // T4: 65 TFLOP/s fp16 tensor, 65 / 8 = 8.1 emulated (card-capabilities.json)
  CardLimits lim = apply_card_limits(s, find_gpu("t4"));
  CHECK(s.matmul_rate_share == doctest::Approx(8.1 / 65));
  CHECK(lim.rejections.empty());
  CHECK(only(lim.warnings, "library/train_util.py:5507-5512"));
  // applied twice (a context re-made with the setup): set, not multiplied
  apply_card_limits(s, find_gpu("t4"));
  CHECK(s.matmul_rate_share == doctest::Approx(8.1 / 65));
  // 2080 Ti: GeForce, 107.6 fp16-accumulate / 8 = 13.4 against its 53.8 fp32-accumulate
  apply_card_limits(s, find_gpu("2080ti"));
  CHECK(s.matmul_rate_share == doctest::Approx(13.4 / 53.8));
  // fp16 runs on the tensor cores; an Ampere card has bf16
  s.mixed_precision = "fp16";
  CHECK(apply_card_limits(s, find_gpu("t4")).warnings.empty());
  CHECK(s.matmul_rate_share == 1);
  s.mixed_precision = "bf16";
  CHECK(apply_card_limits(s, find_gpu("3090")).warnings.empty());
  CHECK(s.matmul_rate_share == 1);
  // the matmul time of a block scales by the share: 65 / 8.1 slower
  BlockCost b;
  b.params = 1e7;
  b.matmul_flops = 1e12;
  TrainingSetup fp16 = s;
  fp16.mixed_precision = "fp16";
  apply_card_limits(fp16, find_gpu("t4"));
  apply_card_limits(s, find_gpu("t4"));
  const Coefficients coef;
  CHECK(block_kernel_times(b, s, find_gpu("t4"), coef).matmul_s ==
        doctest::Approx(block_kernel_times(b, fp16, find_gpu("t4"), coef).matmul_s * 65 / 8.1));
}

TEST_CASE("flash-attn and fp8 matmuls on cards without them, per trainer") {
  TrainingSetup s;
  s.mixed_precision = "fp16";
  s.trainer = "musubi";
  s.attention = "flash-attn";
  // musubi hands --flash_attn to flash-attn unchecked (trainer_base.py:1503-1504): the kernel raises
  CardLimits lim = apply_card_limits(s, find_gpu("2080ti"));
  CHECK(only(lim.rejections, "FlashAttention only supports Ampere GPUs or newer."));
  CHECK(apply_card_limits(s, find_gpu("3090")).rejections.empty());
  // fp8-torchao: SimpleTuner checks only for a CUDA device (cmd_args.py:791-792); an RTX 3090 (sm_86) has no fp8
  s.trainer = "simpletuner";
  s.attention = "diffusers";
  s.base_precision = "fp8-torchao";
  lim = apply_card_limits(s, find_gpu("3090"));
  CHECK(only(lim.rejections, "torch._scaled_mm"));
  CHECK(apply_card_limits(s, find_gpu("4090")).rejections.empty());
  // OneTrainer's FLOAT_W8A8 (fp8-torchao): its LinearW8A8 is not in the sources read, said so
  s.trainer = "onetrainer";
  lim = apply_card_limits(s, find_gpu("3090"));
  CHECK(lim.rejections.empty());
  CHECK(only(lim.warnings, "not in the sources read"));
  // weight-only fp8 (musubi --fp8_base, ai-toolkit float8) runs anywhere
  s.trainer = "musubi";
  s.base_precision = "fp8wo-torchao";
  lim = apply_card_limits(s, find_gpu("3090"));
  CHECK(lim.rejections.empty());
  CHECK(lim.warnings.empty());
  // kohya_ss runs sd-scripts: its responses
  s.trainer = "kohya_ss";
  s.base_precision = "no_change";
  s.mixed_precision = "bf16";
  lim = apply_card_limits(s, find_gpu("t4"));
  CHECK(only(lim.warnings, "library/train_util.py:5507-5512"));
}

TEST_CASE("check of a bf16 SDXL LoRA on a T4 and a 2080 Ti: the trainer runs bf16 emulated, said so") {
  for (const std::string gpu : {"t4", "2080ti"}) {
    CAPTURE(gpu);
    for (const std::string file : {"sd_scripts_sdxl_lora_bf16.sh", "simpletuner_sdxl_lora_bf16.json", "onetrainer_sdxl_lora_bf16.json"}) {
      CAPTURE(file);
      nlohmann::json j;
      check_on(file, gpu, j);
      const std::string text = said(j);
      CHECK(j["prediction"]["supported"] == true);
      CHECK(has(text, "mixed_precision bf16 on " + find_gpu(gpu).name));
      CHECK(has(text, "PyTorch runs bf16 emulated"));
    }
  }
  // the same sd-scripts LoRA in fp16 on the T4: no emulation, and several times faster than bf16
  nlohmann::json bf16, fp16;
  check_on("sd_scripts_sdxl_lora_bf16.sh", "t4", bf16);
  check_on("sd_scripts_sdxl_lora_fp16.sh", "t4", fp16);
  CHECK_FALSE(has(said(fp16), "emulated"));
  CHECK(bf16["prediction"]["step_time_s"].get<double>() > 3 * fp16["prediction"]["step_time_s"].get<double>());
  // on an RTX 3090 the bf16 config is what it asks
  nlohmann::json a;
  check_on("sd_scripts_sdxl_lora_bf16.sh", "3090", a);
  CHECK_FALSE(has(said(a), "emulated"));
}

TEST_CASE("check: xformers in bf16 on a T4 stops; fp8 matmuls on a 3090 stop or are warned about") {
  nlohmann::json j;
  CHECK(check_on("sd_scripts_sdxl_lora_xformers.sh", "t4", j) == 1);
  CHECK(j["prediction"]["supported"] == false);
  CHECK(has(said(j), "bf16 is only supported on A100+ GPUs"));
  CHECK(check_on("simpletuner_flux_lora_fp8_torchao.json", "3090", j) == 1);
  CHECK(has(said(j), "torch._scaled_mm"));
  check_on("onetrainer_flux_lora_w8a8.json", "3090", j);
  CHECK(has(said(j), "LinearW8A8"));
  check_on("simpletuner_flux_lora_fp8_torchao.json", "4090", j);
  CHECK_FALSE(has(said(j), "torch._scaled_mm"));
}

TEST_CASE("advise on a T4 and a 3090 offers no knob the card cannot run, in any trainer's lines") {
  // SDXL on a T4 (sm_75: no flash-attn 2, no fp8, xformers without bf16) and FLUX on an RTX 3090 (sm_86: no fp8
  // tensor cores): the plans' lines name SDPA and weight-only fp8 at most
  const std::vector<std::pair<std::string, std::string>> cases = {{"sdxl", "t4"}, {"flux", "3090"}};
  for (const auto& c : cases) {
    SetupFlags f;
    f.model = c.first;
    f.gpu = c.second;
    const Context ctx(make_request(f));
    for (const auto& name : emitter_names()) {
      if (trainer(name).plans_are_schedules()) continue;  // SimpleTuner: its keys are the schedule, no knob of these
      const TrainerAdvice a = advise_for_trainer(ctx, name, nullptr);
      const std::string& text = a.config_text;
      CAPTURE(name);
      CAPTURE(c.second);
      // xformers as each format turns it on (the kohya_ss GUI's "xformers" key holds the attention's name)
      for (const char* cannot : {"--xformers", "\"xformers\": \"xformers\"", "\"xformers\": true", "xformers: true", "flash_attn",
                                 "flash3", "flash-attn", "fp8_fast", "FLOAT_W8A8", "fp8-torchao", "do_fp8_training", "\"fp8\""})
        CHECK_MESSAGE(!has(text, cannot), cannot);
    }
  }
}
