// Runs remembered, visibly: `segadvise runs add LOG --config CONFIG` keeps what the log measured for the
// config's setup in the user's cache ($XDG_CACHE_HOME/segadvise/runs.json, else ~/.cache/segadvise/runs.json);
// advise, predict and check of the same setup on the same card then anchor on it and say so in their first
// lines; --no-runs leaves the remembered runs out. Nothing is written but by `runs add` and `runs remove`.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/measurements.hpp"

namespace segadvise::cli {

// The file runs live in; "" when neither XDG_CACHE_HOME (absolute, as the XDG spec asks) nor HOME is set.
std::string runs_file();

struct RememberedRun {
  int id = 0;          // stable: never reused within a file
  std::string added;   // UTC, "2026-12-01 23:05 UTC"
  std::string log;     // absolute path of the log it was read from
  std::string config;  // absolute path of the config
  std::string family;  // Family::name
  std::string gpu;     // GpuSpec::id
  std::string setup_key;  // what "the same setup" compares (setup_key())
  nlohmann::json setup;   // the setup as JSON (shown by `runs list --format json`)
  Measurement measurement;
};

// The setup a measurement belongs to: the family, the training setup (its JSON without notes) and the card
// (its id and memory). Two requests with the same key are the same run as far as anchoring goes.
std::string setup_key(const AdvisorRequest& r);

// Every run of the file (none when it does not exist); InputError naming the file and field when malformed.
std::vector<RememberedRun> load_runs(const std::string& path);
// The fields the file's entry of a run and `runs list --format json` share: id, added, log, config,
// family, gpu, setup (the file adds setup_key and the measurement as JSON; the listing its text and source).
nlohmann::json run_json(const RememberedRun& r);
// Writes the runs atomically (a temporary file renamed over it), creating the directory.
void save_runs(const std::string& path, const std::vector<RememberedRun>& runs);

// The remembered runs of `r`'s setup whose schedule no measurement of `r` already names (what the user
// passes wins), as measurements whose source starts "your run of ".
std::vector<Measurement> remembered_for(const AdvisorRequest& r, const std::string& path);

}  // namespace segadvise::cli
