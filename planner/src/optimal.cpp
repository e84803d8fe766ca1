#include "segadvise/planner/optimal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/evaluator.hpp"
#include "segadvise/costmodel/parallel.hpp"

namespace segadvise {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Plan keep_everything(int n) {
  Plan p;
  for (int i = 0; i < n; ++i) p.segments.push_back(Segment{i, i + 1, BlockMode::Keep, false});
  return p;
}

}  // namespace

std::string describe_plan(const Plan& plan, int block_count) {
  int ck = 0, calls = 0, ffn = 0, keep = 0, host = 0;
  for (const Segment& s : plan.segments) {
    const int n = s.end - s.begin;
    if (s.mode == BlockMode::Keep) keep += n;
    if (s.mode == BlockMode::Checkpoint) {
      ck += n;
      ++calls;
      if (s.offload_to_host) ++host;
    }
    if (s.mode == BlockMode::CheckpointFfn) {
      ffn += n;
      if (s.offload_to_host) host += n;
    }
  }
  std::string d = std::to_string(ck) + " of " + std::to_string(block_count) + " blocks checkpointed in " +
                  std::to_string(calls) + " calls";
  if (ffn) d += ", " + std::to_string(ffn) + " FFN-only";
  d += ", " + std::to_string(keep) + " kept";
  if (host) d += ", " + std::to_string(host) + " saved inputs on the host";
  if (plan.offload_attention) d += ", attention activations offloaded";
  return d;
}

PlanOptimizer::PlanOptimizer(const BlockChain& chain, const TrainingSetup& setup, const GpuSpec& gpu,
                             const Coefficients& coef, double headroom_bytes, OptimalOptions options)
    : chain_(chain),
      setup_(setup),
      gpu_(gpu),
      coef_(coef),
      headroom_bytes_(headroom_bytes),
      options_(options),
      graph_(chain),
      prepared_(prepare(chain, setup, gpu, coef)) {
  if (options_.anchor) anchor_ = *options_.anchor;
  options_.anchor = nullptr;  // held in anchor_
  const int n = static_cast<int>(chain.blocks.size());
  // Everything that no decision changes comes from the cost model itself: the all-keep plan's step
  // time is the constant every decision adds to, its static memory the constant under the peak.
  const Prediction keep = predict(prepared_, keep_everything(n), headroom_bytes);
  keep_step_time_s_ = anchored(keep).step_time_s;
  static_bytes_ = keep.memory.weights_bytes + keep.memory.trainable_bytes + keep.memory.gradient_bytes +
                  keep.memory.optimizer_bytes;
  usable_bytes_ = keep.usable_vram_bytes;
  base_bytes_ = chain.outside_activation_bytes;

  flags_ = {0};
  bool any_offloadable = false;
  for (const auto& b : chain.blocks) any_offloadable = any_offloadable || b.attention_offloadable;
  if (options_.allow_attention_offload && any_offloadable) flags_.push_back(1);
  decisions_.resize(2);
  bounds_.resize(2);
  for (int f : flags_) {
    build_decisions(f == 1);
    build_bounds(f);
  }
}

// Labels per position on a long chain (more than kLongChain blocks: longer than any shipped family,
// Stable Cascade's 192 micro-blocks, the threshold of planner/data/search.json's long_sequence):
// options_.max_labels, or fewer, so that one search stays near kLabelWork label x decision steps (a
// search extends every label of a position by each of its decisions; a Pareto front is ~70 searches).
// Past the cap labels are thinned on a memory grid (OptimalPlan::exact false): every plan stays
// feasible, with its exact bytes, within a grid cell of the optimum (20,000 labels x the 68,000
// decisions of one list of 1,024 blocks would be 1.4e9 steps per search).
// scripts/bench-advise.sh prints the times of 1,024- and 4,096-block chains. Shorter chains keep
// max_labels: their answers are exact as before.
namespace {
constexpr std::size_t kLongChain = 256;
constexpr double kLabelWork = 1 << 19;
constexpr std::size_t kMinLabels = 8;
constexpr int kLongChainFrontPlans = 8;

template <class Decisions>
std::size_t label_cap(const Decisions& decisions, const std::vector<int>& flags, std::size_t max_labels,
                      std::size_t blocks) {
  if (blocks <= kLongChain) return max_labels;
  std::size_t total = 0;
  for (int f : flags)
    for (const auto& ds : decisions[static_cast<std::size_t>(f)]) total += ds.size();
  const double cap = kLabelWork / static_cast<double>(std::max<std::size_t>(1, total));
  return std::min(max_labels, static_cast<std::size_t>(std::max(double(kMinLabels), cap)));
}
}  // namespace

Prediction PlanOptimizer::anchored(const Prediction& p) const {
  return anchor_.points.empty() ? p : apply_anchor_scales(anchor_, p, headroom_bytes_);
}

Prediction PlanOptimizer::predict_plan(const Plan& plan) const {
  return anchored(predict(prepared_, plan, headroom_bytes_));
}

double PlanOptimizer::peak_vram_for_activation(double activation_bytes) const {
  return anchor_.fixed_scale * static_bytes_ +
         anchor_.activation_scale * (activation_bytes * (1 + allocator_slack_share(setup_, coef_)));
}

double PlanOptimizer::activation_for_peak_vram(double peak_vram_bytes) const {
  return (peak_vram_bytes - anchor_.fixed_scale * static_bytes_) / (1 + allocator_slack_share(setup_, coef_)) /
         anchor_.activation_scale;
}

// Per-decision memory and time: the cost model's own segment costs (costmodel/evaluator.hpp), under
// the view of a plan that checkpoints something (the share attention offload moves then; a plan
// keeping every block with offload on is priced apart, solve_activation). The timeline puts every
// position of segment j at base + P_j + (a position of the segment alone), so
//   L = segment_cost().working_bytes, R = .retained_bytes, time = segment_added_s()
// are exact for the DP, up to the order of additions (the budget's relative 1e-12 covers it).
// A checkpoint call saves its input state: every tensor crossing the cut less the skip tensors the
// chain holds until their pop anyway (the cost model's ScaledBlock boundary; BlockGraph counts
// the skips for the insight rows).
void PlanOptimizer::build_decisions(bool attention_offload) {
  const int n = static_cast<int>(chain_.blocks.size());
  const PreparedChain& pc = prepared_;
  const OffloadView view = checkpointing_view(pc, attention_offload);
  const TransferRates rates = transfer_rates(pc);
  auto& out = decisions_[attention_offload ? 1 : 0];
  out.assign(n, {});
  auto add = [&](std::vector<Decision>& d, const Segment& s) {
    const SegmentCost c = segment_cost(pc, view, s);
    d.push_back({s.begin, s.end, s.mode, s.offload_to_host, c.working_bytes, c.retained_bytes,
                 segment_added_s(pc, view, s, rates, anchor_.recompute_scale, anchor_.transfer_scale)});
  };
  for (int i = 0; i < n; ++i) {
    const BlockCost& b = chain_.blocks[i];
    auto& d = out[i];
    add(d, {i, i + 1, BlockMode::Keep, false});
    if (!b.checkpointable) continue;
    if (options_.allow_ffn && b.has_ffn_boundary)
      for (bool host : {false, true})
        if (!host || options_.allow_offload) add(d, {i, i + 1, BlockMode::CheckpointFfn, host});
    // checkpoint calls [i, e), by increasing e: their working set never shrinks (the DP relies on it)
    for (int e = i + 1; e <= n; ++e) {
      const BlockCost& bk = chain_.blocks[e - 1];
      if (!bk.checkpointable) break;
      if (!options_.segments_cross_lists && bk.list != b.list) break;
      if (options_.max_segment_blocks > 0 && e - i > options_.max_segment_blocks) break;
      add(d, {i, e, BlockMode::Checkpoint, false});
      if (options_.allow_offload) add(d, {i, e, BlockMode::Checkpoint, true});
    }
  }
}

// The lower bound behind branch and bound. Any completion from position i, with the prefix
// retaining P, ends with a segment whose constraint reads
//     P + (bytes the completion retains before its last segment) + L_last <= limit,
// and L_last >= R_last for every decision (a block's working set holds at least what it leaves
// behind), so the completion must free at least  P + kept(i..n) + min(L_last - R_last) - limit
// bytes against keeping every block. Block k frees at most what its options offer: kept, FFN-only
// (GPU or host), or checkpointed with nothing retained at the cost of its recompute (a checkpoint
// call frees at most its blocks' kept bytes and costs at least their recompute). Relaxing each
// block to the lower convex hull of those (bytes freed, seconds added) points and filling the
// needed bytes at the cheapest rates first (fractional knapsack) never exceeds the true time.
void PlanOptimizer::build_bounds(int flag) {
  const int n = static_cast<int>(chain_.blocks.size());
  const auto& ds = decisions_[flag];
  struct Increment {
    double freed, seconds;
  };
  std::vector<std::vector<Increment>> hull(n);
  std::vector<double> start_freed(n, 0), start_s(n, 0), kept(n, 0);
  for (int k = 0; k < n; ++k) {
    const Decision& keep = ds[k][0];
    kept[k] = keep.retained_bytes;
    std::vector<std::pair<double, double>> pts = {{0.0, 0.0}};  // (freed, seconds) against keeping
    for (const Decision& d : ds[k]) {
      if (d.end != k + 1 || d.mode == BlockMode::Keep) continue;
      if (d.mode == BlockMode::Checkpoint && !d.offload)
        pts.push_back({keep.retained_bytes, d.seconds - keep.seconds});  // its input state not counted
      else if (d.mode == BlockMode::CheckpointFfn)
        pts.push_back({keep.retained_bytes - d.retained_bytes, d.seconds - keep.seconds});
    }
    std::sort(pts.begin(), pts.end());
    // start at the cheapest point (most freed among equals), then walk the lower hull rightwards
    std::size_t cur = 0;
    for (std::size_t q = 1; q < pts.size(); ++q)
      if (pts[q].second <= pts[cur].second) cur = q;
    start_freed[k] = pts[cur].first;
    start_s[k] = pts[cur].second;
    while (true) {
      std::size_t next = pts.size();
      double best_rate = kInf;
      for (std::size_t q = cur + 1; q < pts.size(); ++q) {
        const double dx = pts[q].first - pts[cur].first;
        if (dx <= 0) continue;
        const double rate = (pts[q].second - pts[cur].second) / dx;
        if (rate <= best_rate) {
          best_rate = rate;
          next = q;
        }
      }
      if (next == pts.size()) break;
      hull[k].push_back({pts[next].first - pts[cur].first, pts[next].second - pts[cur].second});
      cur = next;
    }
  }
  // The suffix's increments by rising rate, those of one rate as one group: a chain's identical
  // blocks give identical increments, so a position holds a few groups rather than 3 per block
  // after it (a copy and sort of every increment per position was quadratic: 4,096 blocks took
  // seconds and gigabytes). Filling a group's bytes at its one rate is the same fractional knapsack.
  struct Group {
    Increment first;  // the rate's representative: compared exactly, never re-derived from sums
    double freed, seconds;
  };
  auto rate_below = [](const Increment& a, const Increment& c) { return a.seconds * c.freed < c.seconds * a.freed; };
  auto& out = bounds_[flag];
  out.assign(n + 1, {});
  double slack = kInf;
  std::vector<Group> groups;
  for (int i = n - 1; i >= 0; --i) {
    for (const Decision& d : ds[i])
      if (d.end == n) slack = std::min(slack, d.local_bytes - d.retained_bytes);
    Bound& b = out[i];
    b.kept_bytes = out[i + 1].kept_bytes + kept[i];
    b.slack_bytes = slack;
    b.base_seconds = out[i + 1].base_seconds + start_s[i];
    b.base_freed = out[i + 1].base_freed + start_freed[i];
    for (const Increment& it : hull[i]) {
      auto g = std::lower_bound(groups.begin(), groups.end(), it,
                                [&](const Group& x, const Increment& v) { return rate_below(x.first, v); });
      if (g != groups.end() && !rate_below(it, g->first)) {
        g->freed += it.freed;
        g->seconds += it.seconds;
      } else {
        groups.insert(g, Group{it, it.freed, it.seconds});
      }
    }
    double f = 0, t = 0;
    for (const Group& g : groups) {
      f += g.freed;
      t += g.seconds;
      b.freed.push_back(f);
      b.seconds.push_back(t);
      b.rate.push_back(g.first.seconds / g.first.freed);
    }
  }
}

double PlanOptimizer::lower_bound_s(int flag, int position, double retained_bytes, double limit_bytes) const {
  const Bound& b = bounds_[flag][position];
  if (position >= static_cast<int>(chain_.blocks.size())) return 0;
  const double need = retained_bytes + b.kept_bytes + b.slack_bytes - limit_bytes - b.base_freed;
  if (need <= 0) return b.base_seconds;
  const double total = b.freed.empty() ? 0 : b.freed.back();
  if (need > total * (1 + 1e-9) + 1) return kInf;
  if (b.freed.empty()) return b.base_seconds;
  std::size_t j = std::lower_bound(b.freed.begin(), b.freed.end(), need) - b.freed.begin();
  if (j >= b.freed.size()) j = b.freed.size() - 1;
  const double f0 = j ? b.freed[j - 1] : 0, t0 = j ? b.seconds[j - 1] : 0;
  return b.base_seconds + t0 + (need - f0) * b.rate[j];
}

// The all-keep path of run() without attention offload, position by position with run()'s own
// limit and sums: it reaches the end with 0 s added exactly when this holds.
bool PlanOptimizer::keeping_everything_fits(double budget_bytes) const {
  const double limit = budget_bytes - base_bytes_ + std::abs(budget_bytes) * 1e-12;
  if (!(limit >= 0)) return false;
  double retained = 0;
  for (const auto& ds : decisions_[0]) {
    const Decision& keep = ds.front();
    if (keep.seconds != 0.0 || retained + keep.local_bytes > limit) return false;
    retained += keep.retained_bytes;
  }
  return true;
}

// The constraint per segment: base + P + L <= budget, with a relative 1e-12 for the cost model's
// own sums (another order of additions): a plan exactly at the budget stays in.
// Attention offload under checkpointing holds staging copies (costmodel/evaluator.hpp, OffloadView):
// at most offload_staging_blocks x the largest offloadable block's attention, kept out of the budget.
double PlanOptimizer::limit_bytes(int flag, double budget_bytes) const {
  double staging = 0;
  if (flag == 1)
    for (std::size_t i = 0; i < chain_.blocks.size(); ++i) {
      const BlockCost& b = chain_.blocks[i];
      if (b.attention_offloadable && b.checkpointable)
        staging = std::max(staging, coef_.offload_staging_blocks * prepared_.scaled[i].attention_bytes);
    }
  return budget_bytes - base_bytes_ - staging + std::abs(budget_bytes) * 1e-12;
}

// The grid in one backward pass over positions, decision by decision: a decision moves every
// time cell by the same number of cells (its seconds, rounded down: never more time than it
// adds), so each decision updates a contiguous run of cells (a loop the compiler vectorises).
// Bytes are exact: only the non-keep decisions of a completion (its checkpoint calls and FFN-only
// blocks) lose up to a cell of time each, so the bound stays close on long chains too (a grid
// over bytes lost up to a cell at every block: no bound at all on Stable Cascade's 192
// micro-blocks).
PlanOptimizer::Grid PlanOptimizer::build_grid(int flag, double limit, double horizon_s) const {
  Grid g;
  if (!(limit >= 0) || !std::isfinite(limit) || !(horizon_s > 0) || !std::isfinite(horizon_s)) return g;
  const int n = static_cast<int>(chain_.blocks.size());
  const auto& decisions = decisions_[flag];
  std::size_t total = 0;
  for (const auto& ds : decisions) total += ds.size();
  const double cells = kOptimalGridWork / static_cast<double>(std::max<std::size_t>(1, total));
  g.cells = static_cast<int>(std::clamp(cells, double(kOptimalGridMinCells), double(kOptimalGridMaxCells)));
  g.cell = horizon_s / g.cells;
  g.slack_bytes = 1e-9 * limit + 1e-3;
  const std::size_t stride = static_cast<std::size_t>(g.cells) + 1;
  g.most.assign((static_cast<std::size_t>(n) + 1) * stride, -kInf);
  std::fill(g.most.begin() + static_cast<std::ptrdiff_t>(n * stride), g.most.end(), kInf);
  for (int j = n - 1; j >= 0; --j) {
    double* most = &g.most[static_cast<std::size_t>(j) * stride];
    for (const Decision& d : decisions[j]) {
      const double cap = limit - d.local_bytes;  // the decision itself needs P + local <= limit
      if (cap < 0) {
        if (d.mode == BlockMode::Checkpoint) break;  // longer calls need at least as much
        continue;
      }
      // (every decision adds time, never less: seconds >= 0, so rounding down never adds time)
      const double shift = std::floor(d.seconds / g.cell - 1e-9);
      if (!(shift <= g.cells)) continue;  // beyond the horizon (or not a number)
      const int sh = std::max(0, static_cast<int>(shift));
      const double r = d.retained_bytes;
      const double* next = &g.most[static_cast<std::size_t>(d.end) * stride];
      for (int t = sh; t <= g.cells; ++t) most[t] = std::max(most[t], std::min(cap, next[t - sh] - r));
    }
  }
  return g;
}

// True when no completion from `position` retaining P adds at most `seconds_left`: P exceeds the
// most a prefix may retain there with that much time (its cell rounded up), beyond rounding slack
bool PlanOptimizer::Grid::rules_out(int position, double retained_bytes, double seconds_left) const {
  if (seconds_left < 0) return true;
  const double c = seconds_left / cell + 1e-9;
  const int q = c >= cells ? cells : static_cast<int>(c);
  return retained_bytes > most[static_cast<std::size_t>(position) * (static_cast<std::size_t>(cells) + 1) + q] + slack_bytes;
}

namespace {

// A partial plan of the label search (PlanOptimizer::run): what its prefix retains, its objective so
// far, and how it was reached. 24 bytes (sorting moves labels: 32 with three ints); positions and
// decisions fit 16 bits.
struct Label {
  double retained, objective;
  int prev;                // label index, -1 for the root
  std::uint16_t decision;  // index into decisions[begin]
  std::uint16_t begin;
};

// `v` as its Pareto set of (retained, objective): ascending bytes, strictly descending objective
void keep_pareto(std::vector<Label>& v) {
  std::sort(v.begin(), v.end(), [](const Label& a, const Label& b) {
    return a.retained != b.retained ? a.retained < b.retained : a.objective < b.objective;
  });
  double best = kInf;
  std::size_t w = 0;
  for (const Label& l : v)
    if (l.objective < best) {
      best = l.objective;
      v[w++] = l;
    }
  v.resize(w);
}

// Past max_labels, a Pareto set thinned on a memory grid over its range of retained bytes (cells at
// least `cell` wide): per cell the fastest label (the one with the most bytes of its cell: the set is
// sorted by bytes, time falling). Whether it thinned (the answer is then no longer exact).
bool thin_labels(std::vector<Label>& v, std::size_t max_labels, double cell) {
  if (max_labels == 0 || v.size() <= max_labels) return false;
  const double lo = v.front().retained, hi = v.back().retained;
  const double width = std::max(cell, (hi - lo) / static_cast<double>(max_labels));
  std::size_t w = 0;
  for (std::size_t k = 0; k < v.size(); ++k) {
    const bool last_of_cell =
        k + 1 == v.size() || std::floor((v[k + 1].retained - lo) / width) != std::floor((v[k].retained - lo) / width);
    if (last_of_cell) v[w++] = v[k];
  }
  v.resize(w);
  return true;
}

// The best label at the chain's end (from `first_at_n` on), followed back to the root: its decisions
// in order and the activation peak along them (the static bytes are the caller's).
template <class Labels, class Decisions, class Solution>
void trace_back_labels(const Labels& arena, std::size_t first_at_n, const Decisions& decisions, Solution& sol) {
  int best = -1;
  for (std::size_t id = first_at_n; id < arena.size(); ++id)
    if (best < 0 || arena[id].objective < arena[best].objective) best = static_cast<int>(id);
  if (best < 0) return;
  sol.found = true;
  sol.objective = arena[best].objective;
  std::vector<int> chosen_labels;
  for (int id = best; arena[id].prev >= 0; id = arena[id].prev) chosen_labels.push_back(id);
  std::reverse(chosen_labels.begin(), chosen_labels.end());
  double P = 0, peak = 0;
  for (int id : chosen_labels) {
    const auto& d = decisions[arena[id].begin][arena[id].decision];
    peak = std::max(peak, P + d.local_bytes);
    P += d.retained_bytes;
    sol.decisions.push_back(arena[id].begin);
    sol.decisions.push_back(arena[id].decision);
  }
  sol.peak_bytes = peak;
}

}  // namespace

PlanOptimizer::Solution PlanOptimizer::run(int flag, double budget_bytes, Objective objective, double upper_bound_s,
                                           std::size_t max_labels, const Grid* grid) const {
  const int n = static_cast<int>(chain_.blocks.size());
  const auto& decisions = decisions_[flag];
  Solution sol;
  const double limit = limit_bytes(flag, budget_bytes);
  if (limit < 0) return sol;
  // labels hold positions and decision indices in 16 bits (at most 3 + 2 n decisions per position)
  if (n > 32000) throw std::length_error("the optimal planner handles chains of up to 32000 blocks");

  std::vector<Label> arena;
  std::vector<std::vector<Label>> pending(n + 1);
  std::vector<std::size_t> prune_at(n + 1, 4096);
  pending[0].push_back({0.0, 0.0, -1, 0, 0});
  const double cell = options_.memory_grid_cells > 0 ? limit / options_.memory_grid_cells : 0.0;


  auto thin = [&](std::vector<Label>& v) {
    if (thin_labels(v, max_labels, cell)) sol.exact = false;
  };

  const bool bound = objective == Objective::Time && upper_bound_s < kInf;
  // per destination, a prefix-minimum (Fenwick) tree of times over a grid of retained bytes: a
  // candidate some label in a lower bucket dominates is dropped before it is stored (pareto() would
  // drop it later: only a filter). Under a bound of 0 s (keeping every block fits) only decisions
  // adding no time pass the bound and the sets stay tiny: no tree (its 1.6 MB for Stable Cascade's
  // 192 blocks were a fifth of that advise's page faults).
  constexpr int kBuckets = 1024;
  const double bucket_bytes = std::max(1.0, limit < kInf ? limit / kBuckets : 1e15);
  const bool filter = !(bound && upper_bound_s <= 0);
  std::vector<double> fenwick(filter ? static_cast<std::size_t>(n + 1) * (kBuckets + 1) : 0, kInf);
  const bool use_grid = grid && grid->cells > 0;
  const double cutoff = upper_bound_s + std::abs(upper_bound_s) * 1e-9 + 1e-12;
  std::size_t first_at_n = 0;
  for (int i = 0; i <= n; ++i) {
    std::vector<Label>& here = pending[i];
    keep_pareto(here);
    thin(here);
    const std::size_t first = arena.size();
    arena.insert(arena.end(), here.begin(), here.end());
    std::vector<Label>().swap(here);
    if (i == n) {
      first_at_n = first;
      break;
    }
    for (std::size_t id = first; id < arena.size(); ++id) {
      const double P = arena[id].retained, obj = arena[id].objective;
      const auto& ds = decisions[i];
      for (std::size_t k = 0; k < ds.size(); ++k) {
        const Decision& d = ds[k];
        if (P + d.local_bytes > limit) {
          if (d.mode == BlockMode::Checkpoint) break;  // longer calls need at least as much
          continue;
        }
        const double next = objective == Objective::Time ? obj + d.seconds : std::max(obj, P + d.local_bytes);
        const double next_retained = P + d.retained_bytes;
        // a label with fewer bytes (a lower grid bucket) and no more time already waits there
        // (checked before the bound: both only read, and this one is cheaper)
        const int bucket = std::min(kBuckets - 1, static_cast<int>(next_retained / bucket_bytes));
        double* tree = filter ? &fenwick[static_cast<std::size_t>(d.end) * (kBuckets + 1)] : nullptr;
        if (filter) {
          double below = kInf;
          for (int x = bucket; x > 0; x -= x & -x) below = std::min(below, tree[x]);
          if (below <= next) continue;
        }
        if (bound && use_grid && grid->rules_out(d.end, next_retained, cutoff - next)) continue;
        if (bound && next + lower_bound_s(flag, d.end, next_retained, limit) > cutoff) continue;
        if (filter)
          for (int x = bucket + 1; x <= kBuckets; x += x & -x) tree[x] = std::min(tree[x], next);
        auto& dest = pending[d.end];
        dest.push_back({next_retained, next, static_cast<int>(id), static_cast<std::uint16_t>(k),
                        static_cast<std::uint16_t>(i)});
        if (dest.size() >= prune_at[d.end]) {
          keep_pareto(dest);
          prune_at[d.end] = std::max<std::size_t>(4096, 2 * dest.size());
        }
      }
    }
  }
  sol.labels = arena.size();
  trace_back_labels(arena, first_at_n, decisions, sol);
  if (sol.found) sol.peak_bytes += base_bytes_;
  return sol;
}

Plan PlanOptimizer::to_plan(int flag, const std::vector<int>& decisions) const {
  Plan plan;
  plan.offload_attention = flag == 1;
  for (std::size_t k = 0; k + 1 < decisions.size(); k += 2) {
    const Decision& d = decisions_[flag][decisions[k]][decisions[k + 1]];
    Segment s{d.begin, d.end, d.mode, d.offload};
    // kept and FFN-only blocks are independent per block: runs merge into one explicit range
    if (!plan.segments.empty() && s.mode != BlockMode::Checkpoint) {
      Segment& last = plan.segments.back();
      if (last.mode == s.mode && last.offload_to_host == s.offload_to_host && last.end == s.begin) {
        last.end = s.end;
        continue;
      }
    }
    plan.segments.push_back(s);
  }
  plan.description = "optimal per-block plan: " + describe_plan(plan, static_cast<int>(chain_.blocks.size()));
  return plan;
}

OptimalPlan PlanOptimizer::solve_activation(double budget_bytes, double step_time_to_beat_s) const {
  OptimalPlan out;
  out.activation_budget_bytes = budget_bytes;
  int best_flag = -1;
  Solution best;
  // a quick pass with a handful of labels per position: a feasible plan, its time an upper bound.
  // When keeping every block fits, that pass would find the all-keep plan's 0 s (no decision adds
  // negative time): take the bound without the pass (for Stable Cascade the pass was most of advise).
  // A caller's incumbent is a bound too (in the DP's units: seconds added to all-keep); the quick
  // pass runs under it, and its plan, when it finds one at least as fast, tightens it (an incumbent
  // well above the optimum prunes little: Stable Cascade C's segmented search on a V100 kept 92,000
  // labels under the per-block plan's time alone).
  double upper = step_time_to_beat_s < kInf ? std::max(0.0, step_time_to_beat_s - keep_step_time_s_) : kInf;
  std::vector<Grid> grids(2);
  if (keeping_everything_fits(budget_bytes)) {
    upper = 0.0;
  } else {
    for (int f : flags_) {
      const Solution quick = run(f, budget_bytes, Objective::Time, upper,
                                    std::min<std::size_t>(48, label_cap(decisions_, flags_, options_.max_labels, chain_.blocks.size())));
      if (quick.found) upper = std::min(upper, quick.objective);
    }
    // the grids' horizon: run()'s cutoff
    if (upper < kInf)
      for (int f : flags_) grids[f] = build_grid(f, limit_bytes(f, budget_bytes), upper * (1 + 1e-9) + 1e-12);
  }
  for (int f : flags_) {
    Solution s = run(f, budget_bytes, Objective::Time, upper, label_cap(decisions_, flags_, options_.max_labels, chain_.blocks.size()), &grids[f]);
    out.labels += s.labels;
    out.exact = out.exact && s.exact;
    if (!s.found) continue;
    // the next setting's plan must beat or tie this one to be taken: its time is a tighter bound
    upper = std::min(upper, s.objective);
    if (best_flag < 0 || s.objective < best.objective ||
        (s.objective == best.objective && s.peak_bytes < best.peak_bytes)) {
      best = std::move(s);
      best_flag = f;
    }
  }
  // Attention offload without any checkpointing moves all of the attention side to the host,
  // while the DP prices offload at the checkpointed share (costmodel offload_share): price the
  // plan that keeps every block with offload on its own, through the cost model.
  Plan offload_only;
  bool offload_only_wins = false;
  Prediction offload_only_prediction;
  double offload_only_activation_bytes = 0;
  if (flags_.size() > 1) {
    offload_only = keep_everything(static_cast<int>(chain_.blocks.size()));
    offload_only.offload_attention = true;
    const Prediction modelled = predict(prepared_, offload_only, headroom_bytes_);
    offload_only_prediction = anchored(modelled);
    // the budget is in the static model's activation bytes (activation_for_peak_vram)
    const bool within = modelled.memory.activation_peak_bytes <= budget_bytes;
    offload_only_activation_bytes = modelled.memory.activation_peak_bytes;
    offload_only_wins = within && (best_flag < 0 || offload_only_prediction.step_time_s <
                                                        keep_step_time_s_ + best.objective - 1e-12);
  }
  if (offload_only_wins) {
    out.found = true;
    out.plan = offload_only;
    out.plan.description = "optimal per-block plan: every block kept, attention activations offloaded";
    out.dp_step_time_s = offload_only_prediction.step_time_s;
    out.dp_activation_peak_bytes = offload_only_activation_bytes;
    out.prediction = offload_only_prediction;
    return out;
  }
  if (best_flag < 0) {
    out.reason = "no per-block plan fits: the smallest predicted peak is " +
                 std::to_string(min_peak_vram_bytes() / kGiB).substr(0, 6) + " GiB";
    return out;
  }
  out.found = true;
  out.plan = to_plan(best_flag, best.decisions);
  out.dp_step_time_s = keep_step_time_s_ + best.objective;
  out.dp_activation_peak_bytes = best.peak_bytes;
  out.prediction = predict_plan(out.plan);
  return out;
}

OptimalPlan PlanOptimizer::solve() const {
  return solve_activation(activation_for_peak_vram(usable_bytes_ - headroom_bytes_));
}

OptimalPlan PlanOptimizer::solve_for_peak(double peak_vram_bytes, double step_time_to_beat_s) const {
  return solve_activation(activation_for_peak_vram(peak_vram_bytes), step_time_to_beat_s);
}

double PlanOptimizer::min_peak_vram_bytes() const {
  double best = kInf;
  for (int f : flags_) {
    const Solution s = run(f, kInf, Objective::Peak, kInf, label_cap(decisions_, flags_, options_.max_labels, chain_.blocks.size()));
    if (s.found) best = std::min(best, base_bytes_ + s.objective);
  }
  return peak_vram_for_activation(best);
}

ParetoFront PlanOptimizer::pareto_front(int max_points) const {
  ParetoFront front;
  if (chain_.blocks.empty()) return front;
  max_points = std::max(2, max_points);
  // A long chain's front (past kLongChain blocks) solves at most kLongChainFrontPlans budgets: each
  // search there is already thinned to a few labels per position (label_cap) and costs labels x
  // decisions (8 x ~550,000 for 4,096 blocks, both attention settings, twice: quick and bounded
  // pass), so the front's cost is held to about twice one advise's. Its points are real plans with
  // their exact figures, fewer of them. Shorter chains (every shipped family) keep the points asked
  // for, each exact.
  if (chain_.blocks.size() > kLongChain) max_points = std::min(max_points, kLongChainFrontPlans);
  const double lo = activation_for_peak_vram(min_peak_vram_bytes());
  const OptimalPlan fastest = solve_activation(kInf);
  if (!fastest.found) return front;
  front.points.push_back({fastest.prediction.peak_vram_bytes, fastest.prediction.step_time_s, fastest.plan});
  const double hi = fastest.dp_activation_peak_bytes;
  // budgets evenly from the fastest plan's peak down to the smallest peak, each solved on its own
  // (the searches are independent: they run side by side on the machine's cores; one after another,
  // each a step below the last plan's peak, Stable Cascade C's front took 2.2 s on 2 cores)
  std::vector<double> budgets;
  if (hi > lo * (1 + 1e-9))
    for (int k = 1; k < max_points; ++k) budgets.push_back(std::max(lo, hi - k * (hi - lo) / (max_points - 1)));
  std::vector<OptimalPlan> solved(budgets.size());
  for_each_parallel(budgets.size(), worker_threads(budgets.size()),
                    [&](std::size_t k) { solved[k] = solve_activation(budgets[k]); });
  for (const OptimalPlan& p : solved)
    if (p.found) front.points.push_back({p.prediction.peak_vram_bytes, p.prediction.step_time_s, p.plan});
  std::reverse(front.points.begin(), front.points.end());
  // drop points another point dominates (equal peaks from the two attention-offload settings)
  std::vector<FrontPoint> kept;
  for (auto& pt : front.points) {
    if (!kept.empty() && pt.step_time_s >= kept.back().step_time_s) continue;
    while (!kept.empty() && pt.peak_vram_bytes <= kept.back().peak_vram_bytes) kept.pop_back();
    kept.push_back(std::move(pt));
  }
  front.points = std::move(kept);
  const std::size_t m = front.points.size();
  if (m >= 3) {
    // knee: farthest below the chord from the smallest plan to the fastest, in normalised units
    const FrontPoint &a = front.points.front(), &b = front.points.back();
    const double dx = b.peak_vram_bytes - a.peak_vram_bytes, dy = a.step_time_s - b.step_time_s;
    double best = -1;
    for (std::size_t i = 1; i + 1 < m; ++i) {
      const double x = dx > 0 ? (front.points[i].peak_vram_bytes - a.peak_vram_bytes) / dx : 0;
      const double y = dy > 0 ? (a.step_time_s - front.points[i].step_time_s) / dy : 0;
      const double gap = y - x;  // above the chord in "time saved" terms = below it in time
      if (gap > best) {
        best = gap;
        front.knee = static_cast<int>(i);
      }
    }
  }
  return front;
}

std::vector<InsightRow> PlanOptimizer::insight(const Plan& plan) const {
  std::vector<InsightRow> rows;
  const int flag = plan.offload_attention && flags_.size() > 1 ? 1 : 0;
  const auto& ds = decisions_[flag];
  auto name = [&](int b, int e) {
    const BlockCost &x = chain_.blocks[b], &y = chain_.blocks[e - 1];
    std::string s = x.list + "." + std::to_string(x.index);
    if (e - b > 1) s += y.list == x.list ? "-" + std::to_string(y.index) : " .. " + y.list + "." + std::to_string(y.index);
    return s;
  };
  auto find = [&](int b, int e, BlockMode mode, bool host) -> const Decision* {
    for (const Decision& d : ds[b])
      if (d.end == e && d.mode == mode && d.offload == host) return &d;
    return nullptr;
  };
  bool checkpoints = false;
  for (const Segment& s : plan.segments) checkpoints = checkpoints || s.mode != BlockMode::Keep;
  if (flag == 1 && !checkpoints) {
    // offload alone moves all of the attention side (costmodel offload_share): price it whole
    const Plan keep = keep_everything(static_cast<int>(chain_.blocks.size()));
    InsightRow r{"attention activations to the host", 0, 0};
    r.gpu_bytes_saved = simulate_activations(chain_, keep, coef_).retained_after_forward_bytes -
                        simulate_activations(chain_, plan, coef_).retained_after_forward_bytes;
    r.seconds_added = anchored(predict(prepared_, plan, 0)).step_time_s - anchored(predict(prepared_, keep, 0)).step_time_s;
    rows.push_back(r);
    return rows;
  }
  if (flag == 1) {
    // the plan-wide switch, against keeping attention activations on the GPU
    InsightRow r{"attention activations to the host", 0, 0};
    for (const Segment& s : plan.segments) {
      if (s.mode == BlockMode::Checkpoint) continue;
      for (int i = s.begin; i < s.end; ++i) {
        const Decision* on = find(i, i + 1, BlockMode::Keep, false);
        const Decision* off = &decisions_[0][i][0];
        r.gpu_bytes_saved += off->retained_bytes - on->retained_bytes;
        r.seconds_added += on->seconds - off->seconds;
      }
    }
    rows.push_back(r);
  }
  for (const Segment& s : plan.segments) {
    if (s.mode == BlockMode::Keep) continue;
    double kept_bytes = 0, kept_s = 0, bytes = 0, seconds = 0;
    for (int i = s.begin; i < s.end; ++i) {
      kept_bytes += ds[i][0].retained_bytes;
      kept_s += ds[i][0].seconds;
    }
    if (s.mode == BlockMode::Checkpoint) {
      const Decision* d = find(s.begin, s.end, s.mode, s.offload_to_host);
      if (d) {
        bytes = d->retained_bytes;
        seconds = d->seconds;
      }
    } else {
      for (int i = s.begin; i < s.end; ++i)
        if (const Decision* d = find(i, i + 1, s.mode, s.offload_to_host)) {
          bytes += d->retained_bytes;
          seconds += d->seconds;
        }
    }
    std::string what = (s.mode == BlockMode::Checkpoint ? "checkpoint " : "FFN-only ") + name(s.begin, s.end);
    if (s.offload_to_host) what += " (inputs on the host)";
    const int skips = graph_.skips_entering(s.begin);
    if (s.mode == BlockMode::Checkpoint && skips > 0) what += " [saves " + std::to_string(skips) + " skip tensors]";
    rows.push_back({what, kept_bytes - bytes, seconds - kept_s});
  }
  return rows;
}

}  // namespace segadvise
