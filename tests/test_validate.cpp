// The checkpoint executor against plain training, and the cost model against the executor.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/families/profile.hpp"
#include "segadvise/profiler/profiler.hpp"
#include "segadvise/profiler/validate.hpp"

#ifndef SEGADVISE_TEST_DATA
#define SEGADVISE_TEST_DATA "tests/data"
#endif

using namespace segadvise;

namespace {

const Family& tiny() { return find_family(std::string(SEGADVISE_TEST_DATA) + "/tiny-dit.json"); }

TrainingSetup tiny_setup(const Family& fam, int side) {
  TrainingSetup s = default_setup(fam);
  s.width = side;
  s.height = side;
  return s;
}

// every schedule shape the executor knows, as the trainer realizes it on a Wan-like family
const char* kSchedules[] = {"none",         "layer",         "interval2",           "interval3",
                            "seg2-stride4", "layer+torch-ffn", "layer+unsloth",     "seg2-stride3+unsloth",
                            "layer+unsloth-ffn", "activation-offload", "seg2-stride4-offload", "layer-offload"};

}  // namespace

TEST_CASE("every schedule's gradients equal those of training without checkpointing") {
  const Family& fam = tiny();
  const TrainingSetup setup = tiny_setup(fam, 128);  // 64 tokens: a fraction of a second per step
  const BlockChain chain = analyze(fam, setup);
  profiler::ValidateOptions opt;
  opt.quiet = true;
  for (const char* name : kSchedules) {
    PlanResult pr = realize(fam, chain, Schedule::parse(name), setup);
    CAPTURE(name);
    REQUIRE(pr.supported);
    pr.plan.description = describe(pr.plan, chain);
    const profiler::GradientCheck g = profiler::compare_gradients(fam, setup, pr.plan, opt);
    std::printf("%-22s %-60s max |grad| %.3g, max |diff| %.3g over %d tensors\n", name, pr.plan.description.c_str(),
                g.max_abs_grad, g.max_abs_diff, g.tensors);
    CHECK(g.max_abs_grad > 0);
    // the same kernels run on the same inputs with the same dropout masks: bit-identical, or at
    // most a rounding difference from a different summation order
    CHECK(g.relative() < 1e-3);
  }
}

// Only bytes are asserted here: step time depends on what else the machine runs, so predicted
// against measured step time is a benchmark (scripts/bench-validate.sh, quoted in docs/profiler.md).
TEST_CASE("on CPU, with a profile of this machine, predicted peak is within 3% for every schedule") {
  const Family& fam = tiny();
  const TrainingSetup setup = tiny_setup(fam, 512);  // 1024 tokens: activations dominate the peak
  profiler::ProfileOptions po;
  po.quiet = true;
  po.repeats = 1;  // the bytes a pass saves do not change between repeats
  Profile prof = profiler::run_profile(fam, setup, po);
  prof.path = "(measured by the test)";
  BlockChain chain = profiler::validation_chain(fam, setup, 8);
  GpuSpec gpu = profiler::cpu_gpu_spec();
  Coefficients coef;
  profiler::use_cpu_coefficients(coef);
  apply_profile(prof, fam, setup, chain, gpu.id);
  profiler::ValidateOptions opt;
  opt.quiet = true;
  opt.steps = 1;
  for (const char* name : kSchedules) {
    const PlanResult pr = realize(fam, chain, Schedule::parse(name), setup);
    REQUIRE(pr.supported);
    const Prediction p = predict(chain, pr.plan, setup, gpu, coef, 0);
    const profiler::ValidateRun run = profiler::run_validation(fam, setup, pr.plan, opt);
    const double peak_err = (p.peak_vram_bytes - run.peak_bytes) / run.peak_bytes;
    std::printf("%-22s predicted peak %.1f MiB, measured %.1f MiB (%+.1f%%)\n", name, p.peak_vram_bytes / kMiB,
                run.peak_bytes / kMiB, 100 * peak_err);
    CAPTURE(name);
    CHECK(std::fabs(peak_err) < 0.03);
  }
}
