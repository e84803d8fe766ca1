// segadvise advise --model M --gpu G [...]: every schedule the family's trainer supports, the
// Pareto front, the fastest that fits with headroom, its config keys; when nothing fits, by how much
// and what would.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "advise_optimal.hpp"
#include "commands.hpp"
#include "emitters.hpp"
#include "output.hpp"
#include "segadvise/costmodel/json_io.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise::cli {

namespace {

struct Alternative {
  std::string change;  // "batch 2", "int8-sdnq base", …
  Schedule schedule;
  Prediction prediction;
};

Advice advise_context(const Context& ctx, bool keep_all = false) {
  const auto schedules = enumerate_schedules(schedule_space(ctx));
  prepared(ctx);  // build the shared cache before advise evaluates in parallel
  return advise(schedules, [&](const Schedule& s) { return evaluate(ctx, s); }, ctx.headroom_bytes, keep_all);
}

// When nothing fits: smaller batch, resolution or frames; a quantized base; weight streaming.
std::vector<Alternative> what_would_fit(const Context& base) {
  std::vector<Alternative> out;
  auto attempt = [&](const std::string& change, const std::function<bool(TrainingSetup&)>& edit) {
    Context ctx = base;
    if (!edit(ctx.setup)) return;
    reanalyze(ctx);
    const Advice a = advise_context(ctx);
    if (a.recommended < 0) return;
    const Candidate& c = a.candidates[a.recommended];
    out.push_back({change, c.schedule, c.prediction});
  };
  const TrainingSetup& s = base.setup;
  for (int b = s.batch / 2; b >= 1; b /= 2) {
    const std::size_t before = out.size();
    attempt("train_batch_size " + std::to_string(b), [b](TrainingSetup& x) { x.batch = b; return true; });
    if (out.size() > before) break;
  }
  for (double f : {0.75, 0.5}) {
    const int w = round_to_alignment(s.width * f, base.family->geometry.alignment);
    const int h = round_to_alignment(s.height * f, base.family->geometry.alignment);
    const std::size_t before = out.size();
    attempt("resolution " + std::to_string(w) + "x" + std::to_string(h), [w, h](TrainingSetup& x) {
      x.width = w;
      x.height = h;
      return true;
    });
    if (out.size() > before) break;
  }
  if (s.frames > 1) {
    for (int fr : {s.frames * 2 / 3, s.frames / 2, s.frames / 4}) {
      const int frames = apply_frame_rule(*base.family, std::max(1, fr));
      if (frames >= s.frames || frames < 1) continue;
      const std::size_t before = out.size();
      attempt("frames " + std::to_string(frames), [frames](TrainingSetup& x) { x.frames = frames; return true; });
      if (out.size() > before) break;
    }
  }
  if (!precision_info(s.base_precision).quantized && s.model_type == "lora") {
    for (const char* p : {"int8-quanto", "fp8-torchao", "nf4-bnb"}) {
      const std::size_t before = out.size();
      attempt(std::string("base_model_precision ") + p, [p](TrainingSetup& x) {
        x.base_precision = p;
        return true;
      });
      if (out.size() > before) break;
    }
  }
  if (!s.ramtorch) attempt("ramtorch: true (stream block weights)", [](TrainingSetup& x) {
      x.ramtorch = true;
      x.ramtorch_percent = 100;
      return true;
    });
  return out;
}

std::string yesno(bool b) { return b ? "yes" : "no"; }

std::string fmt(double x, const char* f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

int run_advise(Context& ctx, const SetupFlags& f, std::ostream& out, bool show_all, const std::string& emit,
               const std::string& plot_file, const std::string& plan_file, bool with_front) {
  check_emit_name(emit);
  const Advice a = advise_context(ctx, show_all);
  const Candidate* recommended = a.recommended >= 0 ? &a.candidates[a.recommended] : nullptr;
  const bool other_trainer = !emit.empty() && emit != "simpletuner";
  const bool json = f.format == "json", md = f.format == "markdown";
  // the front of optimal plans costs ~100 ms (seconds on 192-block chains): only for --plot/--front
  const OptimalView optimal = compute_optimal(ctx, a, with_front || !plot_file.empty());
  write_optimal_files(optimal, ctx, a, plot_file, plan_file);
  std::vector<Alternative> alternatives;
  if (a.recommended < 0) alternatives = what_would_fit(ctx);

  if (json) {
    nlohmann::json j;
    j["model"] = ctx.family->id;
    j["gpu"] = ctx.gpu.id;
    const double usable = std::max(0.0, ctx.gpu.total_bytes - ctx.coef.for_gpu(ctx.gpu.id).reserve_bytes);
    j["usable_vram_gib"] = usable / kGiB;
    j["headroom_gib"] = ctx.headroom_bytes / kGiB;
    j["setup"] = setup_json(ctx);
    j["schedules_evaluated"] = a.evaluated_count;
    j["schedules_unsupported"] = a.unsupported_count;
    j["schedules_supported"] = a.supported_count;
    nlohmann::json cands = nlohmann::json::array();
    for (const auto& c : a.candidates) {
      if (!show_all && !c.pareto && &c - &a.candidates[0] != a.recommended) continue;
      nlohmann::json pj = to_json(c.prediction);
      pj["pareto"] = c.pareto;
      cands.push_back({{"schedule", to_json(c.schedule)}, {"plan", describe(c.plan.plan, ctx.chain)}, {"prediction", pj}});
    }
    j["candidates"] = cands;
    if (a.recommended >= 0) {
      const Candidate& c = a.candidates[a.recommended];
      j["recommendation"] = {{"schedule", to_json(c.schedule)},
                             {"prediction", to_json(c.prediction)},
                             {"config", simpletuner_keys(c.schedule)}};
    } else {
      j["recommendation"] = nullptr;
      j["shortfall_gib"] = a.shortfall_bytes / kGiB;
      nlohmann::json alts = nlohmann::json::array();
      for (const auto& alt : alternatives)
        alts.push_back({{"change", alt.change},
                        {"schedule", to_json(alt.schedule)},
                        {"peak_vram_gib", alt.prediction.peak_vram_bytes / kGiB},
                        {"step_time_s", alt.prediction.step_time_s}});
      j["what_would_fit"] = alts;
    }
    j["optimal"] = optimal_json(optimal);
    if (other_trainer) j["emit"] = to_json(advise_for_trainer(ctx, emit, recommended));
    out << j.dump(2) << "\n";
    return a.recommended >= 0 ? kOk : kDoesNotFit;
  }

  if (md) out << "## segadvise: " << ctx.family->name << " on " << ctx.gpu.name << "\n\n";
  print_setup(out, ctx, md);
  out << (md ? "### Schedules\n\n" : "") << a.evaluated_count << " schedules evaluated, " << a.supported_count
      << " supported by the trainer for this family" << (show_all ? "" : "; Pareto front (time vs memory):") << "\n\n";
  Table t({"schedule", "peak", "s/step", "fits", "what runs"});
  // A long front is thinned to ~14 rows spread over its memory range (fastest, smallest and the
  // recommendation always shown); --all prints every supported schedule.
  const std::size_t kRows = 14;
  std::vector<bool> shown(a.candidates.size(), true);
  std::size_t hidden = 0;
  if (!show_all && a.candidates.size() > kRows) {
    std::vector<std::size_t> by_peak(a.candidates.size());
    for (std::size_t i = 0; i < by_peak.size(); ++i) by_peak[i] = i;
    std::sort(by_peak.begin(), by_peak.end(), [&](std::size_t x, std::size_t y) {
      return a.candidates[x].prediction.peak_vram_bytes < a.candidates[y].prediction.peak_vram_bytes;
    });
    std::fill(shown.begin(), shown.end(), false);
    for (std::size_t k = 0; k < kRows; ++k) shown[by_peak[k * (by_peak.size() - 1) / (kRows - 1)]] = true;
    if (a.recommended >= 0) shown[a.recommended] = true;
    for (bool s : shown) hidden += !s;
  }
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    const Candidate& c = a.candidates[i];
    if (!shown[i]) continue;
    std::string name = c.schedule.name();
    if (static_cast<int>(i) == a.recommended) name = "* " + name;
    t.add({name, gib_str(c.prediction.peak_vram_bytes), secs_str(c.prediction.step_time_s), yesno(c.prediction.fits),
           describe(c.plan.plan, ctx.chain)});
  }
  t.print(out, md);
  if (hidden) out << "(" << hidden << " more points on the front; --all lists every supported schedule)\n";
  out << "\n";
  // the comparison with the optimal per-block plan first: the recommendation and its config keys
  // are what a user acts on, so they come last
  print_optimal(out, optimal, a, md);
  out << "\n";
  if (a.recommended >= 0) {
    const Candidate& c = a.candidates[a.recommended];
    out << (md ? "### Recommendation\n\n" : "Recommendation: ") << c.schedule.name() << " — "
        << secs_str(c.prediction.step_time_s) << "/step, peak " << gib_str(c.prediction.peak_vram_bytes) << " of "
        << gib_str(c.prediction.usable_vram_bytes) << " usable\n";
    if (md) out << "\n```json\n"; else out << "SimpleTuner config keys:\n";
    out << simpletuner_keys(c.schedule).dump(2) << "\n";
    if (md) out << "```\n";
    for (const auto& w : c.prediction.warnings) out << "warning: " << w << "\n";
  } else {
    out << "Nothing fits: the smallest schedule needs " << gib_str(a.shortfall_bytes)
        << " more than the card has (usable minus headroom).\n";
    if (alternatives.empty()) {
      out << "No single change tried (batch, resolution, frames, quantized base, RamTorch) makes it fit.\n";
    } else {
      out << "What would fit:\n";
      for (const auto& alt : alternatives)
        out << "  - " << alt.change << ": " << alt.schedule.name() << ", " << secs_str(alt.prediction.step_time_s)
            << "/step, peak " << gib_str(alt.prediction.peak_vram_bytes) << "\n";
    }
  }
  if (other_trainer) print_trainer_advice(out, advise_for_trainer(ctx, emit, recommended), md);
  (void)fmt;
  return a.recommended >= 0 ? kOk : kDoesNotFit;
}

void setup_advise(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("advise", "recommend the fastest checkpointing schedule that fits (the default command)");
  auto flags = std::make_shared<SetupFlags>();
  auto all = std::make_shared<bool>(false);
  auto emit = std::make_shared<std::string>();
  auto plot = std::make_shared<std::string>(), plan_out = std::make_shared<std::string>();
  auto front = std::make_shared<bool>(false);
  add_setup_flags(cmd, *flags);
  cmd->add_option("--plot", *plot, "write the Pareto front of optimal plans as SVG to FILE");
  cmd->add_option("--plan-out", *plan_out, "write the optimal per-block plan as JSON to FILE (for validate --plan)");
  cmd->add_flag("--all", *all, "list every supported schedule, not only the Pareto front");
  cmd->add_flag("--front", *front, "also compute the Pareto front of optimal plans (JSON, table)");
  cmd->add_option("--emit", *emit, "print the recommendation as config for: simpletuner, musubi, ai-toolkit, onetrainer, diffusers");
  cmd->callback([flags, all, emit, plot, plan_out, front, &exit_code] {
    check_emit_name(*emit);
    Context ctx = build_context(*flags);
    exit_code = run_advise(ctx, *flags, std::cout, *all, *emit, *plot, *plan_out, *front);
  });
}

}  // namespace segadvise::cli
