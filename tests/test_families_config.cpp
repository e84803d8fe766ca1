// How `check` reads the trainer configs of the families in docs/sources/families.md: flavours that
// ship low-precision weights, the parts their published sources do not describe (a clear input error naming what is missing).
// Fixtures: tests/fixtures/families/ (small configs written for these tests).
#include <doctest/doctest.h>

#include "segadvise/trainers/simpletuner_reader.hpp"

using namespace segadvise;

namespace {

const std::string kFixtures = std::string(SEGADVISE_FIXTURES_DIR) + "/families/";

}  // namespace

TEST_CASE("flavours that ship low-precision weights are read at their real precision") {
  // Ideogram's fp8 flavour at no_change stays native fp8 unless upcast; Boogu -fp8 is forced to fp8-torchao
  using segadvise::read_simpletuner_config;
  segadvise::TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  CHECK(read_simpletuner_config(kFixtures + "ideogram-fp8.json", o).setup.base_precision == "fp8-native");
  CHECK(read_simpletuner_config(kFixtures + "ideogram-fp8-upcast.json", o).setup.base_precision == "no_change");
  CHECK(read_simpletuner_config(kFixtures + "boogu-base-fp8.json", o).setup.base_precision == "fp8-torchao");
}

TEST_CASE("MiniMax Music 3's autoregressive stage is a clear input error") {
  segadvise::TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  try {
    segadvise::read_simpletuner_config(kFixtures + "music3-lm.json", o);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("minimax_music_train_component") != std::string::npos);
  }
}

TEST_CASE("DeepFloyd IF stays a clear input error naming what is missing") {
  segadvise::TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  try {
    segadvise::read_simpletuner_config(kFixtures + "deepfloyd.json", o);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("U-Net channel widths") != std::string::npos);
  }
}
