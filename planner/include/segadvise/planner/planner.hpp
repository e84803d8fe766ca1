// Search over the trainer's schedule space: enumerate every combination a family supports,
// predict each, keep the Pareto front (step time against peak VRAM), recommend the fastest that
// fits with headroom.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

struct ScheduleSpace {
  int max_interval = 1;   // longest checkpointed list (intervals 2..max)
  bool stride = true;     // strides k+1..max for each interval
  bool interval = true;   // interval/stride wired at all
  std::vector<Backend> backends = {Backend::Torch};
  bool attention_offload = false;
};

// Every schedule of the space, without duplicates: none, none-offload, layer, activation-offload, intervalK,
// segK-strideS, each with every backend and attention offload on and off.
std::vector<Schedule> enumerate_schedules(const ScheduleSpace& space);

struct Candidate {
  Schedule schedule;
  PlanResult plan;
  Prediction prediction;
  bool pareto = false;
};

struct Advice {
  // supported schedules sorted by step time: the Pareto front and the recommendation (every
  // supported one with keep_all)
  std::vector<Candidate> candidates;
  int unsupported_count = 0;
  int evaluated_count = 0;
  int supported_count = 0;
  int recommended = -1;  // index into candidates, -1 when nothing fits
  double shortfall_bytes = 0;  // when nothing fits: the smallest peak minus what is available
};

// `evaluate` realizes and predicts one schedule (the caller owns families and the cost model).
using Evaluate = std::function<Candidate(const Schedule&)>;
// Scores every schedule keeping only its figures (thousands of full candidates would cost more in
// allocation than in prediction), then re-evaluates the ones it returns.
Advice advise(const std::vector<Schedule>& schedules, const Evaluate& evaluate, double headroom_bytes,
              bool keep_all = false);

// Pareto-optimal points of (peak, time): no other point is both faster and no larger.
std::vector<bool> pareto_flags(const std::vector<double>& peak_bytes, const std::vector<double>& time_s);
// Marks the Pareto-optimal candidates (pareto_flags over their predictions).
void mark_pareto(std::vector<Candidate>& candidates);

}  // namespace segadvise
