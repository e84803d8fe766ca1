// Optimal per-block checkpointing plans, beyond any trainer's uniform knobs.
//
// The trainer's knobs are uniform (one interval, one stride, one backend). Here every block gets
// its own decision: kept; checkpointed inside a segment [b, e) that saves only its input state (the
// hidden state and the skip tensors crossing the cut that the chain does not hold anyway: the cost
// model's ScaledBlock boundary); FFN-only checkpointed;
// and the saved inputs of a checkpoint or FFN-only block either on the GPU or in pinned host
// memory. Attention-activation offload is a plan-wide switch (as in Plan); both settings are tried.
//
// The optimizer minimises the cost model's step time subject to the cost model's own activation
// timeline fitting the budget. Why a label-setting DP over block positions is exact:
//   simulate_activations() gives every position the live bytes base + P_j + (local working set of
//   segment j), where P_j is what the segments before j retain (the backward pass of segment j
//   runs while exactly those are alive). So a plan fits iff for every segment j:
//       base + P_j + L_j <= budget,
//   with L_j and the retained bytes R_j and the added time dt_j depending on segment j alone, and
//   step time = (time of the all-keep plan) + sum of dt_j. The future of a partial plan ending at
//   block i depends only on (i, P): a partial plan with smaller-or-equal P and time dominates. The
//   DP keeps, per position, the Pareto set of (P, time) labels and extends each by every decision
//   starting there. Branch and bound keeps it fast: a quick pass with few labels per position (on
//   a memory grid) gives a feasible plan, its time an upper bound; then the exact pass drops every
//   label whose time plus a lower bound on its completion exceeds it. Two lower bounds: a
//   fractional-knapsack relaxation (the bytes still to free, at the cheapest rates the remaining
//   blocks offer), and the DP itself run backwards on a grid of time with exact bytes (Grid: the
//   most bytes a prefix may retain and still finish within so much time). Labels are
//   never discretised unless a position holds more than `max_labels` of them; then they are
//   thinned on a memory grid (the result stays feasible — every label carries its exact bytes —
//   and `exact` says that thinning happened).
// A decision's costs are the cost model's own (costmodel/evaluator.hpp: segment_cost, the segment
// walk predict() runs), and every answer is re-checked with predict(). With measured runs of the
// setup (an Anchor), budget and times are the anchored ones: the plan is the fastest whose anchored
// peak fits, and its figures are anchored as every trainer schedule's are.
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/planner/block_graph.hpp"

namespace segadvise {

struct OptimalOptions {
  bool allow_ffn = true;                // FFN-only checkpointing on blocks with an FFN boundary
  bool allow_offload = true;            // saved checkpoint inputs in pinned host memory
  bool allow_attention_offload = true;  // also try the plan-wide attention offload
  bool segments_cross_lists = false;    // a checkpoint call may span two block lists (global index)
  int max_segment_blocks = 0;           // longest checkpoint call; 0: unlimited
  std::size_t max_labels = 20000;       // per position, before thinning on the memory grid
  int memory_grid_cells = 1 << 16;      // the grid: activation budget / cells
  // measured runs of this setup (advisor Context::anchor): the plan's costs are the anchored ones.
  // Not owned; null or without points: the static model's
  const Anchor* anchor = nullptr;
};

struct OptimalPlan {
  bool found = false;
  std::string reason;  // why nothing fits
  Plan plan;
  Prediction prediction;               // predict() of the plan, anchored when measured: the figures to show
  double dp_step_time_s = 0;           // what the DP computed (equals prediction.step_time_s, anchored)
  double dp_activation_peak_bytes = 0; // equals simulate_activations(plan).peak_bytes
  double activation_budget_bytes = 0;  // the budget it was solved for
  bool exact = true;                   // false when labels were thinned on the memory grid
  std::size_t labels = 0;              // labels kept over all positions (search size)
};

struct FrontPoint {
  double peak_vram_bytes = 0;
  double step_time_s = 0;
  Plan plan;
};

struct ParetoFront {
  std::vector<FrontPoint> points;  // by peak VRAM ascending, step time descending
  int knee = -1;                   // index of the knee (largest distance below the end-to-end chord)
};

// Bytes saved and time added by one decision of a plan, against keeping those blocks.
struct InsightRow {
  std::string what;   // "checkpoint [4,8) transformer_blocks.4-7", "attention offload"
  double gpu_bytes_saved = 0;  // retained on the GPU after forward, kept minus planned
  double seconds_added = 0;    // recompute + exposed transfers per step
};

class PlanOptimizer {
 public:
  PlanOptimizer(const BlockChain& chain, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef,
                double headroom_bytes, OptimalOptions options = {});

  // The fastest plan that fits the GPU's usable memory minus headroom and static memory.
  OptimalPlan solve() const;
  // The fastest plan whose predicted peak VRAM is at most `peak_vram_bytes`. With a finite
  // `step_time_to_beat_s` (an incumbent: a plan of that step time is already in hand) only plans at
  // least as fast are searched for (the incumbent's time is the branch-and-bound cutoff, in place of
  // the quick pass); none such: found is false.
  OptimalPlan solve_for_peak(double peak_vram_bytes,
                             double step_time_to_beat_s = std::numeric_limits<double>::infinity()) const;
  // The smallest peak VRAM any plan reaches (every option used to save memory).
  double min_peak_vram_bytes() const;
  // Optimal plans over budgets from the smallest peak to the fastest plan's, at most `max_points`.
  ParetoFront pareto_front(int max_points = 24) const;
  std::vector<InsightRow> insight(const Plan& plan) const;

  const BlockGraph& graph() const { return graph_; }
  double static_bytes() const { return static_bytes_; }
  double usable_vram_bytes() const { return usable_bytes_; }

  // Peak VRAM <-> activation peak: peak = static + activation x (1 + fragmentation), each part
  // times its anchored scale when measured (anchor.hpp: fixed and activation scales).
  double peak_vram_for_activation(double activation_bytes) const;
  double activation_for_peak_vram(double peak_vram_bytes) const;

  // One decision the DP may take at a position: a segment [begin, end) under a mode, its costs.
  struct Decision {
    int begin = 0, end = 0;
    BlockMode mode = BlockMode::Keep;
    bool offload = false;
    double local_bytes = 0;     // working set on top of the retained prefix
    double retained_bytes = 0;  // left on the GPU for later positions
    double seconds = 0;         // added to the all-keep step time (anchored when measured)
  };
  // The decisions starting at each position, without or with the plan-wide attention offload
  // (kept first, then FFN-only, then checkpoint calls by rising end).
  const std::vector<std::vector<Decision>>& decisions(bool attention_offload) const {
    return decisions_[attention_offload ? 1 : 0];
  }
  // predict() of a plan, anchored when the options carry measurements
  Prediction predict_plan(const Plan& plan) const;

 private:
  enum class Objective { Time, Peak };
  struct Solution {
    bool found = false;
    double objective = 0, peak_bytes = 0;
    std::vector<int> decisions;  // indices into decisions_[flag]
    bool exact = true;
    std::size_t labels = 0;
  };

  // A lower bound on the time any completion from position i adds when the prefix retains P bytes
  // (see build_bounds): the completion must free at least P + kept(i..n) + slack_i - budget bytes,
  // and no block frees bytes cheaper than its convex hull of options allows.
  struct Bound {
    double kept_bytes = 0;  // retained by keeping every block from i on
    double slack_bytes = 0; // min over decisions ending the chain of (local - retained)
    double base_seconds = 0, base_freed = 0;  // every block at its cheapest option
    std::vector<double> freed, seconds, rate;  // hull increments by rising rate, cumulative
  };
  // A bound on completions, on a grid of time, for one attention-offload setting and one budget:
  // most[i][q] is at least the most bytes a prefix ending at block i may retain and still be
  // completed, within the budget, by decisions adding at most q cells of time (each decision's
  // seconds rounded down to cells). A label whose bytes exceed that for the time its cutoff leaves
  // cannot lead to a plan under the cutoff (rules_out), and the exact pass drops it.
  struct Grid {
    double cell = 0;         // seconds per cell: the horizon (the cutoff) / cells
    int cells = 0;           // 0: no grid
    double slack_bytes = 0;  // rounding of the sums that formed `most`
    std::vector<double> most;  // (n + 1) x (cells + 1): [position * (cells + 1) + cell]
    bool rules_out(int position, double retained_bytes, double seconds_left) const;
  };
  void build_decisions(bool attention_offload);
  void build_bounds(int flag);
  double lower_bound_s(int flag, int position, double retained_bytes, double limit_bytes) const;
  double limit_bytes(int flag, double budget_bytes) const;
  Grid build_grid(int flag, double limit_bytes, double horizon_s) const;
  Solution run(int flag, double budget_bytes, Objective objective, double upper_bound_s, std::size_t max_labels,
               const Grid* grid = nullptr) const;
  Plan to_plan(int flag, const std::vector<int>& decisions) const;
  OptimalPlan solve_activation(double budget_bytes, double step_time_to_beat_s = std::numeric_limits<double>::infinity()) const;
  bool keeping_everything_fits(double budget_bytes) const;
  Prediction anchored(const Prediction& p) const;  // anchor_'s scales applied (none: p)

  const BlockChain& chain_;
  const TrainingSetup& setup_;
  const GpuSpec& gpu_;
  const Coefficients& coef_;
  double headroom_bytes_ = 0;
  OptimalOptions options_;
  BlockGraph graph_;
  std::vector<int> flags_;  // attention offload settings worth trying: 0, and 1 when some block offloads
  std::vector<std::vector<std::vector<Decision>>> decisions_;  // [flag][begin] -> decisions
  std::vector<std::vector<Bound>> bounds_;                      // [flag][position]
  PreparedChain prepared_;  // the cost model's per-block figures of chain_ (evaluator.hpp)
  Anchor anchor_;           // the measured runs' scales (no points: the static model)
  double keep_step_time_s_ = 0;
  double static_bytes_ = 0, usable_bytes_ = 0, base_bytes_ = 0;
};

// The plan as JSON, and a block mode's name: plan_to_json and to_string(BlockMode) in
// segadvise/planner/plan_json.hpp (the one plan-JSON writer).

// "12 of 40 blocks checkpointed in 3 calls, 4 FFN-only, 24 kept"
std::string describe_plan(const Plan& plan, int block_count);

}  // namespace segadvise
