// Bounded nonlinear least squares: Levenberg–Marquardt with a forward-difference Jacobian and
// every step projected onto the box [lo, hi]. Minimises 1/2 * sum r_i(x)^2. Written for the
// calibration (tens of parameters, hundreds to thousands of residuals); no external library.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace segadvise {

struct BoundedProblem {
  std::vector<double> x0, lo, hi;
  // fills r (its size stays the same between calls)
  std::function<void(const std::vector<double>& x, std::vector<double>& r)> residuals;
};

struct LsqOptions {
  int max_iterations = 200;
  double relative_tolerance = 1e-10;  // stop when the cost improves by less than this share
  double step_tolerance = 1e-10;      // or when the step is this small relative to the box
  // called as each iteration starts (1-based), with the cost so far; none: silent
  std::function<void(int iteration, double cost)> on_iteration;
};

struct LsqResult {
  std::vector<double> x;
  double cost = 0;  // 1/2 sum r^2 at x
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;
  std::string stop_reason;
};

LsqResult bounded_levenberg_marquardt(const BoundedProblem& p, const LsqOptions& o = {});

// Soft-L1 robust residual: sign(r) * c * sqrt(2 (sqrt(1 + (r/c)^2) - 1)); ~r for |r| << c, grows
// like sqrt(2 c |r|) beyond, so a few wild rows (compile stalls) do not drag the fit.
double soft_l1(double r, double c);

}  // namespace segadvise
