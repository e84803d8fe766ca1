// The fast paths behind advise's speed, each against the plain computation it replaces:
// the named peak of the activation walk (costmodel), the counted selector remainder (realize),
// schedule enumeration without a set of names, and the optimizer's 0 s bound when keeping every
// block fits. Deterministic seeds; no timing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/planner/optimal.hpp"
#include "segadvise/planner/planner.hpp"

using namespace segadvise;

namespace {

struct Rng {
  unsigned long long s;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
  int below(int n) { return static_cast<int>(next() * n); }
};

// n blocks; with `repeat`, every block is one of three shapes (ties between positions then occur,
// as on Stable Cascade's repeating micro-blocks); otherwise every byte count is random.
BlockChain random_chain(int n, Rng& r, bool repeat) {
  BlockChain c;
  Rng shapes{7};
  std::vector<BlockCost> pattern;
  for (int i = 0; i < n; ++i) {
    BlockCost b;
    Rng& src = repeat ? shapes : r;
    if (repeat && i >= 3) {
      b = pattern[i % 3];
    } else {
      b.saved_attention_bytes = std::round(100 + 200 * src.next());
      b.saved_ffn_bytes = std::round(100 + 200 * src.next());
      b.saved_rest_bytes = std::round(30 * src.next());
      b.ffn_input_bytes = std::round(20 + 20 * src.next());
      b.transient_bytes = std::round(50 * src.next());
      b.boundary_bytes = std::round(20 + 40 * src.next());
      if (repeat) pattern.push_back(b);
    }
    b.list = "blocks";
    b.index = i;
    b.kind = "t";
    c.blocks.push_back(b);
  }
  c.outside_activation_bytes = 60;
  return c;
}

Plan random_one_block_plan(int n, Rng& r) {
  Plan p;
  for (int i = 0; i < n; ++i) {
    const int m = r.below(3);
    const BlockMode mode = m == 0 ? BlockMode::Keep : m == 1 ? BlockMode::Checkpoint : BlockMode::CheckpointFfn;
    p.segments.push_back(Segment{i, i + 1, mode, mode != BlockMode::Keep && r.below(2) == 1});
  }
  return p;
}

}  // namespace

TEST_CASE("one-block plans: the named peak is the first largest position of the walk, bit for bit") {
  // simulate_activations with keep_points records every position; without it, the walk keeps the
  // first largest (PeakSink).
  Coefficients coef;
  int ties = 0;
  for (unsigned long long seed = 1; seed <= 200; ++seed) {
    Rng r{seed};
    const bool repeat = seed % 2 == 0;
    const int n = 1 + r.below(40);
    const BlockChain chain = random_chain(n, r, repeat);
    const Plan plan = random_one_block_plan(n, r);
    CAPTURE(seed);
    const ActivationTimeline fast = simulate_activations(chain, plan, coef, false);
    const ActivationTimeline walk = simulate_activations(chain, plan, coef, true);
    CHECK(fast.peak_bytes == walk.peak_bytes);
    CHECK(fast.peak_phase == walk.peak_phase);
    CHECK(fast.retained_after_forward_bytes == walk.retained_after_forward_bytes);
    CHECK(fast.host_bytes == walk.host_bytes);
    // brute force: the first recorded position holding the largest value
    double best = 0;
    std::string at;
    for (const auto& pt : walk.points) {
      if (pt.live_bytes == best) ++ties;
      if (pt.live_bytes > best) {
        best = pt.live_bytes;
        at = pt.phase;
      }
    }
    CHECK(fast.peak_bytes == best);
    CHECK(fast.peak_phase == at);
  }
  CHECK(ties > 0);  // the repeating chains do exercise equal positions
}

TEST_CASE("one-block plans: a hand-computed two-block timeline") {
  // block 0 kept, block 1 checkpointed on the GPU; per block saved 100 + 100 + 0 = 200,
  // boundary 10, transient 5, outside 60:
  //   forward 0:  60 + 0 + 200 + 5 + 10 = 275; keeps 200
  //   forward 1:  60 + 200 + 200 + 5 + 10 = 475; keeps its input, 10
  //   backward 1 (recomputed): 60 + 200 + 10 + 200 + 2*10 + 5 = 495
  //   backward 0: 60 + 0 + 200 + 2*10 + 5 = 285        -> peak 495 at "backward (recomputed segment)"
  BlockChain chain;
  for (int i = 0; i < 2; ++i) {
    BlockCost b;
    b.list = "blocks";
    b.index = i;
    b.saved_attention_bytes = 100;
    b.saved_ffn_bytes = 100;
    b.boundary_bytes = 10;
    b.transient_bytes = 5;
    chain.blocks.push_back(b);
  }
  chain.outside_activation_bytes = 60;
  Plan plan;
  plan.segments = {Segment{0, 1, BlockMode::Keep, false}, Segment{1, 2, BlockMode::Checkpoint, false}};
  const ActivationTimeline tl = simulate_activations(chain, plan, Coefficients{}, false);
  CHECK(tl.peak_bytes == 495);
  CHECK(tl.peak_phase == "backward (recomputed segment) blocks.1");
  CHECK(tl.retained_after_forward_bytes == 210);
}

TEST_CASE("realize: the counted selector remainder checkpoints exactly the blocks i % S < K") {
  const Family& fam = find_family("stable-cascade-c");
  const TrainingSetup setup = default_setup(fam);
  BlockChain full = analyze(fam, setup);
  // a second chain whose selector positions do not rise by one everywhere: every seventh block
  // leaves the checkpointed set and the running counter skips it (as the analyzer counts)
  BlockChain gaps = full;
  int pos = 0;
  for (std::size_t i = 0; i < gaps.blocks.size(); ++i) {
    gaps.blocks[i].checkpointable = i % 7 != 3;
    gaps.blocks[i].global_position = gaps.blocks[i].checkpointable ? pos++ : -1;
  }
  for (const BlockChain* chain : {&full, &gaps}) {
    const int n = static_cast<int>(chain->blocks.size());
    for (int k = 1; k <= 12; ++k) {
      for (int stride : {0, k + 1, k + 5, 64}) {
        Schedule s;
        s.interval = k;
        s.stride = k > 1 ? stride : 0;
        const PlanResult r = realize(fam, *chain, s, setup);
        CAPTURE(k);
        CAPTURE(s.stride);
        REQUIRE(r.supported);
        REQUIRE(static_cast<int>(r.plan.segments.size()) == n);
        for (int i = 0; i < n; ++i) {
          const BlockCost& b = chain->blocks[i];
          const int p = b.global_position;
          const bool want = b.checkpointable && (k <= 1 || (s.stride > 0 ? p % s.stride < k : p % k == 0));
          CHECK((r.plan.segments[i].mode == BlockMode::Checkpoint) == want);
        }
      }
    }
  }
}

TEST_CASE("enumerate_schedules: every schedule once, a backend listed twice adds nothing") {
  ScheduleSpace sp;
  sp.max_interval = 5;
  sp.interval = true;
  sp.stride = true;
  sp.backends = {Backend::Torch, Backend::Unsloth, Backend::Torch};
  const std::vector<Schedule> all = enumerate_schedules(sp);
  // per backend: layer, interval 2..5 (4), and interval k with stride k+1..5: 3 + 2 + 1 + 0 = 6,
  // so 11; two distinct backends and "none": 1 + 2 x 11 = 23
  CHECK(all.size() == 23);
  std::set<std::string> names;
  for (const Schedule& s : all) names.insert(s.name());
  CHECK(names.size() == all.size());
  sp.attention_offload = true;
  CHECK(enumerate_schedules(sp).size() == 46);
}

TEST_CASE("optimal: when keeping every block fits, the plan adds no time to the all-keep plan") {
  // the quick upper-bound pass is skipped then (its bound is exactly 0 s): the answer must still
  // be a plan as fast as keeping everything, and a budget below that must still checkpoint
  GpuSpec gpu;
  gpu.id = "test";
  gpu.total_bytes = 1e15;
  gpu.bf16_flops_per_s = 1e12;
  gpu.mem_bytes_per_s = 1e12;
  gpu.pcie_bytes_per_s = 1e10;
  TrainingSetup setup;
  Coefficients coef;
  for (unsigned long long seed = 1; seed <= 5; ++seed) {
    Rng r{seed};
    BlockChain chain = random_chain(12, r, seed % 2 == 0);
    for (auto& b : chain.blocks) {
      b.matmul_flops = 1e10;
      b.ffn_matmul_flops = 5e9;  // recomputing an FFN costs time too
    }
    const PlanOptimizer opt(chain, setup, gpu, coef, 0);
    Plan keep;
    for (int i = 0; i < 12; ++i) keep.segments.push_back(Segment{i, i + 1, BlockMode::Keep, false});
    const Prediction all_keep = predict(chain, keep, setup, gpu, coef, 0);
    const OptimalPlan roomy = opt.solve_for_peak(all_keep.peak_vram_bytes * 2);
    REQUIRE(roomy.found);
    CHECK(roomy.prediction.step_time_s == all_keep.step_time_s);
    const OptimalPlan tight = opt.solve_for_peak(all_keep.peak_vram_bytes * 0.8);
    REQUIRE(tight.found);
    CHECK(tight.prediction.step_time_s > all_keep.step_time_s);
    CHECK(tight.prediction.peak_vram_bytes <= all_keep.peak_vram_bytes * 0.8 * (1 + 1e-12));
  }
}
