#include "segadvise/planner/measurements.hpp"

#include "segadvise/io/json_input.hpp"
#include "segadvise/planner/measured_text.hpp"
#include "segadvise/trainers/log_reader.hpp"

#include <cmath>
#include <cstdio>

namespace segadvise {

namespace {

// a figure in a measurement's source line
std::string num(double x, int decimals) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, x);
  return b;
}

}  // namespace

Measurement measurement_from_oom(const OomMessage& o, const std::string& path, const std::string& schedule,
                                 double gpu_total_bytes) {
  Measurement m = parse_measurement(schedule + ":oom");
  m.source = path + " line " + std::to_string(o.line) + ": out of memory (" + o.phase + ")";
  if (o.tried_to_allocate_bytes) m.source += ", tried to allocate " + num(*o.tried_to_allocate_bytes / kGiB, 2) + " GiB";
  if (o.allocated_by_pytorch_bytes)
    m.source += " with " + num(*o.allocated_by_pytorch_bytes / kGiB, 2) + " GiB allocated";
  // what PyTorch held plus what it asked for: the step needed at least that much
  if (o.tried_to_allocate_bytes && o.allocated_by_pytorch_bytes) {
    m.oom_need_bytes = static_cast<double>(*o.tried_to_allocate_bytes + *o.allocated_by_pytorch_bytes);
    m.text = schedule + ":oom:" + num(m.oom_need_bytes / kGiB, 2);
    m.source += ": at least " + num(m.oom_need_bytes / kGiB, 2) + " GiB needed";
  }
  // PyTorch's total capacity is the device's memory as the driver reports it (a 24 GB card reads
  // 23.5-23.7 GiB, an 80 GB H100 79.1-79.6): within kSameCard of the card predicted for it is that card
  constexpr double kSameCard = 0.05;
  if (o.total_capacity_bytes && gpu_total_bytes > 0 &&
      std::fabs(static_cast<double>(*o.total_capacity_bytes) - gpu_total_bytes) > kSameCard * gpu_total_bytes) {
    m.oom_elsewhere = true;
    m.source += ", on a card of " + num(*o.total_capacity_bytes / kGiB, 2) + " GiB, not this one";
  }
  return m;
}

std::vector<Measurement> parse_measurements(const std::vector<std::string>& texts) {
  std::vector<Measurement> out;
  for (const auto& t : texts) out.push_back(parse_measurement(t));
  return out;
}

Measurement measurement_from_log(const std::string& path, const std::string& schedule, double gpu_total_bytes) {
  if (schedule.empty())
    throw InputError("--measured-from '" + brief_text(path) +
                     "': name the schedule the logged run used with --measured-from-schedule SCHEDULE");
  const LogReport log = read_log_file(path);
  // an OOM while caching, loading, sampling or saving says nothing of the schedule's step: the last one of a
  // training step (or of no known phase) is the measurement
  const OomMessage* oom = nullptr;
  const OomMessage* elsewhere = nullptr;
  for (const OomMessage& o : log.oom) {
    if (o.phase == "training_step" || o.phase == "unknown") oom = &o;
    else elsewhere = &o;
  }
  if (oom) return measurement_from_oom(*oom, path, schedule, gpu_total_bytes);
  const StepReading* step = log.last_training_step();
  long long peak = 0;
  int peak_line = 0;
  std::string peak_note;  // what the reading assumed (a printed "peak memory … GB")
  for (const MemoryReading& r : log.memory) {
    const long long b = r.max_allocated_bytes.value_or(r.allocated_bytes.value_or(0));
    if (b > peak) {
      peak = b;
      peak_line = r.line;
      peak_note = r.note;
    }
  }
  if ((!step || peak <= 0) && elsewhere)
    throw InputError("--measured-from '" + brief_text(path) + "': its out-of-memory message (line " +
                     std::to_string(elsewhere->line) + ") came while " + elsewhere->phase +
                     ", not in a training step, and the log has no step time with a peak: `segadvise check` "
                     "predicts that phase; pass --measured " + schedule + ":SEC:GIB for the step");
  if (!step || peak <= 0)
    throw InputError("--measured-from '" + brief_text(path) + "': the log has no out-of-memory message and " +
                     (!step ? "no training step time" : "no peak allocated memory (torch.cuda.memory_summary)") +
                     "; pass --measured " + schedule + ":SEC:GIB");
  Measurement m = parse_measurement(schedule + ":oom");  // the schedule, checked as --measured checks it
  m.oom = false;
  m.text = schedule + ":" + num(step->sec_per_step, 3) + ":" + num(peak / kGiB, 2);
  m.step_time_s = step->sec_per_step;
  m.peak_vram_bytes = static_cast<double>(peak);
  m.source = path + " line " + std::to_string(step->line) + ": " + num(step->sec_per_step, 3) + " s/step (" +
             (step->label.empty() ? std::string("bar") : step->label) + "), line " + std::to_string(peak_line) + ": peak " +
             num(peak / kGiB, 2) + " GiB allocated" + (peak_note.empty() ? "" : " (" + peak_note + ")");
  return m;
}

bool is_remembered(const Measurement& m) { return m.source.rfind(kRememberedRunPrefix, 0) == 0; }

}  // namespace segadvise
