// Measured runs from what the user hands segadvise: every `--measured SCHEDULE:SEC:GIB` / `SCHEDULE:oom`
// (measured_text.hpp's grammar) and `--measured-from LOG` (the trainer's log, log_reader.hpp).
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/trainers/log_reader.hpp"

namespace segadvise {

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

// A measurement kept by `segadvise runs add` and anchored on again: its source starts with this.
inline constexpr const char* kRememberedRunPrefix = "your run of ";
bool is_remembered(const Measurement& m);

}  // namespace segadvise
