#include "segadvise/report/output.hpp"
#include "segadvise/report/memory_figures.hpp"

#include <algorithm>
#include <cstdio>

#include "segadvise/report/json_io.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

void Table::print(std::ostream& out, bool markdown) const {
  std::vector<std::size_t> w(header_.size(), 0);
  for (std::size_t i = 0; i < header_.size(); ++i) w[i] = columns(header_[i]);
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], columns(r[i]));
  auto line = [&](const std::vector<std::string>& r) {
    if (markdown) out << "|";
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      if (markdown)
        out << " " << cell << std::string(w[i] - columns(cell), ' ') << " |";
      else
        out << (i ? "  " : "") << cell << std::string(i + 1 < w.size() ? w[i] - columns(cell) : 0, ' ');
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

namespace {

void print_multi_gpu_setup(std::ostream& out, const Context& ctx, const std::string& b) {
  const MultiGpuSetup& m = ctx.setup.multi_gpu;
  out << b << "multi-GPU  " << m.world() << " x " << ctx.gpu.name << " (" << m.nodes << (m.nodes > 1 ? " nodes" : " node")
      << "), " << to_string(m.strategy);
  if (m.fsdp_cpu_offload) out << " + cpu offload";
  if (m.offload_optimizer) out << " + offload_optimizer";
  if (m.offload_param) out << " + offload_param";
  if (m.context_parallel > 1) out << ", context parallel " << m.context_parallel << " (" << to_string(m.cp_comm) << ")";
  if (m.grad_accumulation > 1) out << ", GA " << m.grad_accumulation;
  out << "; memory and time per rank (the busiest)\n";
  const GpuSpec& g = ctx.gpu;
  const std::string link = g.nvlink_gen > 0 ? "NVLink " + std::to_string(g.nvlink_gen) + ", " +
                                                  std::to_string(int(g.nvlink_bytes_per_s / 1e9)) + " GB/s"
                                            : "PCIe Gen" + std::to_string(g.pcie_gen) +
                                                  (g.p2p ? "" : " without P2P (through host memory)");
  out << b << "links      " << link << " per direction";
  if (m.nodes > 1) out << ", " << m.inter_node_bytes_per_s / 1e9 << " GB/s between nodes";
  out << "\n";
}

void print_communication(std::ostream& out, const Prediction& p) {
  const MultiGpuInfo& mg = p.multi_gpu;
  const CommVolume& v = mg.volume;
  auto gb = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", x / kGiB);
    return std::string(buf);
  };
  out << "\ncommunication per optimizer step (payload GiB per rank): all-gather " << gb(v.allgather_bytes)
      << ", reduce-scatter " << gb(v.reduce_scatter_bytes) << ", all-reduce " << gb(v.allreduce_bytes);
  if (v.alltoall_bytes > 0) out << ", all-to-all " << gb(v.alltoall_bytes);
  if (v.cp_allgather_bytes > 0) out << ", CP all-gather " << gb(v.cp_allgather_bytes);
  if (v.host_transfer_bytes > 0) out << ", host<->GPU " << gb(v.host_transfer_bytes);
  char buf[160];
  std::snprintf(buf, sizeof buf, "; on the links %.3f s, exposed %.3f s", mg.cost.total_s(), p.time.communication_s);
  out << buf;
  if (mg.host_ram_per_node_bytes > 0) out << "; host RAM per node about " << gib_str(mg.host_ram_per_node_bytes);
  if (mg.host_optimizer_s > 0) {
    std::snprintf(buf, sizeof buf, "; optimizer step on the CPU %.2f s", mg.host_optimizer_s);
    out << buf;
  }
  out << "\n";
}

// The base precision as the config names it, and the kernels its step time is costed with where
// those differ (int2-quanto runs Quanto's int4 kernels, uint8-sdnq SDNQ's int8 ones): printing only
// the kernel read as if the reader had changed the user's qtype.
std::string base_precision_text(const TrainingSetup& s) {
  // unquantized: the weights in the dtype the mixed precision trains them in (weight_dtype_bytes)
  if (s.base_precision == "no_change")
    return s.mixed_precision == "fp16" ? "fp16" : s.mixed_precision == "no" ? "float32 (no mixed precision)" : "bf16";
  const std::string key = precision_key(s);
  if (key == s.base_precision || key == "bf16") return s.base_precision;
  if (key == "int8-sdnq-hadamard") return s.base_precision + " with Hadamard rotation";
  return s.base_precision + " (timed as " + key + " kernels)";
}

}  // namespace

void print_setup(std::ostream& out, const Context& ctx, const TextFormat& fmt) {
  const TrainingSetup& s = ctx.setup;
  const std::string b = fmt.item();
  out << fmt.section(3, "Setup", "Setup (assumed where you gave no flag):\n");
  out << b << "model      " << ctx.family->name << " [" << ctx.family->id;
  if (!s.family_guessed_from.empty())
    out << ", GUESSED from " << s.family_guessed_from << ": confidence low; --model names it]\n";
  else if (!s.shape_assumed_from.empty())
    out << ", confidence: an assumed shape]\n";
  else
    out << ", confidence " << ctx.family->confidence << "]\n";
  out << b << "shape      " << s.width << "x" << s.height;
  if (s.frames > 1) out << "x" << s.frames << "f";
  out << ", batch " << s.batch << " -> " << static_cast<long long>(ctx.chain.tokens_image) << " image + "
      << static_cast<long long>(ctx.chain.tokens_text) << " text tokens per sample";
  if (!s.shape_assumed_from.empty()) out << " [ASSUMED: " << s.shape_assumed_from << "]";
  out << "\n";
  out << b << "training   " << to_string(s.model_type);
  if (s.model_type == ModelType::Lora)
    out << " (" << to_string(s.lora_type) << (s.lora_type == LoraType::Standard ? ", rank " + std::to_string(s.lora_rank) : "") << ")";
  // a trainer that keeps float32 weights under autocast (TrainingSetup::weight_storage_bytes)
  const bool fp32_weights = s.weight_storage_bytes >= 4;
  if (fp32_weights && !precision_info(s.base_precision).quantized)
    out << ", base float32 weights (" << s.mixed_precision << " autocast)";
  else
    out << ", base " << base_precision_text(s) << (fp32_weights ? " (its unquantized weights float32)" : "");
  out << ", optimizer " << s.optimizer;
  if (s.ramtorch) out << ", RamTorch " << s.ramtorch_percent << "%";
  if (s.blocks_to_swap > 0) out << ", block swap " << s.blocks_to_swap;
  out << "\n";
  out << b << "gpu        " << ctx.gpu.name << ": "
      << card_memory_text(card_overhead(ctx.gpu, ctx.coef), ctx.headroom_bytes, headroom_reason(ctx)) << "\n";
  if (!s.host_os.empty()) out << b << "system     " << s.host_os << " (" << s.host_os_from << ")\n";
  if (s.expandable_segments)
    out << b << "allocator  expandable_segments:True (" << s.expandable_segments_from << ")\n";
  if (s.multi_gpu.active()) print_multi_gpu_setup(out, ctx, b);
  for (const auto& n : s.notes) out << b << "note       " << n << "\n";
  for (const auto& w : ctx.warnings) out << b << "note       " << w << "\n";
  out << "\n";
}

void print_prediction(std::ostream& out, const Prediction& p, FitVerdict verdict, const TextFormat& fmt) {
  if (!p.supported) {
    out << "not supported: " << p.reason << "\n";
    return;
  }
  const MemoryBreakdown& m = p.memory;
  const TimeBreakdown& t = p.time;
  out << (verdict == FitVerdict::Fits ? "fits" : verdict == FitVerdict::Borderline ? "borderline" : "does NOT fit")
      << ": peak " << gib_str(p.peak_vram_bytes) << " reserved of "
      << gib_str(p.usable_vram_bytes) << " usable for it, " << secs_str(p.step_time_s) << "/step\n\n";
  Table mem({"memory", "GiB"});
  auto g = [](double b) { return gib_str(b, 2).substr(0, gib_str(b, 2).size() - 4); };
  mem.add({"resident weights", g(m.weights_bytes)});
  mem.add({"trainable parameters", g(m.trainable_bytes)});
  mem.add({"gradients", g(m.gradient_bytes)});
  mem.add({"optimizer state", g(m.optimizer_bytes)});
  mem.add({"activations (timeline peak)", g(m.activation_peak_bytes)});
  if (m.upcast_weight_bytes > 0) mem.add({"  of which upcast weight copies", g(m.upcast_weight_bytes)});
  mem.add({"allocator fragmentation", g(m.fragmentation_bytes)});
  if (p.multi_gpu.active) {
    mem.add({"gathered (unsharded) weights", g(m.gathered_bytes)});
    mem.add({"gradient buckets", g(m.bucket_bytes)});
  }
  mem.add({"= peak reserved (max_memory_reserved)", g(p.peak_vram_bytes)});
  mem.add({"  allocated (max_memory_allocated)", g(p.peak_vram_bytes - m.fragmentation_bytes)});
  mem.add({"  nvidia-smi (+ CUDA context, library workspaces)", g(p.peak_vram_bytes + p.smi_extra_bytes)});
  if (m.streamed_weights_bytes > 0) mem.add({"(weights streamed from host)", g(m.streamed_weights_bytes)});
  if (m.host_activation_bytes > 0) mem.add({"(activations offloaded to host)", g(m.host_activation_bytes)});
  if (m.host_state_bytes > 0) mem.add({"(model state offloaded to host)", g(m.host_state_bytes)});
  fmt.table(out, mem);
  out << fmt.gap() << "activation peak at: " << m.peak_phase << "\n\n";
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
  if (p.multi_gpu.active) time.add({"exposed communication", s(t.communication_s)});
  time.add({"= step", s(p.step_time_s)});
  fmt.table(out, time);
  if (p.multi_gpu.active) print_communication(out, p);
  for (const auto& w : p.warnings) out << "warning: " << w << "\n";
}

}  // namespace segadvise::cli
