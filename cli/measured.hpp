// `--measured SCHEDULE:SEC:GIB` / `SCHEDULE:oom` and `--ranges FILE` (flags: common.hpp) on advise,
// predict and check, and how the answers show them: ranges after every figure ("16.4 GiB (90%: 14.8–18.9)"), the
// three-valued verdict, and which measurements moved the prediction and how.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/planner.hpp"
#include "segadvise/trainers/log_reader.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp

// Parses every --measured (InputError naming the one that is malformed).
std::vector<Measurement> parse_measurements(const std::vector<std::string>& texts);
// --measured-from LOG: the log's last out-of-memory message (the schedule ran out of memory), else its last
// training step's sec/step with the largest peak allocated memory it reports (torch.cuda.memory_summary's
// peak, else allocated). `schedule` names the schedule the run used ("" : InputError asking for
// --measured-from-schedule); InputError when the log has neither.
// `gpu_total_bytes` is the card predicted for: an OOM message whose total capacity differs from it by more
// than 5% happened on another card, and proves only its need (Measurement::oom_elsewhere).
Measurement measurement_from_log(const std::string& path, const std::string& schedule, double gpu_total_bytes);
// One out-of-memory message of `path` as a measurement of `schedule`: SCHEDULE:oom, with its need
// (allocated by PyTorch + tried to allocate) when the message gives both.
Measurement measurement_from_oom(const OomMessage& o, const std::string& path, const std::string& schedule,
                                 double gpu_total_bytes);

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
