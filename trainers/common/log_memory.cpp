// nvidia-smi's CSV queries, nvtop's screen and printed memory figures (see log_memory.hpp); formats and
// their sources: docs/read-log.md.
#include "log_memory.hpp"

#include <cstring>

#include "log_text.hpp"

namespace segadvise::log_memory {
namespace {

using namespace log_text;

constexpr double kGiB = 1073741824.0, kMiB = 1048576.0;

// ---- nvidia-smi CSV ----

bool is_memory_column(const std::string& name) {
  return name == "memory.used" || name == "memory.total" || name == "used_memory" || name == "used_gpu_memory";
}

// a column name as nvidia-smi prints it in a header: "memory.used", "used_gpu_memory", "index"
bool is_column_name(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!(is_alpha(c) || is_digit(c) || c == '.' || c == '_')) return false;
  return true;
}

// "--format=csv,noheader" -> "csv,noheader": the text after `flag` up to a space, quotes dropped
std::string flag_value(const std::string& l, std::string_view flag) {
  std::size_t at = l.find(flag);
  if (at == std::string::npos) return "";
  std::string v;
  for (at += flag.size(); at < l.size() && l[at] != ' '; ++at)
    if (l[at] != '"' && l[at] != '\'') v += l[at];
  return v;
}

// ---- nvtop ----

// nvtop's binary prefixes ("Ki", "Mi", "Gi", "Ti", as in its memory_prefix table), with or without "B"
double nvtop_unit(std::string_view l, std::size_t i, std::size_t& len) {
  static const std::pair<std::string_view, double> units[] = {
      {"tib", kGiB * 1024}, {"gib", kGiB}, {"mib", kMiB}, {"kib", 1024.0},
      {"ti", kGiB * 1024},  {"gi", kGiB},  {"mi", kMiB},  {"ki", 1024.0}};
  for (const auto& [name, factor] : units)
    if (starts_with(l.substr(i), name)) {
      len = name.size();
      return factor;
    }
  len = 0;
  return 0;
}

// "18.21Gi" at l[i]: bytes and the end
std::optional<long long> nvtop_size(std::string_view l, std::size_t i, std::size_t& end) {
  double v = 0;
  std::size_t e = 0, ulen = 0;
  if (!number_at(l, i, v, e)) return std::nullopt;
  const double f = nvtop_unit(l, e, ulen);
  end = e + ulen;
  if (f == 0 || (end < l.size() && is_alpha(l[end]))) return std::nullopt;
  return to_bytes(v, f);
}

// "device 0 [" or "gpu 0 [" / "gpu0 [" at the start of a lower-case line: the index
std::optional<int> device_prefix(std::string_view l) {
  std::size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  for (std::string_view p : {"device", "gpu"})
    if (starts_with(l.substr(i), p)) {
      std::size_t j = i + p.size();
      if (j < l.size() && l[j] == ' ') ++j;
      double v = 0;
      std::size_t e = 0;
      if (!number_at(l, j, v, e) || !in_range(v, kMaxGpuIndex) || (e < l.size() && l[e] == '.')) return std::nullopt;
      while (e < l.size() && l[e] == ' ') ++e;
      if (e < l.size() && (l[e] == '[' || starts_with(l.substr(e), "mem"))) return static_cast<int>(v);
      return std::nullopt;
    }
  return std::nullopt;
}

// the words of a line
std::vector<std::string_view> words(std::string_view l) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < l.size()) {
    while (i < l.size() && l[i] == ' ') ++i;
    const std::size_t a = i;
    while (i < l.size() && l[i] != ' ') ++i;
    if (i > a) out.push_back(l.substr(a, i - a));
  }
  return out;
}

// ---- printed figures ----

// A unit after a printed figure at l[i] (lower case): binary whatever it is written as; `si` when written
// "GB"/"MB"/"G"/"M" (read as GiB/MiB: see docs/read-log.md)
double printed_unit(std::string_view l, std::size_t i, std::size_t& len, bool& si) {
  static const struct {
    std::string_view name;
    double factor;
    bool si;
  } units[] = {{"gib", kGiB, false}, {"mib", kMiB, false}, {"gb", kGiB, true},
               {"mb", kMiB, true},   {"g", kGiB, true},    {"m", kMiB, true}};
  for (const auto& u : units)
    if (starts_with(l.substr(i), u.name)) {
      len = u.name.size();
      si = u.si;
      return u.factor;
    }
  len = 0;
  return 0;
}

// The unit of a figure ending at l[e]: one space at most before it, nothing that continues a word or a rate
// ("MiB/s", "MB/image") after it, a single letter only right after the digits; factor 0 when none.
struct FigureUnit {
  double factor = 0;
  std::size_t at = 0, len = 0;
  bool si = false;
};
FigureUnit unit_after(std::string_view l, std::size_t e) {
  FigureUnit u;
  u.at = e < l.size() && l[e] == ' ' ? e + 1 : e;
  const double f = printed_unit(l, u.at, u.len, u.si);
  const std::size_t after = u.at + u.len;
  if (f != 0 && !(u.len == 1 && u.at != e) &&
      !(after < l.size() && (is_alpha(l[after]) || is_digit(l[after]) || std::strchr("/_.", l[after]))))
    u.factor = f;
  return u;
}

// What a label before a figure names: the field, and a note when the label names no quantity; nullptr
// when it is no label of the GPU's memory in use (host memory, a model's or file's size, a free figure,
// an estimate).
std::optional<long long>* printed_field(std::string_view w, MemoryReading& m, bool deepspeed, std::string& note) {
  if (deepspeed) {  // "MA 12.34 GB         Max_MA 15.67 GB         CA 16.0 GB         Max_CA 18.0 GB"
    std::string_view last = w;
    while (!last.empty() && last.back() == ' ') last.remove_suffix(1);
    const std::size_t sp = last.rfind(' ');
    if (sp != std::string_view::npos) last = last.substr(sp + 1);
    if (last == "ma") return &m.allocated_bytes;
    if (last == "max_ma") return &m.max_allocated_bytes;
    if (last == "ca") return &m.reserved_bytes;
    if (last == "max_ca") return &m.max_reserved_bytes;
    return nullptr;
  }
  for (std::string_view bad : {"cpu", "host", "system", "rss", "param", "model", "weight", "free", "sav", "pinned",
                               "disk", "swap", "cache", "total", "capacity", "budget", "limit", "need", "requir",
                               "estimat", "predict", "expect", "approx", "recommend", "offload", "shard", "file",
                               "size", "tried", "virtual", "shared", "bandwidth"})
    if (contains(w, bad)) return nullptr;
  for (std::size_t at = w.find("ram"); at != std::string_view::npos; at = w.find("ram", at + 1))  // "RAM", not "VRAM"
    if ((at == 0 || !is_alpha(w[at - 1])) && (at + 3 == w.size() || !is_alpha(w[at + 3]))) return nullptr;
  // the memory is named in the label's last three words ("step 100: peak memory:", "torch.cuda.max_memory_reserved():")
  std::size_t from = w.size();
  for (int words = 0; words < 3 && from > 0; ++words) {
    while (from > 0 && w[from - 1] == ' ') --from;
    while (from > 0 && w[from - 1] != ' ') --from;
  }
  const std::string_view near = w.substr(from);
  if (!contains(near, "mem") && !contains(near, "vram") && !contains(near, "alloc") && !contains(near, "reserv"))
    return nullptr;
  const bool peak = contains(w, "peak") || contains(w, "max");
  if (contains(w, "reserv")) return peak ? &m.max_reserved_bytes : &m.reserved_bytes;
  if (contains(w, "alloc")) return peak ? &m.max_allocated_bytes : &m.allocated_bytes;
  if (peak) {
    note = "the label names no quantity: read as max_memory_allocated";
    return &m.max_allocated_bytes;
  }
  note = "the label names no quantity: read as memory in use";
  return &m.used_bytes;
}

std::string lower_to_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

void add_note(std::string& notes, const std::string& n) {
  if (n.empty() || contains(notes, n)) return;
  notes += (notes.empty() ? "" : "; ") + n;
}

}  // namespace

bool SmiCsv::columns(std::string_view s) {
  const std::string l = lower(s);
  for (std::string_view q : {"--query-gpu=", "--query-compute-apps="}) {
    const std::string list = flag_value(l, q);
    if (list.empty()) continue;
    cols_.clear();
    bool memory = false;
    for (const std::string& f : split_commas(list)) {
      cols_.push_back({f, 0});
      memory = memory || is_memory_column(f);
    }
    apps_ = q == "--query-compute-apps=";
    if (!memory) cols_.clear();
    return memory;
  }
  std::vector<Column> cols;
  bool memory = false, apps = false;
  for (const std::string& f : split_commas(l)) {
    const std::size_t br = f.find(" [");
    Column c{f.substr(0, br), 0};
    if (!is_column_name(c.name)) return false;
    if (br != std::string::npos) {
      std::size_t ulen = 0;
      c.unit = unit_at(f, br + 2, ulen);
      if (c.unit == 0 || f.size() != br + 2 + ulen + 1 || f.back() != ']') return false;
    }
    memory = memory || is_memory_column(c.name);
    apps = apps || c.name == "pid" || c.name == "used_gpu_memory" || c.name == "used_memory";
    cols.push_back(c);
  }
  if (!memory) return false;
  cols_ = std::move(cols);
  apps_ = apps;
  return true;
}

bool SmiCsv::row(std::string_view s, MemoryReading& r) {
  if (cols_.empty()) return false;
  const std::vector<std::string> f = split_commas(s);
  MemoryReading m;
  bool ok = f.size() == cols_.size(), any = false;
  for (std::size_t k = 0; ok && k < f.size(); ++k) {
    const Column& c = cols_[k];
    double v = 0;
    std::size_t e = 0;
    if (c.name == "index" || c.name == "pid") {
      ok = number_at(f[k], 0, v, e) && e == f[k].size() && in_range(v, c.name == "pid" ? 1e15 : kMaxGpuIndex);
      if (ok && c.name == "index") m.gpu_index = static_cast<int>(v);
      if (ok && c.name == "pid") m.pid = static_cast<long long>(v);
    } else if (is_memory_column(c.name) && !starts_with(f[k], "[")) {  // "[N/A]", "[Not Supported]": no figure
      std::optional<long long> b = parse_size_text(f[k]);
      if (!b && number_at(f[k], 0, v, e) && e == f[k].size()) b = to_bytes(v, c.unit != 0 ? c.unit : kMiB);  // nounits: MiB
      ok = b.has_value();
      any = any || ok;
      if (c.name == "memory.total") m.total_bytes = b;
      else if (apps_) m.process_used_bytes = b;
      else m.used_bytes = b;
    }
  }
  if (!ok || !any) {
    cols_.clear();
    return false;
  }
  m.source = apps_ ? "nvidia-smi csv (compute apps)" : "nvidia-smi csv";
  r = m;
  return true;
}

std::optional<int> nvtop_device(std::string_view s) {
  const std::string l = lower(s);
  if (!contains(l, "[") || contains(l, "mem[")) return std::nullopt;
  return device_prefix(l);
}

bool read_nvtop(std::string_view s, std::optional<int> gpu, MemoryReading& r) {
  const std::string l = lower(s);
  // the meter: "MEM[||||   18.21Gi/23.99Gi]" or "MEM 18.2Gi/24.0Gi"
  for (std::size_t at = s.find("MEM"); at != std::string_view::npos; at = s.find("MEM", at + 3)) {
    std::size_t i = at + 3;
    while (i < l.size() && (l[i] == '[' || l[i] == '|' || l[i] == ' ')) ++i;
    std::size_t e = 0, e2 = 0;
    const std::optional<long long> used = nvtop_size(l, i, e);
    if (!used || e >= l.size() || l[e] != '/') continue;
    const std::optional<long long> total = nvtop_size(l, e + 1, e2);
    if (!total) continue;
    r.used_bytes = used;
    r.total_bytes = total;
    const std::optional<int> own = device_prefix(l);
    r.gpu_index = own ? own : gpu;
    r.source = "nvtop";
    return true;
  }
  // a process row: PID USER DEV TYPE … GPU MEM …
  const std::vector<std::string_view> w = words(l);
  double v = 0;
  std::size_t e = 0;
  if (w.size() < 6 || !number_at(w[0], 0, v, e) || e != w[0].size() || v > 1e15) return false;
  const double pid = v;
  if (!number_at(w[2], 0, v, e) || e != w[2].size() || !in_range(v, kMaxGpuIndex)) return false;
  if (w[3] != "compute" && w[3] != "graphic" && w[3] != "both") return false;
  for (std::size_t k = 4; k < w.size(); ++k) {
    std::size_t end = 0;
    const std::optional<long long> b = nvtop_size(w[k], 0, end);
    if (!b || end != w[k].size()) continue;
    r.process_used_bytes = b;
    r.pid = static_cast<long long>(pid);
    r.gpu_index = static_cast<int>(v);
    r.source = "nvtop";
    return true;
  }
  return false;
}

bool read_printed(std::string_view s, MemoryReading& r) {
  const std::string l = lower(s);
  // deepspeed/runtime/utils.py see_memory_usage: "MA … GB Max_MA … GB CA … GB Max_CA … GB", each / 1024**3
  const bool deepspeed = contains(l, "max_ma ") && contains(l, "max_ca ");
  MemoryReading m;
  bool any = false;
  for (std::size_t start = 0; start < l.size(); ++start) {
    if (!is_digit(l[start])) continue;
    if (start > 0 && (is_digit(l[start - 1]) || is_alpha(l[start - 1]) || std::strchr("._-+<>~", l[start - 1])))
      continue;
    // a bound or an estimate, not a figure: "<=16G", "~12 GB", "≥12G", "≤ 8 GB"
    if (start >= 2 && l[start - 1] == '=' && (l[start - 2] == '<' || l[start - 2] == '>')) continue;
    if ((start >= 3 && (l.compare(start - 3, 3, "\xe2\x89\xa5") == 0 || l.compare(start - 3, 3, "\xe2\x89\xa4") == 0)) ||
        (start >= 4 && (l.compare(start - 4, 3, "\xe2\x89\xa5") == 0 || l.compare(start - 4, 3, "\xe2\x89\xa4") == 0)))
      continue;
    double v = 0, total = 0;
    std::size_t e = 0, end = 0;
    number_at(l, start, v, e);
    end = e;
    FigureUnit unit = unit_after(l, e);
    if (unit.factor == 0) {  // "18.2/24.0 GB": used of total, the unit after the total
      std::size_t k = e < l.size() && l[e] == ' ' ? e + 1 : e;
      if (k < l.size() && l[k] == '/') {
        k += k + 1 < l.size() && l[k + 1] == ' ' ? 2 : 1;
        std::size_t te = 0;
        if (number_at(l, k, total, te) && (unit = unit_after(l, te)).factor != 0) end = te;
      }
    }
    if (unit.factor != 0) {
      // the label: back to a digit, a separator or 48 characters
      std::size_t a = start;
      while (a > 0 && start - a < 48 && !is_digit(l[a - 1]) && !std::strchr("|,;[]", l[a - 1])) --a;
      std::string note;
      std::optional<long long>* field = printed_field(std::string_view(l).substr(a, start - a), m, deepspeed, note);
      const std::optional<long long> bytes = to_bytes(v, unit.factor);
      if (field && !*field && bytes) {
        *field = bytes;
        if (end != e && !m.total_bytes) m.total_bytes = to_bytes(total, unit.factor);
        any = true;
        add_note(m.note, note);
        if (unit.si && !deepspeed)
          add_note(m.note, lower_to_upper(l.substr(unit.at, unit.len)) + " read as " + (unit.factor == kGiB ? "GiB" : "MiB"));
      }
    }
    start = end - 1;  // the next figure starts after this one
  }
  if (!any) return false;
  m.source = deepspeed ? "deepspeed see_memory_usage" : "printed";
  r = m;
  return true;
}

}  // namespace segadvise::log_memory
