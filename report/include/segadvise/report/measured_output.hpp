// How the answers show measurements and ranges: ranges after every figure ("16.4 GiB (90%: 14.8–18.9)"), the
// three-valued verdict, and which measurements moved the prediction and how.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/planner.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp

// "anchored on your run of …" lines for every remembered measurement of `r` (table and markdown output;
// JSON has them in measurements.used[].source).
void print_remembered(std::ostream& out, const AdvisorRequest& r, const std::string& format);

// "16.4 GiB (90%: 14.8–18.9)" / "1.85 s (90%: 1.62–2.20)"; the bare figure when not ranged.
std::string peak_with_range(const Candidate& c);
std::string time_with_range(const Candidate& c, const std::string& unit_suffix = "");  // "/step"
std::string verdict_text(const Candidate& c);  // "fits", "borderline", "does not fit", "unsupported"

void print_measurements(std::ostream& out, const Anchor& a, const TextFormat& fmt);
// "verdict: borderline — peak 16.4 GiB (90%: 14.8–18.9) against 43.2 GiB usable with 1.0 GiB
// headroom; 1.85 s/step (90%: …)" before the breakdown
void print_verdict(std::ostream& out, const Candidate& c, const TextFormat& fmt);
// When nothing fits with confidence but some schedules are borderline: what to measure.
// one borderline candidate's range now and after the suggested measurement (`measured`: its name)
std::string shrink_line(const Candidate& c, const RangeIfMeasured& x, const std::string& measured);
std::string settle_hint(const Candidate& borderline);

}  // namespace segadvise::cli
