// Multi-GPU keys of a SimpleTuner config and an accelerate YAML (multi_gpu_config.hpp).
#include "segadvise/trainers/multi_gpu_config.hpp"

#include "segadvise/trainers/simpletuner_reader.hpp"

#include <yaml-cpp/yaml.h>

#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

namespace {

using nlohmann::ordered_json;

// a key as written, with or without the leading `--` of a command-line style config
const ordered_json* key(const ordered_json& raw, const std::string& k) {
  for (const std::string& name : {k, "--" + k}) {
    auto it = raw.find(name);
    if (it != raw.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::string where(const std::string& path, const std::string& k) { return path + ": " + k; }

bool flag(const ordered_json& raw, const std::string& path, const std::string& k, bool def) {
  const ordered_json* v = key(raw, k);
  if (!v) return def;
  if (const std::optional<bool> b = config_bool(*v)) return *b;  // as every other key of the config
  throw InputError(where(path, k) + ": expected true or false, got " + brief_text(v->dump()));
}

int integer(const ordered_json& raw, const std::string& path, const std::string& k, int def, int lo, int hi) {
  const ordered_json* v = key(raw, k);
  if (!v) return def;
  if (v->is_string()) return static_cast<int>(parse_integer_text(v->get<std::string>(), where(path, k), lo, hi));
  return static_cast<int>(checked_integer(*v, where(path, k), lo, hi));
}

std::string text(const ordered_json& raw, const std::string& k) {
  const ordered_json* v = key(raw, k);
  return v && v->is_string() ? v->get<std::string>() : "";
}

void read_fsdp(const ordered_json& raw, const std::string& path, TrainerRead& r) {
  MultiGpuSetup& m = r.setup.multi_gpu;
  if (!flag(raw, path, "fsdp_enable", false)) return;
  const int version = integer(raw, path, "fsdp_version", 2, 1, 2);
  m.strategy = Strategy::fsdp2;
  if (version == 1) {
    r.warnings.push_back(where(path, "fsdp_version") + " 1 is deprecated (a warning in the trainer); sized as FSDP2 sharding");
    if (integer(raw, path, "context_parallel_size", 1, 1, 1 << 16) > 1)
      r.rejections.push_back("FSDP v1 with context_parallel_size > 1 raises ValueError (training/context_parallel.py:70-75)");
  }
  m.reshard_after_forward = flag(raw, path, "fsdp_reshard_after_forward", true);
  m.fsdp_cpu_offload = flag(raw, path, "fsdp_cpu_offload", false);
  if (key(raw, "fsdp_limit_all_gathers"))
    r.warnings.push_back(where(path, "fsdp_limit_all_gathers") + " has no effect under FSDP2 (accelerate passes it only to FSDP1)");
  if (flag(raw, path, "fsdp_activation_checkpointing", false)) {
    m.fsdp_activation_checkpointing = true;
    r.schedule = Schedule{};  // every wrapped block under checkpoint_wrapper: full recompute per block
    r.warnings.push_back(where(path, "fsdp_activation_checkpointing") +
                         ": the trainer sets gradient_checkpointing=False and accelerate checkpoints every wrapped "
                         "block (trainer.py:1308-1312): interval, stride and offload_attention no longer apply; "
                         "sized as per-block checkpointing");
  }
  if (m.fsdp_cpu_offload) {
    const bool release = flag(raw, path, "optimizer_release_gradients", false) && r.setup.optimizer.rfind("optimi-", 0) == 0;
    if (release || text(raw, "optimizer_cpu_offload_method") == "torchao")
      r.rejections.push_back("fsdp_cpu_offload with optimizer_release_gradients (optimi) or optimizer_cpu_offload_method "
                             "torchao raises an error (configuration/cmd_args.py:1290-1304)");
  }
}

// deepspeed_config: a JSON object, a JSON text, or a path to a JSON file (trainer.py:1896-1935)
ordered_json deepspeed_json(const ordered_json& v, const std::string& path, const std::string& cwd,
                            std::vector<std::string>& warnings) {
  if (v.is_object()) return v;
  if (!v.is_string()) throw InputError(where(path, "deepspeed_config") + ": expected JSON or a file path, got " + brief_text(v.dump()));
  const std::string s = v.get<std::string>();
  if (!s.empty() && s.front() == '{') return parse_ordered_json_text(s, where(path, "deepspeed_config"));
  return read_json_file(resolve_config_path(s, "deepspeed_config", path, cwd, &warnings), "deepspeed_config");
}

void read_deepspeed_json(const ordered_json& ds, const std::string& origin, MultiGpuSetup& m) {
  const ordered_json* z = ds.contains("zero_optimization") ? &ds["zero_optimization"] : nullptr;
  const int stage = z && z->contains("stage") ? static_cast<int>(checked_integer((*z)["stage"], origin + ": zero_optimization.stage", 0, 3))
                    : ds.contains("zero_stage") ? static_cast<int>(checked_integer(ds["zero_stage"], origin + ": zero_stage", 0, 3))
                                                : 0;
  m.strategy = stage == 1 ? Strategy::zero1 : stage == 2 ? Strategy::zero2 : stage == 3 ? Strategy::zero3 : Strategy::ddp;
  auto device = [&](const char* k) {
    if (!z || !z->contains(k) || !(*z)[k].is_object() || !(*z)[k].contains("device")) return std::string("none");
    return (*z)[k]["device"].is_string() ? (*z)[k]["device"].get<std::string>() : std::string("none");
  };
  m.offload_optimizer = device("offload_optimizer") == "cpu" || device("offload_optimizer") == "nvme";
  m.offload_param = device("offload_param") == "cpu" || device("offload_param") == "nvme";
  // a GA in the DeepSpeed config overrides the trainer's (training/error_handling.py:21-26)
  if (ds.contains("gradient_accumulation_steps") && ds["gradient_accumulation_steps"].is_number_integer())
    m.grad_accumulation = static_cast<int>(checked_integer(ds["gradient_accumulation_steps"], origin + ": gradient_accumulation_steps", 1, 1 << 16));
}

void read_context_parallel(const ordered_json& raw, const std::string& path, TrainerRead& r) {
  MultiGpuSetup& m = r.setup.multi_gpu;
  m.context_parallel = integer(raw, path, "context_parallel_size", 1, 1, 1 << 16);
  const std::string comm = text(raw, "context_parallel_comm_strategy");
  if (!comm.empty()) m.cp_comm = parse_cp_comm(comm, where(path, "context_parallel_comm_strategy"));
}

}  // namespace

namespace {

// Typed reads of accelerate YAML keys: a wrong type names the file, the line, the key, the value and
// what was expected (yaml-cpp's own "bad conversion" named none of them).
struct AccelerateYaml {
  std::string path;
  std::string at(const YAML::Node& n, const std::string& key) const {
    return "accelerate config '" + brief_text(path) + "':" + std::to_string(n.Mark().line + 1) + ": " + key;
  }
  [[noreturn]] void wrong(const YAML::Node& n, const std::string& key, const std::string& expected) const {
    const std::string got = n.IsScalar() ? "'" + brief_text(n.Scalar()) + "'" : n.IsMap() ? "a mapping" : "a list";
    throw InputError(at(n, key) + ": expected " + expected + ", got " + got);
  }
  YAML::Node get(const YAML::Node& parent, const char* key) const {
    if (!parent || parent.IsNull() || !parent.IsMap()) return YAML::Node();
    const YAML::Node v = parent[key];
    return v && !v.IsNull() ? v : YAML::Node();
  }
  std::string text(const YAML::Node& parent, const char* key, const std::string& def, const std::string& expected) const {
    const YAML::Node v = get(parent, key);
    if (!v || v.IsNull()) return def;
    if (!v.IsScalar()) wrong(v, key, expected);
    return v.Scalar();
  }
  int integer(const YAML::Node& parent, const char* key, int def, int lo, int hi) const {
    const YAML::Node v = get(parent, key);
    if (!v || v.IsNull()) return def;
    if (!v.IsScalar() || !is_int_text(v.Scalar())) wrong(v, key, "an integer");
    return static_cast<int>(parse_integer_text(v.Scalar(), at(v, key), lo, hi));
  }
  // YAML 1.1 booleans as PyYAML reads them
  bool boolean(const YAML::Node& parent, const char* key, bool def) const {
    const YAML::Node v = get(parent, key);
    if (!v || v.IsNull()) return def;
    const std::string s = v.IsScalar() ? lower(v.Scalar()) : "";
    if (s == "true" || s == "yes" || s == "on" || s == "y") return true;
    if (s == "false" || s == "no" || s == "off" || s == "n") return false;
    wrong(v, key, "true or false");
  }
  YAML::Node map(const YAML::Node& parent, const char* key) const {
    const YAML::Node v = get(parent, key);
    if (v && !v.IsNull() && !v.IsMap()) wrong(v, key, "a mapping");
    return v;
  }
};

}  // namespace

MultiGpuSetup read_accelerate_yaml(const std::string& path, MultiGpuSetup m, std::vector<std::string>& warnings) {
  const YAML::Node y = load_yaml_file(path, "accelerate config");
  const AccelerateYaml a{path};
  if (y && !y.IsNull() && !y.IsMap())
    throw InputError("accelerate config '" + brief_text(path) + "': expected a mapping of keys at the top, got " +
                     (y.IsScalar() ? "'" + brief_text(y.Scalar()) + "'" : std::string("a list")));
  const std::string type = a.text(y, "distributed_type", "NO", "a distributed type (NO, MULTI_GPU, FSDP, DEEPSPEED)");
  m.nodes = std::max(1, a.integer(y, "num_machines", 1, 0, kMaxNodes));
  // accelerate's num_processes counts every machine's processes
  const int total = std::max(1, a.integer(y, "num_processes", 1, 0, kMaxGpusPerNode));
  if (total % m.nodes != 0) throw InputError(path + ": num_processes " + std::to_string(total) + " is not a multiple of num_machines " + std::to_string(m.nodes));
  m.gpus_per_node = total / m.nodes;
  if (type == "MULTI_GPU") m.strategy = Strategy::ddp;
  if (type == "FSDP") {
    m.strategy = Strategy::fsdp2;
    const YAML::Node f = a.map(y, "fsdp_config");
    m.fsdp_cpu_offload = a.boolean(f, "fsdp_offload_params", m.fsdp_cpu_offload);
    const std::string reshard = lower(a.text(f, "fsdp_reshard_after_forward", m.reshard_after_forward ? "true" : "false",
                                                      "true, false or a sharding strategy"));
    m.reshard_after_forward = reshard != "false" && reshard != "no" && reshard != "off";
    warnings.push_back(path + ": FSDP in the accelerate config; SimpleTuner builds its own FSDP plugin from fsdp_* keys");
  }
  if (type == "DEEPSPEED") {
    const YAML::Node d = a.map(y, "deepspeed_config");
    const int stage = a.integer(d, "zero_stage", 0, 0, 3);
    m.strategy = stage == 1 ? Strategy::zero1 : stage == 2 ? Strategy::zero2 : stage == 3 ? Strategy::zero3 : Strategy::ddp;
    auto dev = [&](const char* k) { return a.text(d, k, "none", "a device (none, cpu, nvme)"); };
    m.offload_optimizer = dev("offload_optimizer_device") == "cpu" || dev("offload_optimizer_device") == "nvme";
    m.offload_param = dev("offload_param_device") == "cpu" || dev("offload_param_device") == "nvme";
    m.grad_accumulation = std::max(1, a.integer(d, "gradient_accumulation_steps", m.grad_accumulation, 0, 1 << 16));
  }
  if (m.world() > 1 && m.strategy == Strategy::single) m.strategy = Strategy::ddp;
  return m;
}

void read_multi_gpu_keys(TrainerRead& r, const std::string& accelerate_yaml, const std::string& cwd) {
  const ordered_json& raw = r.raw;
  const std::string& path = r.config_path;
  MultiGpuSetup& m = r.setup.multi_gpu;
  m.gpus_per_node = integer(raw, path, "num_processes", 1, 1, kMaxGpusPerNode);
  m.nodes = integer(raw, path, "num_machines", 1, 1, kMaxNodes);
  if (static_cast<long long>(m.gpus_per_node) * m.nodes > kMaxWorld)
    throw InputError(path + ": num_processes " + std::to_string(m.gpus_per_node) + " x num_machines " +
                     std::to_string(m.nodes) + " is more than the " + std::to_string(kMaxWorld) + " GPUs a prediction covers");
  m.grad_accumulation = integer(raw, path, "gradient_accumulation_steps", 1, 1, 1 << 16);
  if (m.world() > 1) m.strategy = Strategy::ddp;  // accelerate MULTI_GPU without a plugin
  read_context_parallel(raw, path, r);
  read_fsdp(raw, path, r);
  if (const ordered_json* ds = key(raw, "deepspeed_config")) {
    if (m.strategy == Strategy::fsdp2)
      r.rejections.push_back("FSDP together with a DeepSpeed config raises ValueError (configuration/cmd_args.py:1229-1230)");
    else
      read_deepspeed_json(deepspeed_json(*ds, path, cwd, r.warnings), where(path, "deepspeed_config"), m);
  }
  std::string yaml = accelerate_yaml;
  if (yaml.empty() && !text(raw, "accelerate_config").empty())
    yaml = resolve_config_path(text(raw, "accelerate_config"), "accelerate_config", path, cwd, &r.warnings);
  if (!yaml.empty()) {
    const Strategy from_keys = m.strategy;
    m = read_accelerate_yaml(yaml, m, r.warnings);  // num_processes of the config is then ignored (§1.1)
    if (from_keys == Strategy::fsdp2 || zero_stage(from_keys) > 0) m.strategy = from_keys;  // the trainer's own plugin
  }
  // no process count (accelerate's num_processes is the launcher's): the smallest world that
  // context_parallel_size divides (training/context_parallel.py:61-88) is its own size; --gpus overrides it
  if (m.context_parallel > 1 && m.world() == 1 && !key(raw, "num_processes") && yaml.empty()) {
    m.gpus_per_node = m.context_parallel;
    if (m.strategy == Strategy::single) m.strategy = Strategy::ddp;
    r.setup.notes.push_back("world size " + std::to_string(m.context_parallel) + " taken from context_parallel_size " +
                            std::to_string(m.context_parallel) + " (the smallest it divides; the config leaves the "
                            "process count to the launcher): per-rank figures; --gpus N for another count");
  }
}

}  // namespace segadvise
