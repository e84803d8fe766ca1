#include "output.hpp"

#include <algorithm>

#include "segadvise/costmodel/json_io.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise::cli {

void Table::print(std::ostream& out, bool markdown) const {
  std::vector<std::size_t> w(header_.size(), 0);
  for (std::size_t i = 0; i < header_.size(); ++i) w[i] = header_[i].size();
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& r) {
    if (markdown) out << "|";
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      if (markdown)
        out << " " << cell << std::string(w[i] - cell.size(), ' ') << " |";
      else
        out << (i ? "  " : "") << cell << std::string(i + 1 < w.size() ? w[i] - cell.size() : 0, ' ');
    }
    out << "\n";
  };
  line(header_);
  if (markdown) {
    out << "|";
    for (std::size_t i = 0; i < w.size(); ++i) out << " " << std::string(w[i], '-') << " |";
    out << "\n";
  } else {
    std::size_t total = 0;
    for (auto x : w) total += x + 2;
    out << std::string(total > 2 ? total - 2 : 0, '-') << "\n";
  }
  for (const auto& r : rows_) line(r);
}

nlohmann::json setup_json(const Context& ctx) {
  nlohmann::json j = to_json(ctx.setup);
  j["model_name"] = ctx.family->name;
  j["trainer_family"] = ctx.family->trainer_family;
  j["confidence"] = ctx.family->confidence;
  j["image_tokens"] = ctx.chain.tokens_image;
  j["text_tokens"] = ctx.chain.tokens_text;
  j["blocks"] = ctx.chain.blocks.size();
  j["block_costs"] = ctx.chain.source;
  j["gpu"] = ctx.gpu.name;
  j["calibration"] = ctx.coef.source;
  return j;
}

void print_setup(std::ostream& out, const Context& ctx, bool markdown) {
  const TrainingSetup& s = ctx.setup;
  const std::string b = markdown ? "- " : "  ";
  out << (markdown ? "### Setup\n\n" : "Setup (assumed where you gave no flag):\n");
  out << b << "model      " << ctx.family->name << " [" << ctx.family->id << ", confidence " << ctx.family->confidence
      << "]\n";
  out << b << "shape      " << s.width << "x" << s.height;
  if (s.frames > 1) out << "x" << s.frames << "f";
  out << ", batch " << s.batch << " -> " << static_cast<long long>(ctx.chain.tokens_image) << " image + "
      << static_cast<long long>(ctx.chain.tokens_text) << " text tokens per sample\n";
  out << b << "training   " << s.model_type;
  if (s.model_type == "lora") out << " (" << s.lora_type << (s.lora_type == "standard" ? ", rank " + std::to_string(s.lora_rank) : "") << ")";
  out << ", base " << (s.base_precision == "no_change" ? "bf16" : precision_key(s)) << ", optimizer " << s.optimizer;
  if (s.ramtorch) out << ", RamTorch " << s.ramtorch_percent << "%";
  if (s.blocks_to_swap > 0) out << ", block swap " << s.blocks_to_swap;
  out << "\n";
  out << b << "gpu        " << ctx.gpu.name << ": " << gib_str(ctx.gpu.total_bytes) << " total, "
      << gib_str(usable_vram_bytes(ctx.gpu, ctx.coef)) << " usable, headroom "
      << gib_str(ctx.headroom_bytes) << "\n";
  for (const auto& n : s.notes) out << b << "note       " << n << "\n";
  for (const auto& w : ctx.warnings) out << b << "note       " << w << "\n";
  out << "\n";
}

void print_prediction(std::ostream& out, const Prediction& p, bool markdown) {
  if (!p.supported) {
    out << "not supported: " << p.reason << "\n";
    return;
  }
  const MemoryBreakdown& m = p.memory;
  const TimeBreakdown& t = p.time;
  out << (p.fits ? "fits" : "does NOT fit") << ": peak " << gib_str(p.peak_vram_bytes) << " of "
      << gib_str(p.usable_vram_bytes) << " usable, " << secs_str(p.step_time_s) << "/step\n\n";
  Table mem({"memory", "GiB"});
  auto g = [](double b) { return gib_str(b, 2).substr(0, gib_str(b, 2).size() - 4); };
  mem.add({"resident weights", g(m.weights_bytes)});
  mem.add({"trainable parameters", g(m.trainable_bytes)});
  mem.add({"gradients", g(m.gradient_bytes)});
  mem.add({"optimizer state", g(m.optimizer_bytes)});
  mem.add({"activations (timeline peak)", g(m.activation_peak_bytes)});
  mem.add({"allocator fragmentation", g(m.fragmentation_bytes)});
  mem.add({"= peak", g(p.peak_vram_bytes)});
  if (m.streamed_weights_bytes > 0) mem.add({"(weights streamed from host)", g(m.streamed_weights_bytes)});
  if (m.host_activation_bytes > 0) mem.add({"(activations offloaded to host)", g(m.host_activation_bytes)});
  mem.print(out, markdown);
  out << (markdown ? "\n" : "") << "activation peak at: " << m.peak_phase << "\n\n";
  Table time({"time", "s/step"});
  auto s = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", x);
    return std::string(buf);
  };
  time.add({"forward", s(t.forward_s)});
  time.add({"backward", s(t.backward_s)});
  time.add({"recompute", s(t.recompute_s)});
  time.add({"exposed transfers", s(t.transfer_s)});
  time.add({"optimizer", s(t.optimizer_s)});
  time.add({"fixed overhead", s(t.overhead_s)});
  time.add({"= step", s(p.step_time_s)});
  time.print(out, markdown);
  for (const auto& w : p.warnings) out << "warning: " << w << "\n";
}

}  // namespace segadvise::cli
