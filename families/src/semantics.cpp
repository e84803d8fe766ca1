// Trainer semantics: what SimpleTuner really runs for a schedule on a family.
// Source: SimpleTuner bc8e6ab, docs/sources/simpletuner.md §2.7 (backends, interval, offload: models/common.py,
// training/gradient_checkpointing_interval.py), §3.2 (per-family capability table, fallbacks:
// tests/test_segmented_checkpointing_model_support.py), §4 (errors and silent fixes: safety_check.py).
#include <map>
#include <optional>
#include <string>

#include "segadvise/families/analyzer.hpp"

namespace segadvise {

namespace {

// The one-block segment [i, i+1), written field by field in place: a Segment built aside and copied
// in stalls on store forwarding once per block, which was most of advise's time on long chains.
void push_single(std::vector<Segment>& segments, int i, BlockMode mode, bool offload) {
  Segment& s = segments.emplace_back();
  s.begin = i;
  s.end = i + 1;
  s.mode = mode;
  s.offload_to_host = offload;
}

std::string plan_description(const Plan& plan, const BlockChain& chain) {
  int ck = 0, ffn = 0, keep = 0, segs = 0;
  for (const auto& s : plan.segments) {
    const int n = s.end - s.begin;
    if (s.mode == BlockMode::Keep) keep += n;
    if (s.mode == BlockMode::Checkpoint) {
      ck += n;
      ++segs;
    }
    if (s.mode == BlockMode::CheckpointFfn) ffn += n;
  }
  std::string d = std::to_string(ck) + " of " + std::to_string(chain.blocks.size()) + " blocks checkpointed in " +
                  std::to_string(segs) + " calls";
  if (ffn) d += ", " + std::to_string(ffn) + " FFN-only";
  d += ", " + std::to_string(keep) + " kept";
  if (plan.offload_attention) d += ", attention activations offloaded";
  return d;
}

}  // namespace

std::string trainer_error(const Family& fam, const Schedule& sched) {
  const CheckpointSemantics& cs = fam.checkpointing;
  // the family's name for a message, built only when there is one (advise asks per schedule)
  auto who = [&fam] { return fam.name + " (" + fam.trainer_family + ")"; };
  if (sched.checkpointing && sched.interval > 1 && sched.stride > 0 && sched.stride < sched.interval)
    return "gradient_checkpointing_segment_stride " + std::to_string(sched.stride) +
           " is smaller than gradient_checkpointing_interval " + std::to_string(sched.interval) +
           ": the trainer rejects overlapping segments (stride must be >= interval)";
  if (sched.offload_attention && !cs.attention_offload)
    return "gradient_checkpointing_offload_attention is not available for " + who() +
           ": the trainer raises an error for families outside its attention-offload list";
  if (sched.checkpointing && is_ffn(sched.backend) && !cs.ffn_backend)
    return "backend " + to_string(sched.backend) + " needs an attention/FFN checkpoint boundary, which " + who() +
           " does not expose: the trainer raises a ValueError";
  return "";
}

std::optional<Schedule> schedule_as_run(const Family& fam, const Schedule& s) {
  if (!trainer_error(fam, s).empty()) return std::nullopt;
  const CheckpointSemantics& cs = fam.checkpointing;
  Schedule as_run = s;
  if (cs.interval == IntervalRule::Ignored) as_run.interval = as_run.stride = 0;
  if (!cs.stride || as_run.interval <= 1) as_run.stride = 0;
  if (!cs.backend_setter && is_unsloth(as_run.backend))
    as_run.backend = is_ffn(as_run.backend) ? Backend::TorchFfn : Backend::Torch;
  if (as_run.name() == s.name() && as_run.backend == s.backend) return std::nullopt;
  return as_run;
}

IntervalPath interval_path(const Family& fam, const Schedule& sched, const TrainingSetup& setup) {
  const CheckpointSemantics& cs = fam.checkpointing;
  IntervalPath p;
  p.rule = cs.interval;
  if (p.rule != IntervalRule::Segmented) return p;
  if (sched.checkpointing && is_ffn(sched.backend) && !cs.segmented_with_ffn_backend) p.why = "an -ffn backend";
  if (setup.blocks_to_swap > 0 && !cs.segmented_with_block_swap) p.why = "Musubi block swap";
  if (!p.why.empty()) p.rule = IntervalRule::PerBlock;
  return p;
}

PlanResult realize(const Family& fam, const BlockChain& chain, const Schedule& sched, const TrainingSetup& setup) {
  PlanResult r;
  realize_into(fam, chain, sched, setup, r);
  return r;
}

namespace {

// Why the trainer would not run `sched` as asked on this family although it raises no error: a knob it
// ignores (interval, stride, an unsloth backend), never recommended as if it did something; "" : none.
std::string ignored_knob(const Family& fam, const Schedule& sched) {
  const CheckpointSemantics& cs = fam.checkpointing;
  auto who = [&fam] { return fam.name + " (" + fam.trainer_family + ")"; };  // only for messages
  const bool uses_interval = sched.checkpointing && (sched.interval > 1 || sched.stride > 0);
  if (uses_interval && cs.interval == IntervalRule::Ignored)
    return "gradient_checkpointing_interval/segment_stride are not wired for " + who() +
           ": the trainer resets them and checkpoints every block (use 'layer')";
  if (sched.checkpointing && sched.interval > 1 && sched.stride > 0 && !cs.stride)
    return "gradient_checkpointing_segment_stride is ignored by " + who() +
           ": the schedule would run as interval " + std::to_string(sched.interval);
  if (sched.checkpointing && sched.interval <= 1 && sched.stride > 0)
    return "gradient_checkpointing_segment_stride without an interval is ignored by the trainer";
  if (sched.checkpointing && is_unsloth(sched.backend) && !cs.backend_setter)
    return "the " + to_string(sched.backend) + " backend has no effect on " + who() +
           ": it has no backend setter and runs torch checkpointing";
  return "";
}

// Segmented semantics (§2.7), interval k > 1 and stride s: per list, [jS, jS+K) under one call each,
// the blocks between kept.
void segmented_plan(const Family& fam, const BlockChain& chain, int k, int s, bool offload, Plan& plan) {
  const CheckpointSemantics& cs = fam.checkpointing;
  const int n = static_cast<int>(chain.blocks.size());
  const bool global_index = cs.index == BlockIndex::Global || cs.interval == IntervalRule::MicroBlocks;
  auto sel_at = [&](int i) { return global_index ? chain.blocks[i].global_position : chain.blocks[i].list_position; };
  const bool global_segments = cs.index == BlockIndex::Global;
  plan.segments.clear();
  plan.segments.reserve(n);
  int i = 0;
  while (i < n) {
    if (!chain.blocks[i].checkpointable) {
      push_single(plan.segments, i, BlockMode::Keep, false);
      ++i;
      continue;
    }
    const std::string& list = chain.blocks[i].list;
    const int pos = sel_at(i);
    if (pos % s < k) {
      int end = i;
      // with a global index (ZLab I1) segments run over the combined sequence and may span lists
      while (end < n && (global_segments || chain.blocks[end].list == list) && chain.blocks[end].checkpointable &&
             sel_at(end) % s < k && sel_at(end) / s == pos / s)
        ++end;
      plan.segments.push_back(Segment{i, end, BlockMode::Checkpoint, offload});
      i = end;
    } else {
      push_single(plan.segments, i, BlockMode::Keep, false);
      ++i;
    }
  }
}

// Per-block selection (every block, or block i where i mod interval is 0, or i mod stride < interval),
// one segment per block.
void per_block_plan(const Family& fam, const BlockChain& chain, const Schedule& sched, int k, bool every, bool offload,
                    bool ffn_only, Plan& plan) {
  const CheckpointSemantics& cs = fam.checkpointing;
  const int n = static_cast<int>(chain.blocks.size());
  const bool global_index = cs.index == BlockIndex::Global || cs.interval == IntervalRule::MicroBlocks;
  // the selector remainder pos % modulus, counted along (positions mostly rise by one): a
  // division per block was a third of realize on Stable Cascade's 192 micro-blocks. It is counted
  // for every block, checkpointable or not (it depends on the position alone), and the choice is
  // formed without branches: a branch per block on a pattern that changes with every schedule
  // was most of realize's time.
  const int modulus = sched.stride > 0 ? sched.stride : std::max(1, sched.interval);
  const bool strided = sched.stride > 0;  // selected_by_remainder() with k > 1 (k == 1: every)
  // n segments of a previous plan ending at block n partition these n blocks one each (a plan's
  // segments partition its chain in order): their ranges stand. A plan of another chain ends
  // elsewhere or has another count.
  const bool ranges_stand = plan.segments.size() == static_cast<std::size_t>(n) && n > 0 &&
                            plan.segments.front().begin == 0 && plan.segments.back().end == n;
  plan.segments.resize(n);  // in place when the previous plan was one of n blocks
  // one segment per block, written through plain pointers: through push_back, every bool store
  // (which may alias anything) made the compiler reload the vectors' pointers once per block
  Segment* out = plan.segments.data();
  const BlockCost* blocks = chain.blocks.data();
  if (!ranges_stand)
    for (int i = 0; i < n; ++i) {
      out[i].begin = i;
      out[i].end = i + 1;
    }
  const BlockMode ffn_mode = ffn_only ? BlockMode::CheckpointFfn : BlockMode::Checkpoint;
  int last_pos = -2, rem = 0;
  for (int i = 0; i < n; ++i) {
    const BlockCost& b = blocks[i];
    const int pos = global_index ? b.global_position : b.list_position;
    const int next = rem + 1 == modulus ? 0 : rem + 1;
    rem = pos == last_pos + 1 && last_pos >= 0 ? next : pos % modulus;
    last_pos = pos;
    const bool selected = every | (strided ? rem < k : rem == 0);
    const bool ck = b.checkpointable & selected;
    const BlockMode when_ck = b.has_ffn_boundary ? ffn_mode : BlockMode::Checkpoint;
    // Keep is 0: the mode is the checkpointed mode times ck (a select GCC turned into a branch)
    static_assert(static_cast<int>(BlockMode::Keep) == 0);
    out[i].mode = static_cast<BlockMode>(static_cast<int>(when_ck) * static_cast<int>(ck));
    out[i].offload_to_host = ck & offload;
  }
}

}  // namespace

void realize_into(const Family& fam, const BlockChain& chain, const Schedule& sched, const TrainingSetup& setup,
                  PlanResult& r) {
  // the previous plan's segments: a plan of one-block segments is written over them in place
  std::vector<Segment> previous = std::move(r.plan.segments);
  r = PlanResult{};
  const CheckpointSemantics& cs = fam.checkpointing;
  auto who = [&fam] { return fam.name + " (" + fam.trainer_family + ")"; };  // only for messages

  // errors the trainer raises (§4)
  r.reason = trainer_error(fam, sched);
  if (!r.reason.empty()) {
    r.supported = false;
    return;
  }
  // knobs the trainer ignores: never recommended as if they did something
  r.reason = ignored_knob(fam, sched);
  if (!r.reason.empty()) {
    r.supported = false;
    return;
  }

  Plan& plan = r.plan;
  plan.offload_attention = sched.offload_attention;
  const int n = static_cast<int>(chain.blocks.size());
  // the previous segments' buffer; a path that appends starts from it cleared
  plan.segments = std::move(previous);
  auto fresh_segments = [&plan, n] {
    plan.segments.clear();
    plan.segments.reserve(n);
  };
  const bool offload = sched.checkpointing && is_unsloth(sched.backend);
  const bool ffn_only = sched.checkpointing && is_ffn(sched.backend);

  if (!sched.checkpointing) {
    fresh_segments();
    for (int i = 0; i < n; ++i) push_single(plan.segments, i, BlockMode::Keep, false);
    return;
  }
  // Regional compilation (dynamo_use_regional_compilation) compiles each repeated block; the
  // checkpoint call stays outside it, so by the trainer's semantics (§2.7: torch.utils.checkpoint
  // around the block) checkpointing still frees the block's saved tensors. Only where the sweep
  // MEASURED otherwise is it modelled as every block kept: Krea 2 (its no-compile control rows show
  // the usual shape, the compiled rows none: "the compiled graph/workspace keeps the peak close to
  // the uncheckpointed peak") and MageFlow (one peak for none, layer, interval2, seg2-stride4, and
  // attention offload 13.6 GiB below it: the flat value is the training step's own activations).
  // That is family data (`compiled_blocks_keep_activations`), not a rule for every compiled family:
  // Ideogram's and Cosmos 3's tiered examples compile and fit their cards only with checkpointing
  // acting; Cosmos 3 edge's flat sweep rows sit at the all-weights-resident level although its
  // example streams most blocks, i.e. outside the compiled step (families/data/cosmos3-edge.json).
  // Attention offload still acts.
  if (setup.regional_compile && cs.compiled_blocks_keep_activations) {
    fresh_segments();
    for (int i = 0; i < n; ++i) push_single(plan.segments, i, BlockMode::Keep, false);
    r.warnings.push_back("dynamo_use_regional_compilation is on: measured runs of " + who() +
                         " show checkpointing inside compiled blocks saves no memory and costs no time; disable "
                         "regional compilation to use it");
    return;
  }

  // which semantics run: segmented families fall back to their per-block path (§3.2)
  const IntervalPath path = interval_path(fam, sched, setup);
  const IntervalRule semantics = path.rule;
  const bool every_block_fallback = !path.why.empty() && cs.fallback == FallbackRule::EveryBlock;
  if (!path.why.empty() && sched.interval > 1)
    r.warnings.push_back(who() + " falls back to its " + to_string(cs.fallback) + " path with " + path.why +
                         " (the interval " + (every_block_fallback ? "is ignored" : "selects every n-th block") + ")");
  const int k = sched.interval <= 1 ? 1 : sched.interval;
  const int s = sched.stride > 0 ? sched.stride : k;

  if (semantics == IntervalRule::Segmented && k > 1)
    segmented_plan(fam, chain, k, s, offload, plan);
  else
    per_block_plan(fam, chain, sched, k, every_block_fallback || semantics == IntervalRule::Ignored || k == 1, offload,
                   ffn_only, plan);
}

std::string describe(const Plan& plan, const BlockChain& chain) { return plan_description(plan, chain); }

}  // namespace segadvise
