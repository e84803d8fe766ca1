// advise's shortcuts, each against the computation it stands for: scoring a schedule without
// building its candidate, skipping what-would-fit setups where nothing can fit, the cap on the
// intervals of long sequences, and the search policy read from planner/data/search.json. No timing.
#include <doctest/doctest.h>

#include <cstring>

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/calibration/ranges.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/measured_text.hpp"
#include "segadvise/planner/search_policy.hpp"
#include "test_util.hpp"

using namespace segadvise;
using segadvise::test::input_error_of;

namespace {

AdvisorRequest request_for(const Family& fam, const std::string& gpu) {
  AdvisorRequest r;
  r.family = &fam;
  r.setup = default_setup(fam);
  r.gpu = find_gpu(gpu);
  r.coef = coefficients_for("");
  r.ranges = default_ranges();
  return r;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_scores(const Context& ctx) {
  for (const Schedule& s : enumerate_schedules(schedule_space(ctx))) {
    const ScheduleScore fast = score(ctx, s), full = score_of(evaluate(ctx, s));
    INFO(ctx.family->id, " ", s.name(), " ", to_string(s.backend));
    REQUIRE(fast.supported == full.supported);
    if (!full.supported) continue;
    CHECK(same_bits(fast.peak_vram_bytes, full.peak_vram_bytes));
    CHECK(same_bits(fast.step_time_s, full.step_time_s));
    CHECK(same_bits(fast.usable_vram_bytes, full.usable_vram_bytes));
    CHECK(fast.verdict == full.verdict);
  }
}

}  // namespace

TEST_CASE("scoring a schedule gives evaluate's figures bit for bit, for every schedule of every family") {
  for (const Family& fam : builtin_families()) check_scores(Context(request_for(fam, "l40s")));
  // anchored on a measurement of the setup: the scores are the anchored figures too
  AdvisorRequest r = request_for(find_family("wan2.1-1.3b"), "h100");
  r.measured.push_back(parse_measurement("layer:3.5:30"));
  const Context anchored(r);
  REQUIRE_FALSE(anchored.anchor.points.empty());
  check_scores(anchored);
}

namespace {

void check_same_prediction(const Prediction& fast, const Prediction& alone) {
  CHECK(same_bits(fast.peak_vram_bytes, alone.peak_vram_bytes));
  CHECK(same_bits(fast.step_time_s, alone.step_time_s));
  CHECK(same_bits(fast.memory.activation_peak_bytes, alone.memory.activation_peak_bytes));
  CHECK(same_bits(fast.memory.host_activation_bytes, alone.memory.host_activation_bytes));
  CHECK(same_bits(fast.time.recompute_s, alone.time.recompute_s));
  CHECK(same_bits(fast.time.transfer_s, alone.time.transfer_s));
  CHECK(fast.fits == alone.fits);
}

}  // namespace

TEST_CASE("a scorer that resumes each plan's walk where it differs from the last gives each plan's figures bit for bit") {
  // every supported plan of every family, in enumeration order (plans resume mid-chain, block by
  // block or segment by segment; after a plan with another attention-offload view, from the
  // start), then the same plans backwards
  int resumed = 0, segmented = 0;
  for (const Family& fam : builtin_families()) {
    const Context ctx(request_for(fam, "l40s"));
    std::vector<Plan> plans;
    for (const Schedule& s : enumerate_schedules(schedule_space(ctx))) {
      PlanResult r = realize(fam, ctx.chain, s, ctx.setup);
      if (r.supported) plans.push_back(std::move(r.plan));
    }
    for (bool backwards : {false, true}) {
      PlanScorer scorer(ctx.prepared);
      for (std::size_t k = 0; k < plans.size(); ++k) {
        const std::size_t i = backwards ? plans.size() - 1 - k : k;
        INFO(fam.id, " plan ", i, backwards ? " (backwards)" : "");
        check_same_prediction(scorer.figures(plans[i], ctx.headroom_bytes),
                              predict_figures(ctx.prepared, plans[i], ctx.headroom_bytes));
        if (scorer.resumed_at() > 0)
          ++(!plans[i].offload_attention && plans[i].segments.size() == ctx.chain.blocks.size() ? resumed : segmented);
      }
    }
  }
  // walks resumed mid-chain: block by block (Stable Cascade C's ~18k micro-block plans, forwards and
  // backwards) and segment by segment (MiniMax H3 alone has ~10k segmented plans)
  CHECK(resumed > 50000);
  CHECK(segmented > 50000);
}

TEST_CASE("advise scoring plan after plan ranks as evaluating every schedule one by one") {
  for (const char* id : {"stable-cascade-c", "flux1", "wan2.1-1.3b"}) {
    const Context ctx(request_for(find_family(id), "l40s"));
    const std::vector<Schedule> all = enumerate_schedules(schedule_space(ctx));
    const Advice scored = advise_schedules(ctx, true);
    const Advice alone = advise(all, [&](const Schedule& s) { return evaluate(ctx, s); }, ctx.headroom_bytes, true);
    INFO(id);
    REQUIRE(scored.candidates.size() == alone.candidates.size());
    CHECK(scored.recommended == alone.recommended);
    CHECK(scored.borderline == alone.borderline);
    for (std::size_t i = 0; i < alone.candidates.size(); ++i) {
      CHECK(scored.candidates[i].schedule.name() == alone.candidates[i].schedule.name());
      CHECK(same_bits(scored.candidates[i].prediction.step_time_s, alone.candidates[i].prediction.step_time_s));
    }
  }
}

TEST_CASE("what would fit skips a setup only when advise would recommend nothing for it") {
  int skipped = 0, scored = 0;
  for (const Family& fam : builtin_families())
    for (const char* gpu : {"l40s", "4090", "a100-40g"}) {
      const Context ctx(request_for(fam, gpu));
      if (!nothing_can_fit(ctx)) {
        ++scored;
        continue;
      }
      ++skipped;
      INFO(fam.id, " on ", gpu);
      CHECK(advise_schedules(ctx).recommended < 0);
    }
  // MiniMax H3 (~33B parameters) at its example's bf16 base holds 61.5 GiB of weights alone, over an
  // L40S's 43.6 usable GiB: the bound sees it without scoring a schedule
  CHECK(nothing_can_fit(Context(request_for(find_family("minimax-h3"), "l40s"))));
  CHECK(skipped > 1);
  CHECK(scored > skipped);  // most families fit these cards: the bound skips only hopeless setups
  // SD 1.x (~0.9B) on an L40S: its weights are ~2 GiB of 43.6, the bound cannot rule it out
  CHECK_FALSE(nothing_can_fit(Context(request_for(find_family("sd1x"), "l40s"))));
}

TEST_CASE("on several GPUs what would fit is searched: the one-GPU bound does not hold for a rank") {
  // flux1 full fine-tune at 2048x2048, batch 64, FSDP2 on 8 H100: the replica's static memory alone
  // misses the card, the rank's shard does not (the bound had skipped every change: no alternative)
  AdvisorRequest r = request_for(find_family("flux1"), "h100");
  r.setup.model_type = ModelType::Full;
  r.setup.base_precision = "no_change";
  r.setup.width = r.setup.height = 2048;
  r.setup.batch = 64;
  r.setup.multi_gpu.gpus_per_node = 8;
  r.setup.multi_gpu.strategy = Strategy::fsdp2;
  const Context ctx(r);
  CHECK_FALSE(nothing_can_fit(ctx));
  const std::vector<Alternative> alts = what_would_fit(ctx);
  // a smaller batch fits on each rank (batch 2 here: layer+unsloth, ~33 GiB of 77.9 usable)
  REQUIRE_FALSE(alts.empty());
  CHECK(alts.front().change.rfind("train_batch_size ", 0) == 0);
  CHECK(alts.front().prediction.fits);
}

TEST_CASE("a checkpointed sequence longer than 256 blocks enumerates intervals and strides up to 32") {
  Family fam = find_family("wan2.1-1.3b");  // one list `blocks`, segmented, per-list positions
  REQUIRE(fam.block_lists.size() == 1);
  fam.block_lists[0].count = 256;  // at the limit: every interval up to the list's length
  CHECK(schedule_space(Context(request_for(fam, "h100"))).max_interval == 256);
  fam.block_lists[0].count = 257;  // past it: capped
  const ScheduleSpace capped = schedule_space(Context(request_for(fam, "h100")));
  CHECK(capped.max_interval == 32);
  // torch, no offload: layer, intervals 2..32 (31), and per interval k the strides k+1..32
  // (sum over k of 32 - k = 30 + 29 + ... + 0 = 465): 1 + 31 + 465 = 497 schedules
  int torch_plain = 0;
  for (const Schedule& s : enumerate_schedules(capped))
    if (s.checkpointing && s.backend == Backend::Torch && !s.offload_attention) ++torch_plain;
  CHECK(torch_plain == 497);
}

TEST_CASE("the search policy is data: the shipped file, and bad values named by file and field") {
  const SearchPolicy& p = search_policy();
  CHECK(p.what_would_fit.batch_divisor == 2);
  CHECK(p.what_would_fit.resolution_scales == std::vector<double>{0.75, 0.5});
  CHECK(p.what_would_fit.frame_fractions == std::vector<std::pair<int, int>>{{2, 3}, {1, 2}, {1, 4}});
  CHECK(p.what_would_fit.quantized_precisions == std::vector<std::string>{"int8-quanto", "fp8-torchao", "nf4-bnb"});
  CHECK(p.long_sequence_blocks == 256);
  CHECK(p.long_sequence_max_interval == 32);
  auto with = [](const char* field, const nlohmann::json& value) {
    nlohmann::json j = {{"source", "test"},
                        {"what_would_fit",
                         {{"batch_divisor", 2},
                          {"resolution_scales", {0.75}},
                          {"frame_fractions", {{1, 2}}},
                          {"quantized_precisions", {"int8-quanto"}},
                          {"ramtorch_percent", 100}}},
                        {"long_sequence", {{"blocks", 256}, {"max_interval", 32}}}};
    if (field) j["what_would_fit"][field] = value;
    return j;
  };
  CHECK_NOTHROW(parse_search_policy(with(nullptr, {}), "s.json"));
  CHECK(input_error_of([&] { parse_search_policy(with("resolution_scales", nlohmann::json::array({1.5})), "s.json"); })
            .find("s.json: field 'what_would_fit.resolution_scales[0]'") != std::string::npos);
  CHECK(input_error_of([&] { parse_search_policy(with("frame_fractions", nlohmann::json::array({nlohmann::json::array({3, 2})})), "s.json"); })
            .find("frame_fractions[0]") != std::string::npos);
  CHECK(input_error_of([&] { parse_search_policy(with("quantized_precisions", nlohmann::json::array({"bf16"})), "s.json"); })
            .find("not a quantized") != std::string::npos);
  CHECK(input_error_of([&] { parse_search_policy(with("batch_divisor", 1), "s.json"); })
            .find("batch_divisor") != std::string::npos);
}

TEST_CASE("realizing into a buffer another chain's plan left gives the plan realize() gives") {
  // flux1 seg5-stride9 leaves 32 segments of up to five blocks; flux2-klein-9b has 32 blocks: a
  // buffer of n segments is not one block each unless its plan ended at block n
  const Family& flux1 = find_family("flux1");
  const Family& klein = find_family("flux2-klein-9b");
  const TrainingSetup s1 = default_setup(flux1), s2 = default_setup(klein);
  const BlockChain c1 = analyze(flux1, s1), c2 = analyze(klein, s2);
  for (const char* first : {"seg5-stride9", "layer", "none"})
    for (const char* second : {"activation-offload", "layer", "interval3", "seg2-stride4"}) {
      PlanResult buffer;
      realize_into(flux1, c1, Schedule::parse(first), s1, buffer);
      realize_into(klein, c2, Schedule::parse(second), s2, buffer);
      const PlanResult fresh = realize(klein, c2, Schedule::parse(second), s2);
      INFO(first, " then ", second);
      REQUIRE(buffer.plan.segments.size() == fresh.plan.segments.size());
      for (std::size_t i = 0; i < fresh.plan.segments.size(); ++i) {
        CHECK(buffer.plan.segments[i].begin == fresh.plan.segments[i].begin);
        CHECK(buffer.plan.segments[i].end == fresh.plan.segments[i].end);
        CHECK(buffer.plan.segments[i].mode == fresh.plan.segments[i].mode);
      }
    }
}

TEST_CASE("a per-block family's plan checkpoints exactly the blocks its selector position picks") {
  // the trainer's rule (SimpleTuner training/gradient_checkpointing_interval.py), position by position with a division, against
  // realize's remainder counted along: every schedule of every per-block and micro-block family
  int checked = 0;
  for (const Family& fam : builtin_families()) {
    const CheckpointSemantics& cs = fam.checkpointing;
    if (cs.interval != IntervalRule::PerBlock && cs.interval != IntervalRule::MicroBlocks) continue;
    const Context ctx(request_for(fam, "h100"));
    const bool global = cs.index == BlockIndex::Global || cs.interval == IntervalRule::MicroBlocks;
    PlanResult r;
    for (const Schedule& s : enumerate_schedules(schedule_space(ctx))) {
      if (!s.checkpointing || s.offload_attention || s.backend != Backend::Torch) continue;
      realize_into(fam, ctx.chain, s, ctx.setup, r);
      if (!r.supported) continue;
      const int k = s.interval <= 1 ? 1 : s.interval;
      REQUIRE(r.plan.segments.size() == ctx.chain.blocks.size());
      for (std::size_t i = 0; i < ctx.chain.blocks.size(); ++i) {
        const BlockCost& b = ctx.chain.blocks[i];
        const int pos = global ? b.global_position : b.list_position;
        const bool picked = k == 1 || (s.stride > 0 ? pos % s.stride < k : pos % k == 0);
        INFO(fam.id, " ", s.name(), " block ", i);
        CHECK((r.plan.segments[i].mode != BlockMode::Keep) == (b.checkpointable && picked));
        CHECK(r.plan.segments[i].begin == static_cast<int>(i));
        CHECK(r.plan.segments[i].end == static_cast<int>(i) + 1);
      }
      ++checked;
    }
  }
  CHECK(checked > 9000);  // Stable Cascade C's micro-block schedules alone are ~9k per backend
}
