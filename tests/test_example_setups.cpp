// `advise --model M` with no flags starts from the family's example (default_setup); `check` of that
// example reads its config and data backend. The two must be the same setup and predict the same.
// Fixtures: tests/fixtures/examples/simpletuner/examples/<example>/config.json and the data-backend (and
// LyCORIS) files they name, at the trainer repository's paths: copies of SimpleTuner's own example
// configs, written by scripts/sync_example_setups.py (which also writes each family's `example`).
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

using namespace segadvise;

namespace {

const std::string kExamples = std::string(SEGADVISE_FIXTURES_DIR) + "/examples/simpletuner/examples/";

// Families whose example config or data backend is not in the trainer checkout the fixtures come
// from (the sweep's commit), and families whose example is another trainer's (ai-toolkit, OneTrainer:
// SimpleTuner has none for them) or a sibling's shape named in words (SD 2.x trains at SD 1.x's):
// their example fields stay as written by hand from those sources.
const std::set<std::string> kNoFixture = {"mageflow",      "minimax-h3",       "wan2.2-ti2v-5b", "flex1",
                                          "flux1-kontext", "flux2-klein-4b",   "hunyuanvideo-13b",
                                          "qwen-image-edit", "sd2x",           "wan2.2-14b", "sd3-medium",
                                          "framepack",     "hunyuan-image-2.1"};

}  // namespace

TEST_CASE("every family's default setup is what check reads from the example it names, and predicts the same") {
  const Coefficients& coef = default_coefficients();
  const GpuSpec& gpu = find_gpu("h100");
  int compared = 0;
  for (const Family& fam : builtin_families()) {
    if (fam.example.name.empty()) continue;
    const std::string path = kExamples + fam.example.name + "/config.json";
    if (!std::filesystem::exists(path)) {
      INFO(fam.id << ": no fixture " << path);
      CHECK(kNoFixture.count(fam.id) == 1);
      continue;
    }
    INFO(fam.id << " (" << fam.example.name << ")");
    TrainerReadOptions opt;
    opt.cwd = SEGADVISE_FIXTURES_DIR;
    const TrainerRead r = read_simpletuner_config(path, opt);
    REQUIRE(r.family != nullptr);
    // an example shared by flavours of one model family (SD 3.5 Large trains from sd3.peft-lora, whose
    // model_flavour is Medium; the PixArt flavours from pixart.lycoris-lokr, Sigma 900M's): the
    // config's own flavour is another family, the setup it reads is this family's default
    CHECK((r.family->id == fam.id || r.family->trainer_family == fam.trainer_family));
    const TrainingSetup& c = r.setup;
    const TrainingSetup d = default_setup(fam);
    CHECK(c.width == d.width);
    CHECK(c.height == d.height);
    CHECK(c.frames == d.frames);
    CHECK(c.batch == d.batch);
    CHECK(c.base_precision == d.base_precision);
    CHECK(c.sdnq_hadamard == d.sdnq_hadamard);
    CHECK(c.mixed_precision == d.mixed_precision);
    CHECK(c.model_type == d.model_type);
    CHECK(c.lora_type == d.lora_type);
    CHECK(c.lora_rank == d.lora_rank);
    CHECK(c.lokr_read == d.lokr_read);
    CHECK(c.lokr_attention_factor == d.lokr_attention_factor);
    CHECK(c.lokr_ffn_factor == d.lokr_ffn_factor);
    CHECK(c.lokr_full_matrix == d.lokr_full_matrix);
    CHECK(c.lokr_linear_dim == d.lokr_linear_dim);
    CHECK(c.optimizer == d.optimizer);
    CHECK(c.ramtorch == d.ramtorch);
    CHECK(c.ramtorch_percent == d.ramtorch_percent);
    CHECK(c.blocks_to_swap == d.blocks_to_swap);
    CHECK(c.group_offload == d.group_offload);
    CHECK(c.attention == d.attention);
    CHECK(c.regional_compile == d.regional_compile);
    CHECK(c.use_ema == d.use_ema);
    CHECK(c.ema_on_gpu == d.ema_on_gpu);
    CHECK((c.text_tokens >= 0 ? c.text_tokens : fam.text_tokens) == (d.text_tokens >= 0 ? d.text_tokens : fam.text_tokens));
    // and the same prediction of the example's own schedule, bit for bit
    const BlockChain cc = analyze(fam, c), dc = analyze(fam, d);
    const PlanResult cp = realize(fam, cc, r.schedule, c), dp = realize(fam, dc, r.schedule, d);
    REQUIRE(cp.supported == dp.supported);
    if (cp.supported) {
      const Prediction a = predict(cc, cp.plan, c, gpu, coef, 0), b = predict(dc, dp.plan, d, gpu, coef, 0);
      CHECK(a.peak_vram_bytes == b.peak_vram_bytes);
      CHECK(a.step_time_s == b.step_time_s);
    }
    ++compared;
  }
  // every family with an example but kNoFixture's ten
  CHECK(compared >= 45);
}
