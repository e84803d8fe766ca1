// Family data, token geometry, bucketing and trainer semantics.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "segadvise/families/family.hpp"

using namespace segadvise;

TEST_CASE("Wan 2.1 at 832x480 and 81 frames is 32,760 video tokens") {
  // 832/8 = 104, 480/8 = 60 latent pixels; /2 patches = 52 x 30 = 1560 per latent frame;
  // (81 - 1)/4 + 1 = 21 latent frames; 1560 x 21 = 32,760.
  const Family& wan = find_family("wan14b");
  const TokenGeometry g = token_geometry(wan, 832, 480, 81);
  CHECK(g.latent_frames == 21);
  CHECK(g.image_tokens == doctest::Approx(32760));
  CHECK(&find_family("wan:t2v-480p-14b-2.1") == &wan);
}

TEST_CASE("Flux at 1024x1024 is 4096 image tokens and 512 text tokens") {
  const TokenGeometry g = token_geometry(find_family("flux"), 1024, 1024, 1);
  CHECK(g.image_tokens == doctest::Approx(4096));
  CHECK(g.text_tokens == doctest::Approx(512));
}

TEST_CASE("frame rules round as the trainer does") {
  CHECK(apply_frame_rule(find_family("wan14b"), 50) == 49);  // 8k+1 rounded down
  CHECK(apply_frame_rule(find_family("wan14b"), 81) == 81);
  CHECK(apply_frame_rule(find_family("hunyuanvideo"), 48) == 48);  // no rule
}

TEST_CASE("bucketing follows the trainer's rounding, Python's banker's rounding included") {
  CHECK(round_half_even(2.5) == 2);
  CHECK(round_half_even(3.5) == 4);
  CHECK(round_to_alignment(480, 64) == 512);  // 7.5 -> 8 (even)
  CHECK(round_to_alignment(416, 64) == 384);  // 6.5 -> 6 (even)
  // pixel_area 480 with a square crop snaps 0.2304 MP to 0.25 MP: 512x512 (§1.3)
  const ResolvedSize crop = bucket_size(480, "pixel_area", 64, 1.0, true);
  CHECK(crop.width == 512);
  CHECK(crop.height == 512);
  // pixel_area 1024, square source: edge 1024
  const ResolvedSize sq = bucket_size(1024, "pixel_area", 64, 1.0, false);
  CHECK(sq.width == 1024);
  CHECK(sq.height == 1024);
  // pixel 512, 16:9 (1.78): short side 512, long side int(512 x 1.78) = 911 -> 896 (14.23 x 64)
  const ResolvedSize px = bucket_size(512, "pixel", 64, 16.0 / 9.0, false);
  CHECK(px.height == 512);
  CHECK(px.width == 896);
}

TEST_CASE("every shipped family loads, analyzes at its example and names a source") {
  std::set<std::string> names;
  for (const Family& f : builtin_families()) {
    CAPTURE(f.id);
    CHECK(!f.source.empty());
    CHECK(names.insert(f.id).second);
    for (const auto& a : f.aliases)
      if (a != f.id) CHECK(names.insert(a).second);
    const TrainingSetup s = default_setup(f);
    const BlockChain chain = analyze(f, s);
    CHECK(!chain.blocks.empty());
    for (const auto& b : chain.blocks) {
      CHECK(b.saved_bytes() > 0);
      CHECK(b.boundary_bytes > 0);
      CHECK(b.params > 0);
    }
  }
  CHECK(builtin_families().size() >= 38);
}

TEST_CASE("every family answers every sweep schedule: a prediction or a reason") {
  const GpuSpec& gpu = find_gpu("h100");
  for (const Family& f : builtin_families()) {
    const TrainingSetup s = default_setup(f);
    const BlockChain chain = analyze(f, s);
    for (const std::string name :
         {"none", "layer", "interval2", "seg2-stride4", "activation-offload", "seg2-stride4-offload"}) {
      CAPTURE(f.id);
      CAPTURE(name);
      const PlanResult r = realize(f, chain, Schedule::parse(name), s);
      if (!r.supported) {
        CHECK(!r.reason.empty());
        continue;
      }
      const Prediction p = predict(chain, r.plan, s, gpu, Coefficients{}, kGiB);
      CHECK(p.peak_vram_bytes > 0);
      CHECK(p.step_time_s > 0);
    }
  }
}

TEST_CASE("interval and stride are refused on families that ignore them") {
  const Family& sdxl = find_family("sdxl");
  const TrainingSetup s = default_setup(sdxl);
  const BlockChain chain = analyze(sdxl, s);
  const PlanResult r = realize(sdxl, chain, Schedule::parse("interval2"), s);
  CHECK_FALSE(r.supported);
  CHECK(r.reason.find("not wired") != std::string::npos);
  CHECK(realize(sdxl, chain, Schedule::parse("layer"), s).supported);
}

TEST_CASE("per-block families checkpoint every n-th block, each on its own") {
  const Family& qwen = find_family("qwen-image");
  REQUIRE(qwen.checkpointing.interval == IntervalRule::PerBlock);
  const TrainingSetup s = default_setup(qwen);
  const BlockChain chain = analyze(qwen, s);
  const PlanResult r = realize(qwen, chain, Schedule::parse("interval3"), s);
  REQUIRE(r.supported);
  int checkpointed = 0;
  for (const auto& seg : r.plan.segments) {
    CHECK(seg.end - seg.begin == 1);
    if (seg.mode == BlockMode::Checkpoint) {
      CHECK(chain.blocks[seg.begin].list_position % 3 == 0);
      ++checkpointed;
    }
  }
  CHECK(checkpointed == 20);  // blocks 0, 3, …, 57 of 60
}

TEST_CASE("attention offload and FFN backends are refused where the trainer raises") {
  const Family& sdxl = find_family("sd1x");
  const TrainingSetup s = default_setup(sdxl);
  const BlockChain chain = analyze(sdxl, s);
  CHECK_FALSE(realize(sdxl, chain, Schedule::parse("activation-offload"), s).supported);
  CHECK_FALSE(realize(sdxl, chain, Schedule::parse("layer+torch-ffn"), s).supported);
}

TEST_CASE("unknown names are errors that suggest the nearest ones") {
  try {
    find_family("wan15b");
    FAIL("expected an error");
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("wan15b") != std::string::npos);
    CHECK(m.find("nearest") != std::string::npos);
  }
  CHECK_THROWS_AS(find_gpu("l40x"), InputError);  // the L40 is a card of the catalog, the L40X none
  CHECK(find_gpu("l40").id == "l40");
  CHECK(find_gpu("L40S").id == "l40s");
  CHECK(find_gpu("rtx4090").id == "4090");
  CHECK_THROWS_AS(precision_info("int9-quanto"), InputError);
}

TEST_CASE("a family file with a wrong field names the file and the field") {
  const auto j = nlohmann::json::parse(R"({"id": "x", "modality": "image", "text_tokens": 0, "geometry": {}, "block_lists": [{"name": "b", "count": "four",
      "kind": "dit_cross", "hidden": 8, "heads": 1, "ffn_hidden": 8}], "checkpointing": {"interval": "segmented"}})");
  try {
    parse_family(j, "my-model.json");
    FAIL("expected an error");
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("my-model.json") != std::string::npos);
    CHECK(m.find("block_lists[0].count") != std::string::npos);
    CHECK(m.find("\"four\"") != std::string::npos);
  }
}

TEST_CASE("LoRA rank scales the adapter parameters linearly") {
  const Family& f = find_family("sd3");
  TrainingSetup s = default_setup(f);
  s.lora_rank = 16;
  const double r16 = static_memory(analyze(f, s), s).trainable_params;
  s.lora_rank = 32;
  const double r32 = static_memory(analyze(f, s), s).trainable_params;
  CHECK(r32 == doctest::Approx(2 * r16));
}

TEST_CASE("LyCORIS LoKr adapters follow the library's factorization on the classes the preset targets") {
  // OmniGen: 32 blocks, attention width 3072 (q, k, v, out: 3072 x 3072 each)
  const Family& omnigen = find_family("omnigen");
  TrainingSetup s = default_setup(omnigen);
  REQUIRE(s.lora_type == LoraType::Lycoris);
  REQUIRE(s.lokr_read);  // the example's lycoris_config: Attention factor 2, FeedForward factor 4, full w2
  CHECK(s.lokr_attention_factor == 2);
  CHECK(s.lokr_ffn_factor == 0);  // OmniGen's FFN class is OmniGenFeedForward: FeedForward adapts nothing
  auto lokr = [&](const TrainingSetup& x) { return static_memory(analyze(omnigen, x), x).trainable_params; };
  // factor 2 divides 3072: w1 2 x 2, w2 1536 x 1536 in full: 4 + 2,359,296 per Linear, x 4 x 32
  CHECK(lokr(s) == doctest::Approx(32.0 * 4 * (4 + 1536.0 * 1536)));
  // factor 25 does not: the largest divisor of 3072 not above 25 (and sqrt 3072) is 24 -> (24, 128):
  // w1 24 x 24, w2 128 x 128
  TrainingSetup f25 = s;
  f25.lokr_attention_factor = 25;
  CHECK(lokr(f25) == doctest::Approx(32.0 * 4 * (24 * 24 + 128 * 128)));
  // w2 at rank 8 when full_matrix is off and linear_dim is under half its side: 8 x (1536 + 1536)
  TrainingSetup low = s;
  low.lokr_full_matrix = false;
  low.lokr_linear_dim = 8;
  CHECK(lokr(low) == doctest::Approx(32.0 * 4 * (4 + 8 * (1536 + 1536))));
  // linear_dim at least half the larger side: w2 in full again
  low.lokr_linear_dim = 768;
  CHECK(lokr(low) == doctest::Approx(lokr(s)));
  // Kandinsky 5 Image Lite: attention factor 2 (self and cross, 2560 wide), FFN factor 4 (2560 <-> 10240)
  // over 2 text blocks (self-attention + FFN) and 50 visual blocks (self + cross + FFN):
  //   attention Linear 4 + 1280 x 1280 = 1,638,404; FFN Linear 16 + 2560 x 640 = 1,638,416
  const Family& k5 = find_family("kandinsky5-image-lite");
  const TrainingSetup k = default_setup(k5);
  const double attn = 4 + 1280.0 * 1280, ff = 16 + 2560.0 * 640;
  CHECK(static_memory(analyze(k5, k), k).trainable_params ==
        doctest::Approx(2 * (4 * attn + 2 * ff) + 50 * (8 * attn + 2 * ff)));
}

TEST_CASE("a family named by its id is parsed from its own file: the same family builtin_families() holds") {
  for (const Family& listed : builtin_families()) {
    const Family& by_id = find_family(listed.id);
    INFO(listed.id);
    CHECK(by_id.id == listed.id);
    CHECK(by_id.name == listed.name);
    CHECK(by_id.trainer_family == listed.trainer_family);
    CHECK(by_id.block_lists.size() == listed.block_lists.size());
    CHECK(by_id.checkpointing.interval == listed.checkpointing.interval);
    // the same answer again (parsed once), and in capitals
    CHECK(&find_family(listed.id) == &by_id);
  }
  CHECK(find_family("SD1X").id == "sd1x");
  CHECK_THROWS_AS(find_family("gpus"), InputError);  // the GPU file is no family
}
