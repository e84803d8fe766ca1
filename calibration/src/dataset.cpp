#include "segadvise/calibration/dataset.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include <set>
#include <sstream>

namespace segadvise {


namespace {

using nlohmann::json;

const std::vector<std::string> kStatuses = {"ok", "oom", "failed", "unsupported", "not_run"};
const std::vector<std::string> kFields = {
    "id",         "family",    "example",  "model",       "gpu",        "width",          "height",
    "frames",     "batch",     "lora_type", "lora_rank",  "optimizer",  "ramtorch",       "mixed_precision",
    "precision",  "mode",      "backend",  "variant",     "status",     "sec_per_step",   "peak_gib",
    "oom_at_gib", "resolution", "note",   "family_id",  "recorded_shape", "text_tokens", "regional_compile"};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One row as string-or-number cells; JSON rows and CSV rows go through the same checks.
struct Row {
  std::string where;  // "file: run 12"
  std::map<std::string, json> cells;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(where + ": field '" + field + "' " + what);
  }
  bool has(const std::string& f) const {
    auto it = cells.find(f);
    return it != cells.end() && !it->second.is_null() && !(it->second.is_string() && it->second.get<std::string>().empty());
  }
  std::string str(const std::string& f, const std::string& def = "", bool required = false) const {
    if (!has(f)) {
      if (required) fail(f, "is missing");
      return def;
    }
    const json& v = cells.at(f);
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    fail(f, "must be a string, got " + brief(v));
  }
  // times and sizes: finite and >= 0 ("inf", "NaN" and 1e400 are errors)
  double num(const std::string& f, double def = 0) const {
    if (!has(f)) return def;
    return checked_number(cells.at(f), where + ": field '" + f + "'", 0, 1e9, NumericText::Accept);
  }
  int integer(const std::string& f, int def = 0, int hi = std::numeric_limits<int>::max(), int lo = 0) const {
    if (!has(f)) return def;
    return static_cast<int>(checked_integer(cells.at(f), where + ": field '" + f + "'", lo, hi, NumericText::Accept));
  }
  int boolean(const std::string& f) const {
    if (!has(f)) return -1;
    const json& v = cells.at(f);
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_string()) {
      std::string s = v.get<std::string>();
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
      if (s == "true" || s == "1" || s == "yes" || s == "on") return 1;
      if (s == "false" || s == "0" || s == "no" || s == "off") return 0;
    }
    if (v.is_number_integer() && (v.get<long long>() == 0 || v.get<long long>() == 1)) return static_cast<int>(v.get<long long>());
    fail(f, "must be true or false, got " + brief(v));
  }
};

MeasuredRun parse_row(const Row& r, const std::string& default_id) {
  for (const auto& [k, v] : r.cells)
    if (std::find(kFields.begin(), kFields.end(), k) == kFields.end())
      throw InputError(r.where + ": unknown field '" + brief_text(k) + "' (expected some of: " + join(kFields) + ")");
  MeasuredRun m;
  m.id = r.str("id", default_id);
  m.model = r.str("model", "", true);
  m.family_id = r.str("family_id", "");
  // A case naming a model segadvise does not know is an error, as an unknown GPU is: left out of the
  // score as "not modelled" instead, a typo would shrink the scored set without a word, and figures
  // of another set of runs would be read as this one's. (prepare() resolves the model the same way.)
  if (!m.family_id.empty()) {
    try {
      find_family(m.family_id);
    } catch (const InputError& e) {
      std::string why = e.what();
      if (why.rfind("--model: ", 0) == 0) why = why.substr(9);
      r.fail("family_id", "names an " + why);
    }
  } else {
    const auto colon = m.model.find(':');
    try {
      find_family_by_trainer(m.model.substr(0, colon), colon == std::string::npos ? "" : m.model.substr(colon + 1), "");
    } catch (const InputError& e) {
      std::string why = e.what();
      if (why.rfind(": ", 0) == 0) why = why.substr(2);
      r.fail("model", "is '" + brief_text(m.model) + "': " + why);
    }
  }
  m.regional_compile = r.boolean("regional_compile");
  m.text_tokens = r.has("text_tokens") ? r.integer("text_tokens", 0, kMaxTextTokens) : -1;
  m.family_name = r.str("family", m.model);
  m.example = r.str("example", "");
  m.gpu = r.str("gpu", "", true);
  try {
    find_gpu(m.gpu);  // a case on a card the catalog lacks would be scored on nothing
  } catch (const InputError& e) {
    std::string why = e.what();
    if (why.rfind("--gpu: ", 0) == 0) why = why.substr(7);
    r.fail("gpu", why);
  }
  // sizes as run: at least 1 when given (unset or null: the family example's, setup_for_run)
  m.width = r.integer("width", 0, kMaxEdgePixels, 1);
  m.height = r.integer("height", 0, kMaxEdgePixels, 1);
  m.frames = r.integer("frames", 0, kMaxFrames, 1);
  m.batch = r.integer("batch", 0, kMaxBatch, 1);
  const std::string lora_type = r.str("lora_type", "");
  if (!lora_type.empty()) m.lora_type = parse_lora_type(lora_type, r.where + ": field 'lora_type'");
  m.lora_rank = r.integer("lora_rank", 0, kMaxLoraRank, 1);
  m.optimizer = r.str("optimizer", "");
  m.ramtorch = r.boolean("ramtorch");
  m.mixed_precision = r.str("mixed_precision", "bf16");
  if (m.mixed_precision != "bf16" && m.mixed_precision != "fp16" && m.mixed_precision != "no" && m.mixed_precision != "fp8")
    r.fail("mixed_precision", "is '" + brief_text(m.mixed_precision) + "'; expected one of no, fp16, bf16, fp8");
  m.precision = r.str("precision", "bf16");
  m.mode = r.str("mode", "", true);
  try {
    Schedule::parse(m.mode);  // named here with its file and field; calibrate parses it again
  } catch (const InputError& e) {
    r.fail("mode", std::string("is not a schedule: ") + e.what());
  }
  m.backend = r.str("backend", "torch");
  m.variant = r.str("variant", "main");
  m.status = r.str("status", "", true);
  if (std::find(kStatuses.begin(), kStatuses.end(), m.status) == kStatuses.end())
    r.fail("status", "is '" + brief_text(m.status) + "'; expected one of " + join(kStatuses));
  m.sec_per_step = r.num("sec_per_step");
  m.peak_gib = r.num("peak_gib");
  m.oom_at_gib = r.num("oom_at_gib");
  if (m.status == "ok") {
    if (!(m.sec_per_step > 0)) r.fail("sec_per_step", "must be a positive number for a run with status ok");
    if (!(m.peak_gib > 0)) r.fail("peak_gib", "must be a positive number for a run with status ok");
  }
  if (m.oom_at_gib < 0) r.fail("oom_at_gib", "must be >= 0");
  return m;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// RFC 4180-ish: commas, double-quoted cells with "" for a quote.
std::vector<std::string> split_csv_line(const std::string& line, const std::string& where) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == ',') {
      out.push_back(cell);
      cell.clear();
      was_quoted = false;
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (quoted) throw InputError(where + ": unterminated quoted cell");
  (void)was_quoted;
  out.push_back(cell);
  return out;
}

}  // namespace

Dataset parse_dataset_json(const json& j, const std::string& origin) {
  Dataset d;
  d.origin = origin;
  const json* list = nullptr;
  if (j.is_array()) {
    list = &j;
  } else if (j.is_object()) {
    d.source = FieldReader{j, origin, ""}.str("source", "");
    if (j.contains("runs")) list = &j["runs"];
    else if (j.contains("cases")) list = &j["cases"];
    else throw InputError(origin + ": field 'runs' is missing (a list of measured runs)");
  } else {
    throw InputError(origin + ": a dataset must be a JSON object with 'runs' or a list of runs");
  }
  if (!list->is_array()) throw InputError(origin + ": field 'runs' must be a list");
  const std::string file = base_name(origin);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    const std::string where = origin + ": run " + std::to_string(i + 1);
    if (!e.is_object()) throw InputError(where + ": must be an object");
    Row r{where, {}};
    for (const auto& [k, v] : e.items()) r.cells[k] = v;
    d.runs.push_back(parse_row(r, file + "#" + std::to_string(i + 1)));
  }
  if (d.runs.empty()) throw InputError(origin + ": field 'runs' is empty (nothing to fit or compare)");
  return d;
}

Dataset parse_dataset_csv(const std::string& text, const std::string& origin) {
  Dataset d;
  d.origin = origin;
  d.source = origin;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  int line_no = 0, row_no = 0;
  const std::string file = base_name(origin);
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r" || line[0] == '#') continue;
    const std::string where = origin + ": line " + std::to_string(line_no);
    require_utf8(line, where);
    auto cells = split_csv_line(line, where);
    if (header.empty()) {
      header = cells;
      for (auto& h : header) {
        while (!h.empty() && h.back() == ' ') h.pop_back();
        while (!h.empty() && h.front() == ' ') h.erase(h.begin());
      }
      continue;
    }
    if (cells.size() != header.size())
      throw InputError(where + ": " + std::to_string(cells.size()) + " cells, the header has " +
                       std::to_string(header.size()));
    Row r{where, {}};
    for (std::size_t k = 0; k < header.size(); ++k)
      if (!cells[k].empty()) r.cells[header[k]] = cells[k];
    d.runs.push_back(parse_row(r, file + "#" + std::to_string(++row_no)));
  }
  if (header.empty()) throw InputError(origin + ": empty CSV (expected a header row)");
  if (d.runs.empty()) throw InputError(origin + ": no runs after the header row (nothing to fit or compare)");
  return d;
}

Dataset load_dataset(const std::string& path) {
  const std::string text = read_input_file(path, "--cases");
  const bool csv = path.size() > 4 && path.substr(path.size() - 4) == ".csv";
  if (csv) return parse_dataset_csv(text, path);
  return parse_dataset_json(parse_json_text(text, path), path);
}

const Dataset& builtin_dataset() {
  static const Dataset d = [] {
    for (std::size_t i = 0; i < kCalibrationDataCount; ++i)
      if (std::string(kCalibrationData[i].name) == "measured-runs.json")
        return parse_dataset_json(parse_json_text(kCalibrationData[i].text, "calibration/data/measured-runs.json"),
                                  "calibration/data/measured-runs.json");
    return Dataset{};
  }();
  return d;
}

Dataset dataset_for(const std::vector<std::string>& paths) {
  if (paths.empty()) return builtin_dataset();
  Dataset out;
  std::set<std::string> ids;
  for (const auto& p : paths) {
    Dataset d = load_dataset(p);
    out.source += (out.source.empty() ? "" : "; ") + (d.source.empty() ? p : d.source);
    out.origin += (out.origin.empty() ? "" : ", ") + p;
    for (auto& r : d.runs) {
      if (!ids.insert(r.id).second) throw InputError(p + ": run id '" + r.id + "' appears twice");
      out.runs.push_back(std::move(r));
    }
  }
  return out;
}

json to_json(const MeasuredRun& r) {
  json j = {{"id", r.id},         {"family", r.family_name}, {"example", r.example},  {"model", r.model},
            {"gpu", r.gpu},       {"precision", r.precision}, {"mode", r.mode},       {"backend", r.backend},
            {"variant", r.variant}, {"status", r.status}};
  if (r.status == "ok") {
    j["sec_per_step"] = r.sec_per_step;
    j["peak_gib"] = r.peak_gib;
  }
  if (r.oom_at_gib > 0) j["oom_at_gib"] = r.oom_at_gib;
  return j;
}

}  // namespace segadvise
