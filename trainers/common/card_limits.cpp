#include "segadvise/trainers/card_limits.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "segadvise/trainers/facts.hpp"

namespace segadvise {

namespace {

const nlohmann::json& data() {
  static const nlohmann::json d = trainer_data_file("card-capabilities.json");
  return d;
}

// the trainer's entries (kohya_ss: sd-scripts'), null when the file has none for it
const nlohmann::json* trainer_entry(const std::string& id) {
  const nlohmann::json& t = data().at("trainers");
  auto it = t.find(id);
  if (it == t.end()) return nullptr;
  if (it->contains("same_as")) it = t.find(it->at("same_as").get<std::string>());
  return it == t.end() ? nullptr : &*it;
}

std::string card_words(const GpuSpec& g) {
  return g.name + (g.sm > 0 ? " (sm_" + std::to_string(g.sm) + ")" : "");
}

std::string tflops_text(double t) {
  std::string s = std::to_string(t);
  return s.substr(0, s.find('.') + 2);
}

// the response's words: the trainer stops, or what runs instead; `asked` names what the config asks for
void respond(const nlohmann::json& e, const std::string& trainer, const std::string& asked, const std::string& lacks,
             const std::string& instead, CardLimits& out) {
  const std::string response = e.at("response").get<std::string>();
  const std::string source = e.at("source").get<std::string>();
  const std::string head = trainer + ": " + asked + " on a card without " + lacks;
  if (response == "refuses")
    out.rejections.push_back(head + ": the trainer stops: \"" + e.value("message", std::string()) + "\" (" + source + ")");
  else if (response == "kernel_error")
    out.rejections.push_back(head + ": the trainer does not check the card and the kernel raises at the first step: \"" +
                             e.value("message", std::string()) + "\" (" + source + ")");
  else if (response == "unknown")
    out.warnings.push_back(head + ": what the trainer does is not in the sources read (" + source + "); predicted " + instead);
  else if (!instead.empty())
    out.warnings.push_back(head + ": " + instead + " (" + source + ")");
}

}  // namespace

bool runs_fp8_matmul(const TrainingSetup& s) {
  return s.fp8_matmul || s.mixed_precision == "fp8" || s.base_precision == "fp8-torchao" ||
         s.base_precision == "fp8-transformerengine";
}

bool asks_flash_attention(const std::string& a) {
  return a.rfind("flash", 0) == 0 || a == "native-flash";
}

CardLimits apply_card_limits(TrainingSetup& s, const GpuSpec& g) {
  CardLimits out;
  s.matmul_rate_share = 1;
  if (g.id == "custom") return out;
  const nlohmann::json* t = trainer_entry(s.trainer);
  if (!t) return out;
  const std::string& who = s.trainer;
  const bool bf16 = s.mixed_precision == "bf16";
  if (bf16 && !g.bf16_native && t->contains("bf16")) {
    const nlohmann::json& em = data().at("emulated_bf16");
    const double card = g.bf16_flops_per_s / 1e12;
    const double rate = em.at("tflops").value(g.id, card * em.at("default_share").get<double>());
    if (t->at("bf16").at("response") == "emulated" && card > 0) {
      s.matmul_rate_share = std::min(1.0, rate / card);
      out.warnings.push_back(
          who + ": mixed_precision bf16 on " + card_words(g) +
          ", which has no bf16 tensor cores: the trainer does not check (" + t->at("bf16").at("source").get<std::string>() +
          ") and PyTorch runs bf16 emulated (torch.cuda.is_bf16_supported() is True there by emulation): matmuls timed at about " +
          tflops_text(rate) + " TFLOP/s (" + em.at("note").get<std::string>() + "), not the card's " + tflops_text(card) +
          " TFLOP/s fp16 rate; SDPA's attention is its math kernel (the memory-efficient one takes bf16 from sm80), whose seq x seq "
          "scores are not in the predicted peak; fp16 mixed precision runs on the tensor cores");
    } else {
      respond(t->at("bf16"), who, "mixed_precision bf16", "bf16 tensor cores (" + card_words(g) + ")", "", out);
    }
  }
  if (asks_flash_attention(s.attention) && !g.flash_attention_2 && t->contains("flash"))
    respond(t->at("flash"), who, "attention " + s.attention, "the flash-attn 2 kernels (" + card_words(g) + ")",
            "with SDPA's own kernel", out);
  if (s.attention == "xformers" && !g.flash_attention_2 && g.sm > 0) {
    if (bf16)  // xformers' memory-efficient forward takes bf16 from sm80 only
      out.rejections.push_back(who + ": xformers attention in bf16 on " + card_words(g) +
                               ": xformers raises at the first step: \"No operator found for `memory_efficient_attention_forward`"
                               " ... bf16 is only supported on A100+ GPUs\" (xformers' cutlass operator, not among the sources read: " +
                               data().at("pytorch").at("xformers_bf16_on_sm_below_80").get<std::string>() + ")");
    else if (t->contains("xformers") && t->at("xformers").at("response") == "unknown")
      respond(t->at("xformers"), who, "attention xformers", "the flash-attn 2 kernels (" + card_words(g) + ")",
              "as xformers' memory-efficient kernel", out);
  }
  if (runs_fp8_matmul(s) && !g.fp8_tensor && t->contains("fp8_matmul")) {
    const std::string asked = s.mixed_precision == "fp8" ? "mixed_precision fp8"
                              : s.fp8_matmul             ? "fp8 training"
                                                         : "base precision " + s.base_precision;
    respond(t->at("fp8_matmul"), who, asked + " (fp8 matmuls)", "fp8 tensor cores (" + card_words(g) + ")", "", out);
  }
  return out;
}

}  // namespace segadvise
