// The profiler against the static analyzer: for every block kind, the bytes autograd really saves
// in the LibTorch archetype (counted through saved-tensor hooks, cross-checked by the CPU allocator
// hook) agree with analyze() at the same shape within 2%, and the boundary state exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <cstdio>

#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/families/profile.hpp"
#include "segadvise/profiler/profiler.hpp"

using namespace segadvise;

namespace {

struct Case {
  const char* model;
  const char* list;
  int width, height, frames, text_tokens;
};

// small shapes (a few hundred tokens) so each block runs in about a second on two cores
const Case kCases[] = {
    {"wan2.1-1.3b", "blocks", 256, 256, 1, 64},                       // dit_cross
    {"lumina2", "layers", 256, 256, 1, 64},                            // dit_self (joint)
    {"sd3.5-medium", "transformer_blocks", 256, 256, 1, 64},           // mmdit_double
    {"flux1", "single_transformer_blocks", 256, 256, 1, 64},           // single_stream
    {"sana-1.6b", "transformer_blocks", 512, 512, 1, 64},              // linear_dit
    {"ltxvideo2-2.3", "transformer_blocks", 256, 256, 9, 64},          // audio_video_dit
    {"sdxl", "down_blocks.1.resnets.1", 256, 256, 1, 77},              // unet_res
    {"sdxl", "down_blocks.1.attentions.0.transformer_blocks", 256, 256, 1, 77},  // unet_attn
};

const BlockListSpec& list_of(const Family& fam, const std::string& name) {
  for (const auto& l : fam.block_lists)
    if (l.name == name) return l;
  FAIL("no list " << name);
  return fam.block_lists.front();
}

double pct(double a, double b) { return 100.0 * (a - b) / b; }

}  // namespace

TEST_CASE("every block kind saves what the static analyzer says, within 2%, with the same boundary") {
  for (const Case& c : kCases) {
    const Family& fam = find_family(c.model);
    TrainingSetup setup = default_setup(fam);
    setup.width = c.width;
    setup.height = c.height;
    setup.frames = c.frames;
    setup.text_tokens = c.text_tokens;
    setup.batch = 1;
    setup.lora_type = "standard";
    const BlockListSpec& spec = list_of(fam, c.list);
    profiler::ProfileOptions opt;
    opt.warmup = 0;
    opt.repeats = 1;
    opt.quiet = true;
    const profiler::ListMeasurement m = profiler::measure_list(fam, spec, setup, opt);
    const BlockChain chain = analyze(fam, setup);
    const BlockCost* b = nullptr;
    for (const auto& x : chain.blocks)
      if (x.list == spec.name) {
        b = &x;
        break;
      }
    REQUIRE(b != nullptr);
    std::printf(
        "%-14s %-16s measured %9.0f (attn %9.0f ffn %9.0f rest %7.0f) static %9.0f (attn %9.0f ffn %9.0f rest %7.0f) "
        "%+5.2f%%  boundary %9.0f / %9.0f  allocator %9.0f hooks %9.0f\n",
        to_string(spec.kind).c_str(), c.model, m.saved_bytes(), m.saved_attention_bytes, m.saved_ffn_bytes, m.saved_rest_bytes,
        b->saved_bytes(), b->saved_attention_bytes, b->saved_ffn_bytes, b->saved_rest_bytes,
        pct(b->saved_bytes(), m.saved_bytes()), m.boundary_bytes, b->boundary_bytes, m.allocator_retained_bytes,
        m.hooks_retained_bytes);
    CAPTURE(to_string(spec.kind));
    CHECK(std::fabs(pct(b->saved_bytes(), m.saved_bytes())) < 2.0);
    CHECK(m.boundary_bytes == doctest::Approx(b->boundary_bytes).epsilon(1e-12));
    // the allocator hook sees exactly the new tensors the saved-tensor hooks counted
    if (m.allocator_retained_bytes >= 0) CHECK(m.allocator_retained_bytes == doctest::Approx(m.hooks_retained_bytes).epsilon(0.001));
  }
}

TEST_CASE("a profile round-trips through the advisor's profile reader") {
  Profile p;
  p.family = "wan2.1-1.3b";
  p.precision = "no_change";
  p.device = "cpu: test";
  p.gpu_id = "cpu";
  p.dtype = "bfloat16";
  p.torch_version = "1.13.0";
  p.tokens_image = 1040;
  p.tokens_text = 512;
  ProfiledKind k;
  k.list = "blocks";
  k.kind = "dit_cross";
  k.tokens = 1040;
  k.saved_attention_bytes = 100;
  k.forward_linear_s = 1e-3;
  k.measured_tokens = {1040, 520};
  p.kinds.push_back(k);
  const Profile q = parse_profile(profile_to_json(p), "roundtrip");
  CHECK(q.family == p.family);
  CHECK(q.gpu_id == "cpu");
  REQUIRE(q.kinds.size() == 1);
  CHECK(q.kinds[0].saved_attention_bytes == 100);
  CHECK(q.kinds[0].forward_linear_s == doctest::Approx(1e-3));
  CHECK(q.kinds[0].measured_tokens.size() == 2);
}
