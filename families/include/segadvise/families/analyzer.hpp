// Static analyzer: token geometry, the block chain a family's trainer checkpoints (bytes, FLOPs,
// weights per block), and the trainer semantics that turn a Schedule into a Plan.
#pragma once

#include <optional>
#include <string>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

// Python's round(): half to even (the trainer rounds buckets with it).
long long round_half_even(double x);
// round_A(x) of SimpleTuner's image_manipulation/training_sample.py: round(x/A)*A with a floor of A.
int round_to_alignment(double x, int alignment);

struct ResolvedSize {
  int width = 0, height = 0;
  std::string note;  // how it was derived
};

// The trained size for a resolution as the trainer buckets it (§1.3).
//   type "pixel": shorter side = resolution; "area": resolution in megapixels; "pixel_area": edge
//   in pixels converted to megapixels (edge²/1e6) then area. aspect = W/H of the source.
//   crop_square: crop=true with crop_aspect=square.
//   A square crop in area mode within `snaps.tolerance_mp` of one of `snaps`' megapixels is trained at
//   its edge_px² (the trainer's usual sizes; none: no snapping).
struct AreaSnap {
  double megapixels = 0;
  int edge_px = 0;
};
struct AreaSnaps {
  std::vector<AreaSnap> snaps;
  double tolerance_mp = 0;
};
ResolvedSize bucket_size(double resolution, const std::string& type, int alignment, double aspect,
                         bool crop_square, const AreaSnaps& snaps);

// --resolution as a user types it: "WxH" (taken as the trained size, rounded to the alignment),
// or "N" with --resolution-type. Throws InputError naming the flag and value.
ResolvedSize parse_resolution(const std::string& arg, const std::string& type, const Family& fam, double aspect);

// The family's frame rule (§1.5): 8k+1 rounded down, 17k+5 rounded up, or unchanged.
int apply_frame_rule(const Family& fam, int frames);
// The same by the rule's name ("8k+1", "17k+5"; anything else leaves the count unchanged).
int apply_frame_rule(const std::string& rule, int frames);

struct TokenGeometry {
  int latent_width = 0, latent_height = 0, latent_frames = 1;
  double image_tokens = 0;  // per sample, after patching
  double text_tokens = 0;   // per sample
};
TokenGeometry token_geometry(const Family& fam, int width, int height, int frames, int text_tokens_override = -1);

// The family's usual training setup (its example), used when a user names only a model.
TrainingSetup default_setup(const Family& fam);

// Which projections the family's lora_targets adapt (attention q/k/v/out, the text stream's own
// projections of double-stream blocks, the FFN). Shared by the analyzer and the profiler.
struct LoraCoverage {
  bool attention = true, text = false, ffn = false;
};
LoraCoverage lora_coverage(const Family& fam);

// Tokens per sample a block of this list runs over: its stream (image tokens x token_scale is
// applied by the caller for U-Net levels), plus the text tokens for joint lists, or the text tokens
// alone for text lists (Lumina2's context refiner).
double list_tokens(const BlockListSpec& spec, double image_tokens, double text_tokens);
bool is_joint(const BlockListSpec& spec);

// Per-block bytes, FLOPs and weights at the setup's shape. Derivations in analyzer.cpp.
BlockChain analyze(const Family& fam, const TrainingSetup& setup);

// What the trainer does with a schedule on this family (docs/sources/simpletuner.md §2.7, §3.2, §4).
// The trainer's errors for a schedule on this family (§4: overlapping segments, attention offload
// or an -ffn backend where the family has none): the reason, "" when the trainer accepts it.
std::string trainer_error(const Family& fam, const Schedule& schedule);
// A schedule whose knobs the trainer ignores (§3.2, §4) runs as another one: that schedule (interval,
// stride or backend reset as the trainer resets them); nullopt when every knob acts or it is an error.
// realize() never recommends such a schedule; `check` reports what the trainer runs instead.
std::optional<Schedule> schedule_as_run(const Family& fam, const Schedule& schedule);
// The path the trainer takes for a schedule's interval: the family's own rule, or the per-block one a
// segmented family falls back to (§3.2: with an -ffn backend, with Musubi block swap); `why` names the
// cause of a fallback, empty when there is none.
struct IntervalPath {
  IntervalRule rule = IntervalRule::Segmented;
  std::string why;
};
IntervalPath interval_path(const Family& fam, const Schedule& schedule, const TrainingSetup& setup);
PlanResult realize(const Family& fam, const BlockChain& chain, const Schedule& schedule, const TrainingSetup& setup);
// realize() into `out`, reusing its segment buffer (advise realizes thousands of schedules: a fresh
// vector per schedule was ~10% of Stable Cascade's advise); `out` ends as realize() would return it.
// `out` holds nothing or a plan of any chain (whose segments partition that chain in order, as every
// plan's do).
void realize_into(const Family& fam, const BlockChain& chain, const Schedule& schedule, const TrainingSetup& setup,
                  PlanResult& out);
// "12 of 40 blocks checkpointed in 6 calls, …" (not stored in the Plan: advise realizes thousands)
std::string describe(const Plan& plan, const BlockChain& chain);

}  // namespace segadvise
