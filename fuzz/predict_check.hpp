// The invariant every accepted input must keep: a prediction for it is finite and non-negative
// (a value that wraps around or overflows must never be answered as if fine).
#pragma once

#include "fuzz_util.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::fuzz {

inline void check_prediction(const Prediction& p) {
  if (!p.supported) return;
  require(finite_non_negative(p.peak_vram_bytes), "peak VRAM finite and >= 0");
  require(finite_non_negative(p.step_time_s), "step time finite and >= 0");
  require(finite_non_negative(p.memory.activation_peak_bytes), "activation peak finite and >= 0");
  require(finite_non_negative(p.memory.upcast_weight_bytes) &&
              p.memory.upcast_weight_bytes <= p.memory.activation_peak_bytes * (1 + 1e-12),
          "upcast weight copies finite, >= 0 and part of the activation peak");
}

// Realizes `schedule` on the chain and predicts it on an H100 with the shipped coefficients.
inline void check_schedule(const Family& fam, const BlockChain& chain, const TrainingSetup& setup,
                           const Schedule& schedule, const Coefficients& coef = default_coefficients()) {
  const PlanResult r = realize(fam, chain, schedule, setup);
  if (!r.supported) return;
  check_prediction(predict(chain, r.plan, setup, find_gpu("h100"), coef, 0));
}

inline void check_setup(const Family& fam, const TrainingSetup& setup, const BlockChain& chain,
                        const Coefficients& coef = default_coefficients()) {
  for (const char* name : {"none", "layer", "interval2"}) check_schedule(fam, chain, setup, Schedule::parse(name), coef);
}

// A trainer config in the fuzzer's bytes, written to scratch_dir()/name and read as `check` reads
// it (relative paths from the scratch folder): read or an InputError; an accepted one's schedule
// gives a finite, non-negative prediction. (Here rather than in fuzz_util.hpp, which needs no
// segadvise library.)
inline void check_trainer_config(const char* name, const uint8_t* data, std::size_t size) {
  const std::string path = write_scratch(name, data, size);
  try {
    TrainerReadOptions o;
    o.cwd = scratch_dir();
    const TrainerRead r = read_trainer_config(path, o);
    if (!r.family) return;
    const BlockChain chain = analyze(*r.family, r.setup);
    check_schedule(*r.family, chain, r.setup, r.schedule);
  } catch (const InputError&) {
  }
}

}  // namespace segadvise::fuzz
