// The families whose facts were read line by line from their published configs and code
// (docs/sources/families.md): every such family checked against numbers derived by hand from its facts (derivation in comments),
// and the analyzer features those facts need (grouped-query attention, an attention width other
// than the model width, local attention windows, audio cross-attention, packed rows, 17n+5 frames).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "segadvise/families/family.hpp"

using namespace segadvise;

namespace {

double block_params(const BlockChain& c) {
  double p = 0;
  for (const auto& b : c.blocks) p += b.params;
  return p;
}

TrainingSetup setup_for(const Family& f, int w, int h, int frames) {
  TrainingSetup s = default_setup(f);
  s.width = w;
  s.height = h;
  s.frames = frames;
  return s;
}

// One dit_self block, width 8, 4 heads of 4 (attention width 16), 1 KV head (k/v width 4), no FFN,
// a full fine-tune (no adapters), 64x64 px at 16 px per token = 16 image tokens.
Family toy_gqa(int window) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "id": "toy-gqa", "trainer_family": "toy", "modality": "image", "text_tokens": 0,
    "geometry": {"vae_spatial": 8, "patch_spatial": 2},
    "block_lists": [{"name": "layers", "count": 1, "kind": "dit_self", "hidden": 8, "heads": 4, "head_dim": 4,
                     "kv_heads": 1, "ffn_hidden": null}],
    "checkpointing": {"interval": "per_block"}
  })");
  j["block_lists"][0]["attention_window"] = window;
  return parse_family(j, "toy-gqa.json");
}

TrainingSetup toy_setup(const Family& f) {
  TrainingSetup s = default_setup(f);
  s.width = s.height = 64;
  s.frames = 1;
  s.model_type = ModelType::Full;
  return s;
}

}  // namespace

TEST_CASE("grouped-query attention: q/out at heads x head_dim, k/v at kv_heads x head_dim") {
  // d = 8, da = 4 x 4 = 16, dkv = 1 x 4 = 4, n = 16 tokens, bf16 (e = 2).
  // params: q 8x16 + o 16x8 = 256, k,v 2 x 8x4 = 64, adaLN 4 d^2 = 256 -> 576.
  // saved per token (elements): norm input 8 + LayerNorm stats 8/e = 4; q,k before RMSNorm with
  // their rsqrt 16+1+4+1 = 22; kernel q,k,v,out 16+4+4+16 = 40; log-sum-exp 4 heads x 4/e = 8;
  // full fine-tune: qkv input 8 + out-proj input 16 = 24 -> 106 elements = 212 bytes; x 16 = 3392.
  // attention FLOPs 4 n n da = 4 x 16 x 16 x 16 = 16384; with a window of 4 keys: 4 x 16 x 4 x 16 = 4096.
  const Family f = toy_gqa(0);
  const BlockChain c = analyze(f, toy_setup(f));
  REQUIRE(c.blocks.size() == 1);
  CHECK(c.tokens_image == doctest::Approx(16));
  CHECK(c.blocks[0].params == doctest::Approx(576));
  CHECK(c.blocks[0].saved_attention_bytes == doctest::Approx(3392));
  CHECK(c.blocks[0].attention_flops == doctest::Approx(16384));
  const Family w = toy_gqa(4);
  CHECK(analyze(w, toy_setup(w)).blocks[0].attention_flops == doctest::Approx(4096));
}

TEST_CASE("kv_heads above heads is rejected naming the field") {
  nlohmann::json j = nlohmann::json::parse(R"({
    "id": "bad", "modality": "image", "text_tokens": 0, "geometry": {},
    "block_lists": [{"name": "l", "count": 1, "kind": "dit_self", "hidden": 8, "heads": 2, "head_dim": null, "ffn_hidden": null, "kv_heads": 4}],
    "checkpointing": {"interval": "per_block"}
  })");
  try {
    parse_family(j, "bad.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("kv_heads") != std::string::npos);
  }
}

TEST_CASE("Boogu Image: 3360 wide, 8 double + 32 single-stream blocks, ~9.96B") {
  // single/refiner block: q,o 2 x 3360^2 = 22,579,200 + k,v 2 x 3360 x 840 (7 KV heads x 120) =
  // 5,644,800 + SwiGLU 3 x 3360 x 13568 = 136,765,440 + adaLN 1024 x 4 x 3360 = 13,762,560 ->
  // 178,752,000; double block (9.96e9 - 36 x 178,752,000) / 8 = 440.6M. Blocks: 36 x 178.752M +
  // 8 x 440.6M = 9,959,872,000. Tokens at 1024 px: 8x VAE, patch 2 -> 64 x 64 = 4096.
  const Family& f = find_family_by_trainer("boogu_image", "v0.1-base", "test");
  CHECK(f.block_lists.size() == 4);
  CHECK(f.block_lists[3].kind == BlockKind::DitSelf);
  CHECK(f.block_lists[3].count == 32);
  const BlockChain c = analyze(f, setup_for(f, 1024, 1024, 1));
  CHECK(c.tokens_image == doctest::Approx(4096));
  CHECK(c.blocks.size() == 44);
  CHECK(block_params(c) == doctest::Approx(9.959872e9));
}

TEST_CASE("Cosmos 3: edge 2048 wide with a 16x VAE, nano the default, super 64 layers") {
  // 1024 px / 16 (VAE) / 2 (patch) = 32 per side: 1024 image tokens (the 8x estimate gave 4096).
  // edge: 28 layers x 1.006e8 (both MoT pathways) = 2.8168e9.
  const Family& edge = find_family_by_trainer("cosmos3", "edge", "test");
  const BlockChain ce = analyze(edge, setup_for(edge, 1024, 1024, 1));
  CHECK(ce.tokens_image == doctest::Approx(1024));
  CHECK(ce.blocks.size() == 28);
  CHECK(block_params(ce) == doctest::Approx(2.8168e9));
  CHECK(edge.block_lists[0].ffn_act == "relu2");
  CHECK_FALSE(edge.checkpointing.compiled_blocks_keep_activations);
  CHECK(find_family_by_trainer("krea2", "raw", "test").checkpointing.compiled_blocks_keep_activations);
  // nano (the trainer's default flavour): 36 x 3.86e8 = 1.3896e10
  const Family& nano = find_family_by_trainer("cosmos3", "", "test");
  CHECK(nano.id == "cosmos3-nano");
  CHECK(block_params(analyze(nano, setup_for(nano, 1024, 1024, 1))) == doctest::Approx(1.3896e10));
  // super-i2v is the super layout: 64 x 9.75e8 = 6.24e10; heads 64 x 128 = 8192 wide, model 5120
  const Family& sup = find_family_by_trainer("cosmos3", "super-i2v", "test");
  CHECK(sup.id == "cosmos3-super");
  CHECK(sup.block_lists[0].heads * sup.block_lists[0].head_dim == 8192);
  CHECK(block_params(analyze(sup, setup_for(sup, 1024, 1024, 1))) == doctest::Approx(6.24e10));
}

TEST_CASE("Wan 2.2 TI2V-5B: 16x VAE, 30 x 3072, ~4.9B") {
  // 512 x 512 x 81 frames: latent 32 x 32 x ((81-1)/4+1 = 21), patch (1,2,2): 16 x 16 x 21 = 5376.
  // Per block: self 4 x 3072^2 = 37,748,736, cross the same, GELU FFN 2 x 3072 x 14336 = 88,080,384
  // -> 163,577,856; x 30 = 4,907,335,680.
  const Family& f = find_family_by_trainer("wan", "ti2v-5b-2.2", "test");
  CHECK(f.geometry.alignment == 64);
  const BlockChain c = analyze(f, setup_for(f, 512, 512, 81));
  CHECK(c.tokens_image == doctest::Approx(5376));
  CHECK(block_params(c) == doctest::Approx(4907335680.0));
}

TEST_CASE("LTXVideo2 2.5 loads the 2.3 transformer") {
  CHECK(find_family_by_trainer("ltxvideo2", "2.5-dev", "test").id == "ltxvideo2-2.3");
  CHECK(find_family_by_trainer("ltxvideo2", "2.5-distilled", "test").id == "ltxvideo2-2.3");
}

TEST_CASE("MiniMax H3: 17n+5 frames, one packed sequence of text, keyframe/audio rows and video") {
  // 39 frames = 17 x 2 + 5 -> 5 x 2 + 2 = 12 latent frames; 512 px / 16 / 2 = 16 per side: 256 per
  // frame, 3072 video tokens. Joint sequence: 3072 + 512 text + 642 packed rows = 4226; the state a
  // block carries: 4226 x 5376 x 2 bytes = 45,437,952. 40 frames round up to 56 (17 x 3 + 5).
  const Family& f = find_family_by_trainer("minimaxh3", "fl2va", "test");
  CHECK(apply_frame_rule(f, 39) == 39);
  CHECK(apply_frame_rule(f, 40) == 56);
  const BlockChain c = analyze(f, setup_for(f, 512, 512, 39));
  CHECK(c.tokens_image == doctest::Approx(3072));
  REQUIRE(c.blocks.size() == 52);
  CHECK_FALSE(c.blocks[0].checkpointable);  // text refiner
  CHECK(c.blocks[2].boundary_bytes == doctest::Approx(45437952));
}

TEST_CASE("MiniMax Music 3: 36 x 2048 over 30 s of latents, no text") {
  // 30 s x 44100/512 = 2584 latent tokens; 36 x 67,108,864 (4 x 2048^2 + 3 x 2048 x 8192) = 2.416e9.
  const Family& f = find_family_by_trainer("minimaxmusic", "music3", "test");
  const BlockChain c = analyze(f, default_setup(f));
  CHECK(c.tokens_image == doctest::Approx(2584));
  CHECK(c.tokens_text == doctest::Approx(0));
  CHECK(block_params(c) == doctest::Approx(36 * 67108864.0));
}

TEST_CASE("HeartMuLa: the local decoder runs 8 tokens per position in windows of 8") {
  // backbone: 3000 audio frames + 512 text = 3512 tokens; decoder: 8 x 3000 = 24000 tokens, each
  // attending to its position's 8: 4 x 24000 x 8 x (8 heads x 384 = 3072) = 2,359,296,000 FLOPs.
  const Family& f = find_family_by_trainer("heartmula", "3b", "test");
  const BlockChain c = analyze(f, default_setup(f));
  REQUIRE(c.blocks.size() == 31);
  CHECK(c.blocks[0].boundary_bytes == doctest::Approx(3512 * 3072 * 2.0));
  CHECK(c.blocks[28].list == "local_decoder");
  CHECK(c.blocks[28].attention_flops == doctest::Approx(2359296000.0));
  CHECK(block_params(c) == doctest::Approx(28 * 1.007e8 + 3 * 1.038e8));
}

TEST_CASE("ACE-Step 1.5: 590 conditioning tokens and GQA blocks of 62.9M") {
  // text 77 + lyrics 512 + timbre 1 = 590. Per block, kv_heads 8 (k/v 1024 wide): self q,o
  // 2 x 2048^2 + k,v 2 x 2048 x 1024 = 12,582,912; cross the same; SwiGLU 3 x 2048 x 6144 =
  // 37,748,736 -> 62,914,560.
  const Family& f = find_family_by_trainer("ace_step", "v15-base", "test");
  CHECK(f.text_tokens == 590);
  const BlockChain c = analyze(f, default_setup(f));
  CHECK(c.tokens_text == doctest::Approx(590));
  CHECK(c.blocks[0].params == doctest::Approx(62914560));
}

TEST_CASE("Wan S2V: 12 audio cross-attentions in blocks 0, 4, ..., 24, 27, ..., 39") {
  // plain block: self 4 x 5120^2 = 104,857,600 + text cross 104,857,600 + GELU 2 x 5120 x 13824 =
  // 141,557,760 -> 351,272,960; an audio block adds 4 x 5120^2 = 104,857,600 -> 456,130,560.
  // 28 x 351,272,960 + 12 x 456,130,560 = 15,309,209,600 (~15.5B in all with embeddings).
  const Family& f = find_family_by_trainer("wan_s2v", "s2v-14b-2.2", "test");
  const BlockChain c = analyze(f, setup_for(f, 832, 480, 81));
  REQUIRE(c.blocks.size() == 40);
  CHECK(c.blocks[27].params == doctest::Approx(456130560));
  CHECK(c.blocks[26].params == doctest::Approx(351272960));
  CHECK(c.blocks[39].list_position == 39);  // the runs of `blocks` are one list to the trainer
  CHECK(block_params(c) == doctest::Approx(15309209600.0));
}

TEST_CASE("Bria 3.2: 8 double + 28 single Flux-style blocks of 2304, ~3.76B") {
  // d = 2304 (24 x 96), f = 9216 GELU. Double: two streams' attention 2 x 4d^2 = 42,467,328, two
  // GELU FFNs 2 x 2df = 84,934,656, adaLN 6d^2 per stream = 63,700,992 -> 191,102,976. Single: fused
  // in-projection d(3d + f) = 37,158,912, out-projection (d + f)d = 26,542,080, modulation 3d^2 =
  // 15,925,248 -> 79,626,240. 8 x 191,102,976 + 28 x 79,626,240 = 3,758,358,528.
  // Tokens at 1024 px: 8x VAE, patch 2 -> 4096 image + 128 text.
  const Family& f = find_family_by_trainer("bria", "v3.2", "test");
  const BlockChain c = analyze(f, setup_for(f, 1024, 1024, 1));
  CHECK(c.tokens_image == doctest::Approx(4096));
  CHECK(c.tokens_text == doctest::Approx(128));
  CHECK(block_params(c) == doctest::Approx(3758358528.0));
}

TEST_CASE("FramePack: HunyuanVideo's 20 double + 40 single blocks at 3072, its packed context in the image tokens") {
  // d = 3072 (24 x 128), f = 12288. Double: attention 2 x 4d^2 = 75,497,472, FFNs 2 x 2df =
  // 150,994,944, adaLN 2 x 6d^2 = 113,246,208 -> 339,738,624. Single: d(3d + f) = 66,060,288,
  // (d + f)d = 47,185,920, 3d^2 = 28,311,552 -> 141,557,760. Refiner (dit_self): 4d^2 + 2df + 4d^2 =
  // 150,994,944. 20 x 339,738,624 + 40 x 141,557,760 + 2 x 150,994,944 = 12,759,072,768 (~13B published).
  // Tokens at 960 x 544, 33 frames: 60 x 34 = 2040 per latent frame x (9 + 2.5 context) = 23,460.
  const Family& f = find_family("framepack");
  CHECK(f.geometry.context_latent_frames == doctest::Approx(2.5));
  CHECK(find_family("fpack").id == "framepack");
  const BlockChain c = analyze(f, setup_for(f, 960, 544, 33));
  REQUIRE(c.blocks.size() == 62);
  CHECK_FALSE(c.blocks[0].checkpointable);  // the token refiner
  CHECK(c.blocks[2].params == doctest::Approx(339738624.0));
  CHECK(c.blocks[22].params == doctest::Approx(141557760.0));
  CHECK(block_params(c) == doctest::Approx(12759072768.0));
  CHECK(c.tokens_image == doctest::Approx(23460));
  CHECK(c.tokens_text == doctest::Approx(1241));
  // its example is one section at musubi's dataset default 960 x 544
  const TrainingSetup s = default_setup(f);
  CHECK(s.frames == 33);
  CHECK(analyze(f, s).tokens_image == doctest::Approx(23460));
  // the same stack without the context (HunyuanVideo 13B, 256 text tokens) at the same shape: 9 x 2040
  const Family& hv = find_family("hunyuanvideo-13b");
  CHECK(analyze(hv, setup_for(hv, 960, 544, 33)).tokens_image == doctest::Approx(18360));
}

TEST_CASE("HunyuanImage-2.1: a 32x VAE with patch 1, 20 double + 40 single blocks at 3584, ~17.4B") {
  // d = 3584 (28 x 128), f = 14336. Double: 2 x 4d^2 = 102,760,448 + 2 x 2df = 205,520,896 + 12d^2 =
  // 154,140,672 -> 462,422,016. Single: d(3d + f) = 89,915,392 + (d + f)d = 64,225,280 + 3d^2 =
  // 38,535,168 -> 192,675,840. Refiner: 4d^2 + 2df + 4d^2 = 205,520,896. 20 x 462,422,016 + 40 x
  // 192,675,840 + 2 x 205,520,896 = 17,366,515,712 (published 17B, rounded: not used to shrink it).
  // Tokens at 2048 px: 2048 / 32 / 1 = 64 per side = 4096; text 1000 Qwen + 128 ByT5 = 1128.
  const Family& f = find_family("hunyuan-image-2.1");
  CHECK(f.geometry.vae_spatial == 32);
  CHECK(f.geometry.patch_spatial == 1);
  CHECK(f.geometry.alignment == 32);
  CHECK(f.params_published == 0);
  CHECK(find_family("hunyuanimage").id == "hunyuan-image-2.1");
  const BlockChain c = analyze(f, default_setup(f));
  REQUIRE(c.blocks.size() == 62);
  CHECK(c.blocks[2].params == doctest::Approx(462422016.0));
  CHECK(c.blocks[22].params == doctest::Approx(192675840.0));
  CHECK(block_params(c) == doctest::Approx(17366515712.0));
  CHECK(c.tokens_image == doctest::Approx(4096));
  CHECK(c.tokens_text == doctest::Approx(1128));
  // 1024 px: 32 x 32 = 1024 image tokens
  CHECK(analyze(f, setup_for(f, 1024, 1024, 1)).tokens_image == doctest::Approx(1024));
}
