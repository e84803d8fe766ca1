// Schedule enumeration, the Pareto front and the recommendation.
#include <doctest/doctest.h>

#include <set>

#include "segadvise/planner/planner.hpp"

using namespace segadvise;

TEST_CASE("the trainer's schedule space has every interval and stride once") {
  ScheduleSpace sp;
  sp.max_interval = 4;
  sp.backends = {Backend::Torch};
  // none, layer, interval 2..4 (3), strides: k=2 -> 3,4; k=3 -> 4 (3) = 8
  const auto all = enumerate_schedules(sp);
  CHECK(all.size() == 8);
  std::set<std::string> names;
  for (const auto& s : all) CHECK(names.insert(s.name()).second);
  CHECK(names.count("seg2-stride4") == 1);
  CHECK(names.count("interval4") == 1);
  // a second backend doubles the checkpointed ones; attention offload doubles everything
  sp.backends.push_back(Backend::Unsloth);
  sp.attention_offload = true;
  CHECK(enumerate_schedules(sp).size() == 2 * (1 + 2 * 7));
  sp.interval = false;
  CHECK(enumerate_schedules(sp).size() == 2 * (1 + 2));
}

TEST_CASE("advise recommends the fastest schedule that fits and keeps the Pareto front") {
  // Three schedules: none (fast, big), interval2 (middle), layer (slow, small).
  std::vector<Schedule> schedules(3);
  schedules[0].checkpointing = false;
  schedules[1].interval = 2;
  double headroom = 2;
  auto evaluate = [&headroom](const Schedule& s) {
    Candidate c;
    c.schedule = s;
    c.prediction.usable_vram_bytes = 50;
    if (!s.checkpointing) {
      c.prediction.peak_vram_bytes = 80;
      c.prediction.step_time_s = 1.0;
    } else if (s.interval == 2) {
      c.prediction.peak_vram_bytes = 45;
      c.prediction.step_time_s = 1.2;
    } else {
      c.prediction.peak_vram_bytes = 30;
      c.prediction.step_time_s = 1.4;
    }
    c.prediction.fits = c.prediction.peak_vram_bytes + headroom <= 50;
    return c;
  };
  const Advice a = advise(schedules, evaluate, 2);
  REQUIRE(a.recommended >= 0);
  CHECK(a.candidates[a.recommended].schedule.name() == "interval2");
  CHECK(a.candidates.size() == 3);  // all three are on the front
  for (const auto& c : a.candidates) CHECK(c.pareto);
  // with 25 of headroom nothing fits: the shortfall is the smallest peak + headroom - usable
  headroom = 25;
  const Advice b = advise(schedules, evaluate, headroom);
  CHECK(b.recommended == -1);
  CHECK(b.shortfall_bytes == doctest::Approx(30 + 25 - 50));
}

TEST_CASE("a schedule slower and bigger than another is not on the Pareto front") {
  std::vector<Candidate> c(3);
  c[0].prediction.peak_vram_bytes = 10, c[0].prediction.step_time_s = 2;
  c[1].prediction.peak_vram_bytes = 20, c[1].prediction.step_time_s = 1;
  c[2].prediction.peak_vram_bytes = 25, c[2].prediction.step_time_s = 3;  // dominated by both
  mark_pareto(c);
  CHECK(c[0].pareto);
  CHECK(c[1].pareto);
  CHECK_FALSE(c[2].pareto);
}
