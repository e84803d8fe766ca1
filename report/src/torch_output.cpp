#include "segadvise/report/torch_output.hpp"

#include <cstdio>
#include <sstream>

#include "segadvise/families/analyzer.hpp"
#include "segadvise/report/format.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/report/output.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

std::string fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// the prediction's error against the measurement, "+3.1%"; "-" with nothing measured
std::string pct(double predicted, double measured) {
  if (measured <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (predicted - measured) / measured);
  return buf;
}

}  // namespace

void print_profile_summary(std::ostream& out, const ProfileSummary& s) {
  Table t({"list", "kind", "tokens", "saved", "static", "fwd", "bwd", ""});
  for (const auto& k : s.kinds)
    t.add({k.list, k.kind, fixed(k.tokens, 0), gib_or_mib_str(k.saved_bytes), gib_or_mib_str(k.static_saved_bytes),
           fixed(k.forward_s, 3) + "s", fixed(k.backward_s, 3) + "s", k.extrapolated ? "(extrapolated)" : ""});
  table_format().table(out, t);
  out << "profile written to " << s.output << " (" << s.device << ", " << s.dtype << ", torch " << s.torch_version
      << ", attention: " << s.attention_backend << ")\n";
}

nlohmann::json validation_json(const ValidationView& v) {
  const Family& fam = *v.family;
  const TrainingSetup& setup = v.setup;
  const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  nlohmann::json j;
  j["model"] = fam.id;
  j["device"] = v.device;
  j["torch_version"] = v.torch_version;
  j["blocks"] = v.blocks;
  j["setup"] = to_json(setup);
  j["tokens_image"] = g.image_tokens;
  j["tokens_text"] = g.text_tokens;
  j["profile"] = v.profile;
  j["steps"] = v.steps;
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : v.plans) {
    nlohmann::json o = {{"schedule", r.schedule}, {"supported", r.supported}};
    if (!r.supported) {
      o["reason"] = r.reason;
    } else {
      const double peak = r.measured_peak_bytes, step = r.measured_step_s;
      o["plan"] = r.description;
      o["predicted_peak_bytes"] = r.predicted.peak_vram_bytes;
      o["measured_peak_bytes"] = peak;
      o["peak_error"] = peak > 0 ? (r.predicted.peak_vram_bytes - peak) / peak : 0;
      o["predicted_step_s"] = r.predicted.step_time_s;
      o["measured_step_s"] = step;
      o["step_error"] = step > 0 ? (r.predicted.step_time_s - step) / step : 0;
      o["measured_step_times_s"] = r.measured_step_times_s;
      o["measured_host_peak_bytes"] = r.measured_host_peak_bytes;
      o["predicted_host_bytes"] = r.predicted.memory.host_activation_bytes;
      o["prediction"] = to_json(r.predicted);
    }
    arr.push_back(o);
  }
  j["runs"] = arr;
  return j;
}

void print_validation(std::ostream& out, const ValidationView& v, const TextFormat& fmt) {
  const Family& fam = *v.family;
  const TrainingSetup& setup = v.setup;
  const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  std::ostringstream head;
  head << fam.name << ", " << v.blocks << " blocks, " << setup.width << "x" << setup.height << ", " << setup.frames
       << " frames, batch " << setup.batch << " (" << fixed(g.image_tokens, 0) << " image + " << fixed(g.text_tokens, 0)
       << " text tokens), on " << v.device << ", torch " << v.torch_version;
  out << fmt.either("validate: ", "") << head.str() << "\n"
      << fmt.either("  ", "") << "prediction from profile " << v.profile << "; median of " << v.steps
      << " steps after " << v.warmup << " warm-up\n\n";
  Table t({"schedule", "plan", "predicted peak", "measured peak", "error", "predicted s/step", "measured s/step",
           "error"});
  for (const auto& r : v.plans) {
    if (!r.supported) {
      t.add({r.schedule, "not run: " + r.reason, "", "", "", "", "", ""});
      continue;
    }
    t.add({r.schedule, r.description, gib_or_mib_str(r.predicted.peak_vram_bytes), gib_or_mib_str(r.measured_peak_bytes),
           pct(r.predicted.peak_vram_bytes, r.measured_peak_bytes), fixed(r.predicted.step_time_s, 3),
           fixed(r.measured_step_s, 3), pct(r.predicted.step_time_s, r.measured_step_s)});
  }
  fmt.table(out, t);
}

nlohmann::json distributed_validation_json(const DistributedView& v) {
  nlohmann::json j;
  j["model"] = v.family->id;
  j["device"] = v.device;
  j["torch_version"] = v.torch_version;
  j["backend"] = "gloo (127.0.0.1, FileStore)";
  j["gpus"] = v.gpus;
  j["blocks"] = v.blocks;
  j["steps"] = v.steps;
  // setup.gpus / setup.strategy as predict --gpus writes them (one strategy per run below)
  TrainingSetup multi = v.setup;
  multi.multi_gpu.gpus_per_node = v.gpus;
  if (v.runs.size() == 1) multi.multi_gpu.strategy = v.runs.front().strategy;
  j["setup"] = to_json(multi);
  if (v.runs.size() != 1) j["setup"]["strategy"] = "per run";
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : v.runs) {
    const auto& p = r.predicted;
    const double measured = r.measured_peak_bytes;
    arr.push_back({{"strategy", to_string(r.strategy)},
                   {"predicted",
                    {{"weights_bytes", p.weights_bytes},
                     {"grads_bytes", p.grads_bytes},
                     {"optimizer_bytes", p.optimizer_bytes},
                     {"gathered_in_flight_bytes", p.gathered_in_flight_bytes},
                     {"buckets_bytes", p.buckets_bytes},
                     {"peak_bytes", p.total_bytes()},
                     {"allgather_bytes", r.predicted_comm.allgather_bytes},
                     {"reduce_scatter_bytes", r.predicted_comm.reduce_scatter_bytes},
                     {"allreduce_bytes", r.predicted_comm.allreduce_bytes}}},
                   {"measured_peak_bytes", measured},
                   {"peak_error", measured > 0 ? (p.total_bytes() - measured) / measured : 0},
                   {"comm_equal", r.comm_equal},
                   {"gradients_bit_equal", r.gradients_bit_equal},
                   {"grad_max_abs_diff", r.grad_max_abs_diff},
                   {"grad_max_abs", r.grad_max_abs},
                   {"step_s", r.step_s},
                   {"ranks", r.ranks}});
  }
  j["runs"] = arr;
  return j;
}

void print_distributed_validation(std::ostream& out, const DistributedView& v, const TextFormat& fmt) {
  const TrainingSetup& setup = v.setup;
  out << fmt.either("validate: ", "") << v.family->name << ", " << v.blocks << " blocks, " << setup.width << "x"
      << setup.height << ", batch " << setup.batch << " per rank, "
      << (setup.model_type == ModelType::Full ? "full" : "LoRA") << ", on " << v.gpus
      << " CPU processes over Gloo (torch " << v.torch_version << ")\n"
      << fmt.either("  ", "") << "model-state peak per rank (busiest rank), payload bytes per rank per step (last of "
      << v.steps << "), gradients of step 1 against one process\n\n";
  Table t({"strategy", "pred peak", "meas peak", "err", "all-gather", "reduce-scatter", "all-reduce", "bytes",
           "gradients", "s/step"});
  for (const auto& r : v.runs) {
    char grad[64];
    if (r.gradients_bit_equal)
      std::snprintf(grad, sizeof grad, "bit-equal");
    else
      std::snprintf(grad, sizeof grad, "max diff %.2g", r.grad_max_abs_diff);
    t.add({to_string(r.strategy), mib_str(r.predicted.total_bytes()), mib_str(r.measured_peak_bytes),
           pct(r.predicted.total_bytes(), r.measured_peak_bytes), mib_str(r.allgather_bytes),
           mib_str(r.reduce_scatter_bytes), mib_str(r.allreduce_bytes), r.comm_equal ? "equal" : "DIFFER", grad,
           fixed(r.step_s, 3) + "s"});
  }
  fmt.table(out, t);
}

}  // namespace segadvise::cli
