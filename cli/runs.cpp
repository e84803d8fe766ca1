#include "runs.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "segadvise/io/json_input.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/planner/measured_text.hpp"
#include "segadvise/planner/measurements.hpp"

namespace segadvise::cli {

namespace {

constexpr const char* kFormatTag = "segadvise runs 1";

std::string num(double x, int decimals) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, x);
  return b;
}

InputError bad(const std::string& path, const std::string& field, const std::string& why) {
  return InputError("runs file '" + brief_text(path) + "': field '" + field + "' " + why +
                    " (segadvise runs remove --all starts it afresh)");
}

const nlohmann::json& field(const nlohmann::json& j, const std::string& path, const std::string& where,
                            const char* key, bool (nlohmann::json::*is)() const noexcept) {
  if (!j.contains(key) || !(j[key].*is)()) throw bad(path, where + key, "is missing or of the wrong type");
  return j[key];
}

nlohmann::json measurement_json(const Measurement& m) {
  nlohmann::json j = {{"text", m.text}, {"schedule", m.schedule.name()}, {"oom", m.oom}, {"source", m.source}};
  if (m.oom) {
    j["oom_need_gib"] = m.oom_need_bytes / kGiB;
    j["oom_elsewhere"] = m.oom_elsewhere;
  } else {
    j["sec_per_step"] = m.step_time_s;
    j["peak_vram_gib"] = m.peak_vram_bytes / kGiB;
  }
  return j;
}

Measurement measurement_from_json(const nlohmann::json& j, const std::string& path, const std::string& where) {
  const std::string schedule = field(j, path, where, "schedule", &nlohmann::json::is_string).get<std::string>();
  const bool oom = field(j, path, where, "oom", &nlohmann::json::is_boolean).get<bool>();
  Measurement m;
  try {
    m = parse_measurement(schedule + ":oom");  // the schedule, checked as --measured checks it
  } catch (const InputError& e) {
    throw bad(path, where + "schedule", std::string("is not a schedule: ") + e.what());
  }
  m.text = field(j, path, where, "text", &nlohmann::json::is_string).get<std::string>();
  m.source = field(j, path, where, "source", &nlohmann::json::is_string).get<std::string>();
  auto positive = [&](const char* key, bool zero_ok) {
    const double v = field(j, path, where, key, &nlohmann::json::is_number).get<double>();
    if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0)) throw bad(path, where + key, "must be a positive number");
    return v;
  };
  m.oom = oom;
  if (oom) {
    m.oom_need_bytes = positive("oom_need_gib", true) * kGiB;
    m.oom_elsewhere = field(j, path, where, "oom_elsewhere", &nlohmann::json::is_boolean).get<bool>();
  } else {
    m.step_time_s = positive("sec_per_step", false);
    m.peak_vram_bytes = positive("peak_vram_gib", false) * kGiB;
  }
  return m;
}

}  // namespace

std::string runs_file() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/segadvise/runs.json";
  const char* home = std::getenv("HOME");
  if (home && home[0] != '\0') return std::string(home) + "/.cache/segadvise/runs.json";
  return "";
}

std::string setup_key(const AdvisorRequest& r) {
  nlohmann::json s = to_json(r.setup);
  s.erase("notes");
  return (r.family ? r.family->name : std::string()) + "|" + r.gpu.id + "|" + num(r.gpu.total_bytes / kGiB, 2) +
         "|" + s.dump();
}

std::vector<RememberedRun> load_runs(const std::string& path) {
  std::vector<RememberedRun> out;
  if (path.empty()) return out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  const std::string text = read_input_file(path, "runs file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError("runs file '" + brief_text(path) + "': not JSON (" + e.what() +
                     "; segadvise runs remove --all starts it afresh)");
  }
  if (!j.is_object() || j.value("format", "") != kFormatTag) throw bad(path, "format", "is not '" + std::string(kFormatTag) + "'");
  const nlohmann::json& runs = field(j, path, "", "runs", &nlohmann::json::is_array);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string where = "runs[" + std::to_string(i) + "].";
    const nlohmann::json& e = runs[i];
    if (!e.is_object()) throw bad(path, "runs[" + std::to_string(i) + "]", "is not an object");
    RememberedRun r;
    const nlohmann::json& id = field(e, path, where, "id", &nlohmann::json::is_number_integer);
    if (id.get<long long>() < 1 || id.get<long long>() > 1000000000) throw bad(path, where + "id", "must be 1..1e9");
    r.id = id.get<int>();
    r.added = field(e, path, where, "added", &nlohmann::json::is_string).get<std::string>();
    r.log = field(e, path, where, "log", &nlohmann::json::is_string).get<std::string>();
    r.config = field(e, path, where, "config", &nlohmann::json::is_string).get<std::string>();
    r.family = field(e, path, where, "family", &nlohmann::json::is_string).get<std::string>();
    r.gpu = field(e, path, where, "gpu", &nlohmann::json::is_string).get<std::string>();
    r.setup_key = field(e, path, where, "setup_key", &nlohmann::json::is_string).get<std::string>();
    r.setup = field(e, path, where, "setup", &nlohmann::json::is_object);
    r.measurement = measurement_from_json(field(e, path, where, "measurement", &nlohmann::json::is_object), path,
                                          where + "measurement.");
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json run_json(const RememberedRun& r) {
  return {{"id", r.id},         {"added", r.added}, {"log", r.log},     {"config", r.config},
          {"family", r.family}, {"gpu", r.gpu},     {"setup", r.setup}};
}

void save_runs(const std::string& path, const std::vector<RememberedRun>& runs) {
  if (path.empty()) throw InputError("runs: no cache directory (set XDG_CACHE_HOME or HOME)");
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) throw InputError("runs: cannot create '" + std::filesystem::path(path).parent_path().string() + "': " + ec.message());
  nlohmann::json arr = nlohmann::json::array();
  for (const RememberedRun& r : runs) {
    nlohmann::json j = run_json(r);
    j["setup_key"] = r.setup_key;
    j["measurement"] = measurement_json(r.measurement);
    arr.push_back(std::move(j));
  }
  write_file_atomically(path, nlohmann::json({{"format", kFormatTag}, {"runs", arr}}).dump(1) + "\n");
}


std::vector<Measurement> remembered_for(const AdvisorRequest& r, const std::string& path) {
  std::vector<Measurement> out;
  const std::string key = setup_key(r);
  for (const RememberedRun& run : load_runs(path)) {
    if (run.setup_key != key) continue;
    bool given = false;
    for (const Measurement& m : r.measured) given = given || m.schedule.name() == run.measurement.schedule.name();
    for (const Measurement& m : out) given = given || m.schedule.name() == run.measurement.schedule.name();
    if (given) continue;  // what the user passes wins; of two remembered runs of one schedule, the first kept
    Measurement m = run.measurement;
    m.source = kRememberedRunPrefix + run.added + " (segadvise runs #" + std::to_string(run.id) + "): " + m.source;
    out.push_back(std::move(m));
  }
  return out;
}


}  // namespace segadvise::cli
