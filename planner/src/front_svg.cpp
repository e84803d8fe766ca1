#include "segadvise/planner/front_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace segadvise {

namespace {

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

// 1, 2 or 5 times a power of ten, so that about `count` ticks cover [lo, hi]
double tick_step(double lo, double hi, int count) {
  const double raw = std::max(1e-12, (hi - lo) / count);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

}  // namespace

std::string front_svg(const FrontPlot& plot) {
  const double W = 760, H = 480, left = 70, right = 20, top = 40, bottom = 60;
  // data range in GiB and seconds over everything drawn
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  auto extend = [&](double bytes, double s) {
    x0 = std::min(x0, bytes / kGiB);
    x1 = std::max(x1, bytes / kGiB);
    y0 = std::min(y0, s);
    y1 = std::max(y1, s);
  };
  for (const auto& p : plot.front.points) extend(p.peak_vram_bytes, p.step_time_s);
  for (const auto& p : plot.uniform) extend(p.peak_vram_bytes, p.step_time_s);
  for (const auto& p : plot.marked) extend(p.peak_vram_bytes, p.step_time_s);
  if (plot.limit_bytes > 0 && x0 <= x1) {
    x0 = std::min(x0, plot.limit_bytes / kGiB);
    x1 = std::max(x1, plot.limit_bytes / kGiB);
  }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 - x0 < 1e-9) x0 -= 1, x1 += 1;
  if (y1 - y0 < 1e-9) y0 -= 0.5, y1 += 0.5;
  const double padx = (x1 - x0) * 0.05, pady = (y1 - y0) * 0.08;
  x0 = std::max(0.0, x0 - padx), x1 += padx, y0 = std::max(0.0, y0 - pady), y1 += pady;
  auto X = [&](double bytes) { return left + (bytes / kGiB - x0) / (x1 - x0) * (W - left - right); };
  auto Y = [&](double s) { return top + (y1 - s) / (y1 - y0) * (H - top - bottom); };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(plot.title)
    << "</text>\n";
  // axes and ticks
  o << "<g stroke=\"#444\"><line x1=\"" << left << "\" y1=\"" << H - bottom << "\" x2=\"" << W - right << "\" y2=\""
    << H - bottom << "\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << H - bottom
    << "\"/></g>\n";
  const double xs = tick_step(x0, x1, 8), ys = tick_step(y0, y1, 6);
  for (double t = std::ceil(x0 / xs) * xs; t <= x1 + 1e-9; t += xs) {
    const double px = X(t * kGiB);
    o << "<line x1=\"" << num(px) << "\" y1=\"" << top << "\" x2=\"" << num(px) << "\" y2=\"" << H - bottom
      << "\" stroke=\"#eee\"/><text x=\"" << num(px) << "\" y=\"" << H - bottom + 16
      << "\" text-anchor=\"middle\">" << num(t) << "</text>\n";
  }
  for (double t = std::ceil(y0 / ys) * ys; t <= y1 + 1e-9; t += ys) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ys < 0.1 ? "%.2f" : "%.1f", t);
    const double py = Y(t);
    o << "<line x1=\"" << left << "\" y1=\"" << num(py) << "\" x2=\"" << W - right << "\" y2=\"" << num(py)
      << "\" stroke=\"#eee\"/><text x=\"" << left - 6 << "\" y=\"" << num(py + 4) << "\" text-anchor=\"end\">" << buf
      << "</text>\n";
  }
  o << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 18
    << "\" text-anchor=\"middle\">predicted peak VRAM (GiB)</text>\n";
  o << "<text transform=\"translate(18," << (top + H - bottom) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">predicted seconds per step</text>\n";
  if (plot.limit_bytes > 0) {
    const double px = X(plot.limit_bytes);
    o << "<line x1=\"" << num(px) << "\" y1=\"" << top << "\" x2=\"" << num(px) << "\" y2=\"" << H - bottom
      << "\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/><text x=\"" << num(px - 4) << "\" y=\"" << top + 12
      << "\" text-anchor=\"end\" fill=\"#c00\">usable − headroom</text>\n";
  }
  for (const auto& p : plot.uniform)
    o << "<circle cx=\"" << num(X(p.peak_vram_bytes)) << "\" cy=\"" << num(Y(p.step_time_s))
      << "\" r=\"3\" fill=\"#999\" fill-opacity=\"0.6\"/>\n";
  if (!plot.front.points.empty()) {
    o << "<polyline fill=\"none\" stroke=\"#1f6fb4\" stroke-width=\"2\" points=\"";
    for (const auto& p : plot.front.points) o << num(X(p.peak_vram_bytes)) << "," << num(Y(p.step_time_s)) << " ";
    o << "\"/>\n";
    for (const auto& p : plot.front.points)
      o << "<circle cx=\"" << num(X(p.peak_vram_bytes)) << "\" cy=\"" << num(Y(p.step_time_s))
        << "\" r=\"3.5\" fill=\"#1f6fb4\"/>\n";
    if (plot.front.knee >= 0) {
      const auto& k = plot.front.points[plot.front.knee];
      o << "<circle cx=\"" << num(X(k.peak_vram_bytes)) << "\" cy=\"" << num(Y(k.step_time_s))
        << "\" r=\"8\" fill=\"none\" stroke=\"#1f6fb4\" stroke-width=\"2\"/><text x=\"" << num(X(k.peak_vram_bytes) + 10)
        << "\" y=\"" << num(Y(k.step_time_s) - 10) << "\" fill=\"#1f6fb4\">knee</text>\n";
    }
  }
  const char* colors[] = {"#e67e00", "#1a9850", "#7b3294", "#333"};
  for (std::size_t i = 0; i < plot.marked.size(); ++i) {
    const auto& p = plot.marked[i];
    const char* c = colors[std::min<std::size_t>(i, 3)];
    const double px = X(p.peak_vram_bytes), py = Y(p.step_time_s);
    if (i == 0)
      o << "<rect x=\"" << num(px - 6) << "\" y=\"" << num(py - 6) << "\" width=\"12\" height=\"12\" fill=\"" << c
        << "\"/>\n";
    else
      o << "<polygon points=\"" << num(px) << "," << num(py - 8) << " " << num(px + 8) << "," << num(py) << " "
        << num(px) << "," << num(py + 8) << " " << num(px - 8) << "," << num(py) << "\" fill=\"" << c << "\"/>\n";
  }
  // legend
  double ly = top + 8;
  const double lx = W - right - 250;
  o << "<g font-size=\"12\">";
  o << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 18 << "\" y2=\"" << ly
    << "\" stroke=\"#1f6fb4\" stroke-width=\"2\"/><text x=\"" << lx + 24 << "\" y=\"" << ly + 4
    << "\">optimal per-block plans (Pareto front)</text>";
  ly += 18;
  o << "<circle cx=\"" << lx + 9 << "\" cy=\"" << ly << "\" r=\"3\" fill=\"#999\"/><text x=\"" << lx + 24 << "\" y=\""
    << ly + 4 << "\">trainer's schedules</text>";
  for (std::size_t i = 0; i < plot.marked.size(); ++i) {
    ly += 18;
    o << "<rect x=\"" << lx + 4 << "\" y=\"" << ly - 5 << "\" width=\"10\" height=\"10\" fill=\""
      << colors[std::min<std::size_t>(i, 3)] << "\"/><text x=\"" << lx + 24 << "\" y=\"" << ly + 4 << "\">"
      << escape(plot.marked[i].label) << "</text>";
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

}  // namespace segadvise
