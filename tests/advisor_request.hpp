// A default advisor request for the suites that go through the advisor API.
#pragma once

#include <string>

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/planner/advisor.hpp"

namespace segadvise::test {

// `model` on `gpu` with the family's default setup, the shipped coefficients and 1 GiB of headroom.
inline AdvisorRequest request_for(const std::string& model, const std::string& gpu) {
  AdvisorRequest r;
  r.family = &find_family(model);
  r.setup = default_setup(*r.family);
  r.gpu = find_gpu(gpu);
  r.coef = coefficients_for("");
  r.headroom_bytes = 1 * kGiB;
  return r;
}

}  // namespace segadvise::test
