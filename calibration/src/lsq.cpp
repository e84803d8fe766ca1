#include "segadvise/calibration/lsq.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace segadvise {

namespace {

double half_sq(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return 0.5 * s;
}

// Solves A x = b for a symmetric positive definite A (Cholesky); false when not positive definite.
bool cholesky_solve(std::vector<double> a, std::vector<double> b, std::size_t n, std::vector<double>& x) {
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (std::size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (std::size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    double s = b[i];
    for (std::size_t k = 0; k < i; ++k) s -= a[i * n + k] * b[k];
    b[i] = s / a[i * n + i];
  }
  for (std::size_t ii = n; ii-- > 0;) {
    double s = b[ii];
    for (std::size_t k = ii + 1; k < n; ++k) s -= a[k * n + ii] * b[k];
    b[ii] = s / a[ii * n + ii];
  }
  x = b;
  return true;
}

}  // namespace

double soft_l1(double r, double c) {
  const double z = r / c;
  const double v = c * std::sqrt(2 * (std::sqrt(1 + z * z) - 1));
  return r < 0 ? -v : v;
}

LsqResult bounded_levenberg_marquardt(const BoundedProblem& p, const LsqOptions& o) {
  const std::size_t n = p.x0.size();
  if (p.lo.size() != n || p.hi.size() != n) throw std::invalid_argument("bounded_levenberg_marquardt: bounds size");
  LsqResult res;
  std::vector<double> x = p.x0;
  for (std::size_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], p.lo[i], p.hi[i]);
  std::vector<double> r;
  p.residuals(x, r);
  ++res.evaluations;
  const std::size_t m = r.size();
  double cost = half_sq(r);
  double lambda = 1e-3;
  int small_gains = 0;  // consecutive iterations that barely lowered the cost
  std::vector<double> jac(m * n), rp(m), jtj(n * n), jtr(n), step(n), xn(n), rn(m);
  for (int it = 0; it < o.max_iterations; ++it) {
    res.iterations = it + 1;
    if (o.on_iteration) o.on_iteration(it + 1, cost);
    // forward-difference Jacobian; step inward at an upper bound
    for (std::size_t k = 0; k < n; ++k) {
      const double span = p.hi[k] - p.lo[k];
      double h = std::max(1e-7 * std::max(std::fabs(x[k]), 1e-3), 1e-9 * span);
      if (x[k] + h > p.hi[k]) h = -h;
      std::vector<double> xk = x;
      xk[k] += h;
      p.residuals(xk, rp);
      ++res.evaluations;
      for (std::size_t i = 0; i < m; ++i) jac[i * n + k] = (rp[i] - r[i]) / h;
    }
    std::fill(jtj.begin(), jtj.end(), 0.0);
    std::fill(jtr.begin(), jtr.end(), 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      const double* row = &jac[i * n];
      for (std::size_t a = 0; a < n; ++a) {
        if (row[a] == 0) continue;
        jtr[a] += row[a] * r[i];
        for (std::size_t b = 0; b <= a; ++b) jtj[a * n + b] += row[a] * row[b];
      }
    }
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = 0; b < a; ++b) jtj[b * n + a] = jtj[a * n + b];
    // a parameter at a bound whose gradient pushes further out is held fixed this iteration
    std::vector<bool> active(n, true);
    for (std::size_t a = 0; a < n; ++a) {
      if (x[a] <= p.lo[a] && jtr[a] > 0) active[a] = false;
      if (x[a] >= p.hi[a] && jtr[a] < 0) active[a] = false;
      if (jtj[a * n + a] == 0) active[a] = false;
    }
    bool improved = false;
    for (int tries = 0; tries < 12; ++tries) {
      std::vector<double> a(jtj), b(n);
      for (std::size_t k = 0; k < n; ++k) {
        b[k] = active[k] ? -jtr[k] : 0.0;
        for (std::size_t l = 0; l < n; ++l)
          if (!active[k] || !active[l]) a[k * n + l] = (k == l) ? 1.0 : 0.0;
        if (active[k]) a[k * n + k] += lambda * std::max(jtj[k * n + k], 1e-12);
      }
      if (!cholesky_solve(a, b, n, step)) {
        lambda *= 10;
        continue;
      }
      double step_norm = 0;
      for (std::size_t k = 0; k < n; ++k) {
        xn[k] = std::clamp(x[k] + step[k], p.lo[k], p.hi[k]);
        const double span = std::max(1e-12, p.hi[k] - p.lo[k]);
        step_norm = std::max(step_norm, std::fabs(xn[k] - x[k]) / span);
      }
      p.residuals(xn, rn);
      ++res.evaluations;
      const double cn = half_sq(rn);
      if (cn < cost) {
        const double gain = (cost - cn) / std::max(cost, 1e-300);
        x = xn;
        r = rn;
        cost = cn;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
        small_gains = (gain < o.relative_tolerance || step_norm < o.step_tolerance) ? small_gains + 1 : 0;
        if (small_gains >= 3) {
          res.converged = true;
          res.stop_reason = "cost change below tolerance";
        }
        break;
      }
      if (step_norm < o.step_tolerance) break;
      lambda *= 4;
    }
    if (!improved) {
      res.converged = true;
      res.stop_reason = "no step lowers the cost";
      break;
    }
    if (res.converged) break;
  }
  if (res.stop_reason.empty()) res.stop_reason = "iteration limit";
  res.x = x;
  res.cost = cost;
  return res;
}

}  // namespace segadvise
