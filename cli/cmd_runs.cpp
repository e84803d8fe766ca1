// segadvise runs add LOG --config CONFIG --gpu G | runs list | runs remove ID... | --all: the runs advise,
// predict and check anchor on (runs.hpp). A config is read as `check` reads it, so the setup kept is the one
// check of that config compares.
#include <ctime>
#include <filesystem>
#include <iostream>

#include "check_options.hpp"
#include "commands.hpp"
#include "segadvise/planner/dataset_check.hpp"
#include "segadvise/report/dataset_output.hpp"
#include "segadvise/planner/measurements.hpp"
#include "segadvise/report/measured_output.hpp"
#include "segadvise/report/output.hpp"
#include "runs.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::cli {

namespace {

std::string absolute(const std::string& p) {
  std::error_code ec;
  const auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M UTC", &tm);
  return b;
}

struct AddOptions {
  std::string log;
  CheckOptions check;  // the config and the flags check would read it with
  std::string schedule;  // --schedule: the one the logged run used (default: the config's)
};

void add_run(const AddOptions& o) {
  TrainerReadOptions ro = o.check.read;
  ro.trainer = o.check.trainer;
  ro.model = o.check.flags.model;
  const TrainerRead tr = read_trainer_config(o.check.config, ro);
  const Family* family = tr.family;
  TrainingSetup setup = tr.setup;
  const Schedule& schedule = tr.schedule;
  // the setup check of this config compares: its dataset's largest bucket where the dataset is here
  if (auto d = read_config_datasets(tr, "", o.check.read.cwd)) {
    SetupFlags flags = o.check.flags;
    flags.model.clear();
    flags.no_runs = true;
    predict_buckets(*d, make_request(*family, setup, flags), schedule);
    apply_largest_bucket(setup, *d);
  }
  SetupFlags flags = o.check.flags;
  flags.model.clear();
  flags.no_runs = true;
  const AdvisorRequest r = make_request(*family, setup, flags);
  const std::string path = runs_file();
  std::vector<RememberedRun> runs = load_runs(path);
  RememberedRun run;
  for (const RememberedRun& x : runs) run.id = std::max(run.id, x.id);
  ++run.id;
  run.added = now_utc();
  run.log = absolute(o.log);
  run.config = absolute(o.check.config);
  run.family = family->name;
  run.gpu = r.gpu.id;
  run.setup_key = setup_key(r);
  run.setup = to_json(r.setup);
  run.setup.erase("notes");
  run.measurement =
      measurement_from_log(o.log, o.schedule.empty() ? schedule.name() : o.schedule, r.gpu.total_bytes);
  run.measurement.source = brief_text(run.log) + run.measurement.source.substr(o.log.size());
  runs.push_back(run);
  save_runs(path, runs);
  std::cout << "kept run #" << run.id << " in " << path << ": " << run.measurement.schedule.name() << " of "
            << brief_text(run.config) << " on " << r.gpu.name << "\n  read from " << run.measurement.source
            << "\nadvise, predict and check of this setup on this card now anchor on it (--no-runs leaves it out)\n";
}

void list_runs(const std::string& format) {
  const std::string path = runs_file();
  const std::vector<RememberedRun> runs = load_runs(path);
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const RememberedRun& r : runs) {
      nlohmann::json j = run_json(r);
      j["measurement"] = r.measurement.text;
      j["source"] = r.measurement.source;
      arr.push_back(std::move(j));
    }
    std::cout << nlohmann::json({{"file", path}, {"runs", arr}}).dump(2) << "\n";
    return;
  }
  if (runs.empty()) {
    std::cout << "no runs kept (" << (path.empty() ? "no cache directory" : path)
              << "); segadvise runs add LOG --config CONFIG --gpu GPU keeps one\n";
    return;
  }
  std::cout << "runs kept in " << path << ":\n";
  Table t({"id", "added", "family", "gpu", "measurement", "config"});
  for (const RememberedRun& r : runs)
    t.add({std::to_string(r.id), r.added, r.family, r.gpu, r.measurement.text, brief_text(r.config)});
  t.print(std::cout, false);
}

void remove_runs(const std::vector<int>& ids, bool all) {
  const std::string path = runs_file();
  if (all) {  // without reading it: a file that no longer reads is started afresh
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec)) {
      std::cout << "no runs kept\n";
      return;
    }
    save_runs(path, {});
    std::cout << "removed every run; the file is empty: " << path << "\n";
    return;
  }
  std::vector<RememberedRun> runs = load_runs(path);
  if (ids.empty()) throw InputError("runs remove: name the runs (their ids: segadvise runs list) or --all");
  std::vector<RememberedRun> kept;
  for (int id : ids) {
    bool found = false;
    for (const RememberedRun& r : runs) found = found || r.id == id;
    if (!found) throw InputError("runs remove: no run #" + std::to_string(id) + " in '" + path + "' (segadvise runs list)");
  }
  for (const RememberedRun& r : runs) {
    bool drop = false;
    for (int id : ids) drop = drop || r.id == id;
    if (!drop) kept.push_back(r);
  }
  save_runs(path, kept);
  std::cout << "removed " << runs.size() - kept.size() << " run(s); " << kept.size() << " kept in " << path << "\n";
}

}  // namespace

void setup_runs(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("runs", "runs remembered for anchoring: add LOG --config CONFIG, list, remove");
  cmd->require_subcommand(1);

  auto* add = cmd->add_subcommand("add", "keep what a trainer's log measured for a config's setup (the user's cache)");
  auto o = std::make_shared<AddOptions>();
  auto aspect = std::make_shared<std::string>();
  add->add_option("log", o->log, "the trainer's log of the run (see segadvise read-log)")->required();
  add->add_option("--config", o->check.config, "the config the run used, as segadvise check reads it")
      ->required()
      ->check(CLI::ExistingFile);
  add->add_option("--trainer", o->check.trainer, "the config's trainer (default: detected)");
  add->add_option("--model,-m", o->check.flags.model, "family, where the config does not name it");
  add->add_option("--gpu,-g", o->check.flags.gpu, "the GPU it ran on: l40s, h100, … (segadvise list gpus)");
  add_vram_flag(add, o->check.flags);
  add->add_option("--data-backend", o->check.read.data_backend_override, "data-backend JSON, as given to check");
  add->add_option("--aspect", *aspect, "aspect W:H of the source media, as given to check");
  add->add_option("--schedule", o->schedule, "the schedule the run used (default: the config's own)");
  add_multi_gpu_flags(add, o->check.flags);
  add->callback([o, aspect, &exit_code] {
    AddOptions opts = *o;
    if (!aspect->empty()) opts.check.read.source_aspect = parse_aspect(*aspect);
    add_run(opts);
    exit_code = kOk;
  });

  auto* list = cmd->add_subcommand("list", "the runs kept, with their ids");
  auto format = std::make_shared<std::string>("table");
  list->add_option("--format", *format, "table | json")->check(CLI::IsMember({"table", "json"}));
  list->callback([format, &exit_code] {
    list_runs(*format);
    exit_code = kOk;
  });

  auto* remove = cmd->add_subcommand("remove", "forget runs by id (segadvise runs list), or --all");
  auto ids = std::make_shared<std::vector<int>>();
  auto all = std::make_shared<bool>(false);
  remove->add_option("id", *ids, "run ids")->check(CLI::PositiveNumber);
  remove->add_flag("--all", *all, "forget every run");
  remove->callback([ids, all, &exit_code] {
    remove_runs(*ids, *all);
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
