// The pieces the phases of a run share between the files that predict them: phases.cpp (SimpleTuner's
// run, host memory and the phase advice) and phases_other.cpp (another trainer's run, RunSetup::other).
#pragma once

#include <string>
#include <vector>

#include "segadvise/trainers/phases.hpp"

namespace segadvise::phase_parts {

// Everything a phase needs, worked out once.
struct Ctx {
  const Family& fam;
  const TrainingSetup& setup;
  const BlockChain& chain;
  const Prediction& step;
  FamilyPhaseData data;
  double frag = 0;   // allocator slack per activation byte, as the step's prediction has it
  Range step_range;  // the step's 90% range (lo = hi = its point without one)
};

// a part with its band, or without one (host memory); nothing for no bytes
void add(std::vector<Resident>& r, const std::string& what, double bytes, PartBand band);
void add(std::vector<Resident>& r, const std::string& what, double bytes);
// the phase's peak and range from its resident parts
PhaseResult& finish(PhaseResult& p);
// a phase that is the largest of its moments
PhaseResult largest(std::vector<PhaseResult> moments);
std::string dims(int w, int h, int frames);
void add_model(const Ctx& c, std::vector<Resident>& r, bool optimizer, bool gradients);
double te_activation_peak(const Ctx& c, const RunSetup& run);
double base_bf16_bytes(const Ctx& c);
double denoise_bytes(const Ctx& c, int width, int height, int frames, int batch);
// the band of a VAE working set: measured where its figure is, else an estimate
PartBand vae_work_band(const Ctx& c);

// another trainer's run, phase by phase (phases_other.cpp)
PhaseResult other_caching(const Ctx& c, const TrainerRun& o);
PhaseResult other_load(const Ctx& c, const TrainerRun& o);
PhaseResult other_step(const Ctx& c, const TrainerRun& o);
PhaseResult other_sampling(const Ctx& c, const TrainerRun& o);
PhaseResult other_save(const Ctx& c, const TrainerRun& o);

}  // namespace segadvise::phase_parts
