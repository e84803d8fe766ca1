// Reading a trainer's console log (see log_reader.hpp). No regular expressions: every pattern is a
// hand-written scan, each line visited a bounded number of times.
#include "segadvise/trainers/log_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <string_view>

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/types.hpp"
#include "log_memory.hpp"
#include "log_text.hpp"

namespace segadvise {
namespace {

using namespace log_text;

// Counts read from a log are converted to integers only inside this bound (a longer digit run is not a
// step count: the line is then not read as one; log_text.hpp bounds device indices)
constexpr double kMaxCount = 1e15;

// One line of the log: split at '\n' and at the '\r' a progress bar redraws with; `number` counts '\n' only.
struct Line {
  std::string text;  // ANSI escape sequences removed
  int number = 0;
};

std::vector<Line> split_lines(const std::string& text) {
  std::vector<Line> lines;
  int number = 1;
  std::string cur;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      lines.push_back({cur, number});
      cur.clear();
      if (c == '\n') ++number;
      continue;
    }
    if (c == '\x1b') {  // ESC [ parameters final-byte (CSI), or ESC and one byte
      if (i + 1 < text.size() && text[i + 1] == '[') {
        i += 2;
        while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) ++i;
      } else {
        ++i;
      }
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) lines.push_back({cur, number});
  return lines;
}


// The line in lower case without whitespace and without the box-drawing characters (U+2500-U+257F)
// rich draws panels with: a message hard-wrapped anywhere reads the same once its lines are joined.
std::string compact(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == ' ' || c == '\t' || c == '\f' || c == '\v') continue;
    if (c == 0xE2 && i + 2 < s.size() && (static_cast<unsigned char>(s[i + 1]) == 0x94 ||
                                          static_cast<unsigned char>(s[i + 1]) == 0x95)) {
      i += 2;
      continue;
    }
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}


// ---- out-of-memory messages ----

std::size_t oom_marker_pos(std::string_view c) {
  std::size_t best = std::string_view::npos;
  for (std::string_view m : {"cudaoutofmemory", "hipoutofmemory", "cudaerror:outofmemory", "hiperror:outofmemory",
                             "mpsbackendoutofmemory"})
    best = std::min(best, c.find(m));
  return best;
}
bool oom_marker(std::string_view c) { return oom_marker_pos(c) != std::string_view::npos; }

// The figures of one message, `s` its compacted text from the marker on.
void read_oom_figures(std::string_view s, OomMessage& m) {
  const bool mps = starts_with(s, "mpsbackendoutofmemory");
  for (std::size_t i = 0; i < s.size(); ++i) {
    // "gpu0;" (1.x, 2.0) or "gpu0has" (2.1+): the device
    if (!m.gpu_index && starts_with(s.substr(i), "gpu") && i + 3 < s.size() && is_digit(s[i + 3])) {
      double v = 0;
      std::size_t e = 0;
      number_at(s, i + 3, v, e);
      if (e < s.size() && (s[e] == ';' || starts_with(s.substr(e), "has")) && in_range(v, kMaxGpuIndex)) m.gpu_index = static_cast<int>(v);
    }
    if (!is_digit(s[i]) || (i > 0 && (is_digit(s[i - 1]) || s[i - 1] == '.'))) continue;
    double v = 0;
    std::size_t e = 0;
    number_at(s, i, v, e);
    std::size_t ulen = 0;
    double factor = unit_at(s, e, ulen);
    if (factor == 0) continue;
    // the MPS allocator's format_size divides by 1024 and says KB, MB, GB
    if (mps && ulen == 2) factor = factor == 1e9 ? 1073741824.0 : factor == 1e6 ? 1048576.0 : factor == 1e3 ? 1024.0 : factor;
    const std::optional<long long> read = to_bytes(v, factor);
    if (!read) continue;
    const long long bytes = *read;
    const std::string_view before = s.substr(0, i);
    const std::string_view after = s.substr(e + ulen);
    auto set = [&](std::optional<long long>& field) {
      if (!field) field = bytes;
    };
    // "capacty" (sic): 2.1's sentence form; either spelling in either form is read
    if (ends_with(before, "triedtoallocate")) set(m.tried_to_allocate_bytes);
    else if (ends_with(before, "totalcapacityof") || ends_with(before, "totalcapactyof") ||
             starts_with(after, "totalcapacity") || starts_with(after, "totalcapacty"))
      set(m.total_capacity_bytes);
    else if (starts_with(after, "alreadyallocated") || starts_with(after, "isallocatedbypytorch") ||
             ends_with(before, "(mpsallocated:"))
      set(m.allocated_by_pytorch_bytes);
    else if (starts_with(after, "isfree") || starts_with(after, "free"))
      set(m.free_bytes);
    else if (starts_with(after, "reservedintotalbypytorch"))
      set(m.reserved_total_bytes);
    else if (starts_with(after, "cached)"))  // 1.0-1.4: the allocator's cached blocks not allocated
      set(m.reserved_unallocated_bytes);
    else if (starts_with(after, "isreservedbypytorchbutunallocated"))
      set(m.reserved_unallocated_bytes);
    else if (starts_with(after, "allocatedinprivatepools"))
      set(m.private_pools_bytes);
    else if (starts_with(after, "memoryinuse")) {
      if (ends_with(before, "thisprocesshas")) {
        set(m.process_in_use_bytes);
      } else if (ends_with(before, "has")) {  // "process<pid>has"
        std::size_t j = before.size() - 3;
        const std::size_t digits_end = j;
        while (j > 0 && is_digit(before[j - 1])) --j;
        if (j < digits_end && digits_end - j <= 18 && ends_with(before.substr(0, j), "process")) {
          const long long pid = std::stoll(std::string(before.substr(j, digits_end - j)));
          m.other_processes.push_back({pid, bytes});
        }
      }
    }
    i = e + ulen - 1;
  }
}

bool ends_message(std::string_view c) {
  return contains(c, "pytorch_cuda_alloc_conf") || contains(c, "environment-variables") ||
         contains(c, "pytorch_hip_alloc_conf") || contains(c, "pytorch_mps_high_watermark_ratio");
}

// What the run was doing at a line (lower case), "" when the line says nothing about it.
std::string phase_cue(const std::string& l) {
  for (std::string_view w : {"validation", "sample_image", "sampling", "generate_images", "generating images", ", in sample", "generating sample", "generate_sample",
                             "denois", "log_validation", "inference"})
    if (contains(l, w)) return "sampling";
  for (std::string_view w : {"caching", "cache_latents", "cache_text", "text embed", "encode_prompt", "precomput",
                             "cache latents", "text_encoder_output"})
    if (contains(l, w)) return "caching";
  for (std::string_view w : {"saving", "save_model", "save_checkpoint", "save_state", "save_file"})
    if (contains(l, w)) return "save";
  for (std::string_view w : {"loading checkpoint shards", "loading model", "load_model", "from_pretrained",
                             "loading pipeline", "load_state_dict", "loading transformer", "loading dit",
                             "loading vae", "loading text encoder"})
    if (contains(l, w)) return "model_load";
  for (std::string_view w : {"backward", "optimizer.step", "training_step", "train_step", "steps:", "step:",
                             "loss=", "loss:", "in train", "accelerator.accumulate"})
    if (contains(l, w)) return "training_step";
  return "";
}

// ---- progress bars and step lines ----


std::string bar_kind(const std::string& desc, const std::string& postfix) {
  const std::string d = lower(desc);
  for (std::string_view w : {"sampl", "denois", "validation", "generat", "inference", "timestep"})
    if (contains(d, w)) return "sampling";
  for (std::string_view w : {"cach", "encod", "latent", "embed", "precomput", "bucket"})
    if (contains(d, w)) return "caching";
  for (std::string_view w : {"loading", "checkpoint shards"})
    if (contains(d, w)) return "loading";
  if (contains(d, "step")) return "training_step";
  if (contains(d, "epoch")) return "epoch";
  // ai-toolkit names its bar after the job: a bar showing the loss is the training loop
  const std::string p = lower(postfix);
  if (contains(p, "loss")) return "training_step";
  return "other";
}

// A tqdm bar update: "desc:  12%|█▏   | 120/1000 [02:00<14:40,  1.00s/it, loss=0.1]" or, without a
// total, "desc: 120it [02:00,  1.00it/s]".
bool read_bar(std::string_view s, StepReading& r) {
  const std::size_t open = s.rfind('[');
  if (open == std::string_view::npos) return false;
  const std::size_t close = s.find(']', open);
  const std::string_view inside = s.substr(open + 1, close == std::string_view::npos ? std::string_view::npos
                                                                                      : close - open - 1);
  // the rate: "1.23s/it" or "4.56it/s" after the first comma
  const std::size_t comma = inside.find(',');
  if (comma == std::string_view::npos) return false;
  std::size_t i = comma + 1;
  while (i < inside.size() && inside[i] == ' ') ++i;
  double v = 0;
  std::size_t e = 0;
  if (!number_at(inside, i, v, e) || v <= 0) return false;
  std::string_view rest = inside.substr(e);
  if (starts_with(rest, "s/it")) r.sec_per_step = v;
  else if (starts_with(rest, "it/s")) r.sec_per_step = 1.0 / v;
  else return false;
  const std::string postfix(rest.substr(4));
  std::string_view head = s.substr(0, open);
  const std::size_t pct = head.find("%|");
  if (pct != std::string_view::npos) {
    std::size_t d = pct;
    while (d > 0 && (is_digit(head[d - 1]) || head[d - 1] == ' ')) --d;
    r.label = trim(head.substr(0, d));
    const std::size_t bar_end = head.find('|', pct + 2);
    if (bar_end == std::string_view::npos) return false;
    std::string_view counts = head.substr(bar_end + 1);
    std::size_t k = 0;
    while (k < counts.size() && counts[k] == ' ') ++k;
    double n = 0, t = 0;
    std::size_t ne = 0, te = 0;
    if (number_at(counts, k, n, ne) && ne < counts.size() && counts[ne] == '/' && number_at(counts, ne + 1, t, te) &&
        in_range(n, kMaxCount) && in_range(t, kMaxCount)) {
      r.step = static_cast<long long>(n);
      r.total = static_cast<long long>(t);
    }
  } else {
    // "desc: 120it "
    std::string_view h = head;
    while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
    if (!ends_with(h, "it")) return false;
    h.remove_suffix(2);
    std::size_t d = h.size();
    while (d > 0 && is_digit(h[d - 1])) --d;
    if (d == h.size()) return false;
    r.step = std::stoll(std::string(h.substr(d)));
    r.label = trim(h.substr(0, d));
  }
  r.what = bar_kind(r.label, postfix);
  return true;
}

// DeepSpeed's pipeline engine (diffusion-pipe): "steps: 10 loss: 0.1234 iter time (s): 5.123 samples/sec: 0.195"
bool read_deepspeed_line(std::string_view s, StepReading& r) {
  const std::size_t at = s.find("steps: ");
  const std::size_t it = s.find("iter time (s): ");
  if (at == std::string_view::npos || it == std::string_view::npos || it < at) return false;
  double step = 0, sec = 0;
  std::size_t e = 0;
  if (!number_at(s, at + 7, step, e) || !number_at(s, it + 15, sec, e) || !in_range(step, kMaxCount)) return false;
  r.step = static_cast<long long>(step);
  r.sec_per_step = sec;
  r.what = "training_step";
  r.label = "deepspeed steps";
  return sec > 0;
}

// ---- memory readouts ----

// "20000MiB / 24564MiB" in an nvidia-smi table row
bool read_smi_row(std::string_view s, MemoryReading& r) {
  const std::size_t slash = s.find("MiB /");
  if (slash == std::string_view::npos || s.find('|') == std::string_view::npos) return false;
  std::size_t a = slash;
  while (a > 0 && is_digit(s[a - 1])) --a;
  if (a == slash) return false;
  std::size_t b = slash + 5;
  while (b < s.size() && s[b] == ' ') ++b;
  double used = 0, total = 0;
  std::size_t e = 0;
  if (!number_at(s, a, used, e) || !number_at(s, b, total, e) || !starts_with(s.substr(e), "MiB")) return false;
  r.used_bytes = to_bytes(used, 1048576.0);
  r.total_bytes = to_bytes(total, 1048576.0);
  if (!r.used_bytes || !r.total_bytes) return false;
  r.source = "nvidia-smi";
  return true;
}

// "|   0  NVIDIA H100 80GB HBM3   On  |": the GPU a table's next row is about
std::optional<int> smi_gpu_header(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i >= s.size() || s[i] != '|') return std::nullopt;
  ++i;
  while (i < s.size() && s[i] == ' ') ++i;
  double v = 0;
  std::size_t e = 0;
  if (!number_at(s, i, v, e) || e >= s.size() || s[e] != ' ' || !in_range(v, kMaxGpuIndex)) return std::nullopt;
  while (e < s.size() && s[e] == ' ') ++e;
  if (e >= s.size() || !std::isalpha(static_cast<unsigned char>(s[e]))) return std::nullopt;
  if (!contains(s.substr(e), "|")) return std::nullopt;
  return static_cast<int>(v);
}


// "| Allocated memory      |  12345 MiB |  20000 MiB | …": current and peak
bool summary_row(std::string_view s, std::string_view name, std::optional<long long>& cur,
                 std::optional<long long>* peak) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i >= s.size() || s[i] != '|') return false;
  std::string_view rest = s.substr(i + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!starts_with(rest, name)) return false;
  std::vector<std::string> cells;
  std::size_t start = 0;
  for (std::size_t k = 0; k <= rest.size(); ++k)
    if (k == rest.size() || rest[k] == '|') {
      cells.push_back(trim(rest.substr(start, k - start)));
      start = k + 1;
    }
  if (cells.size() < 3) return false;
  cur = parse_size_text(cells[1]);
  if (peak) *peak = parse_size_text(cells[2]);
  return cur.has_value();
}

}  // namespace

std::optional<long long> parse_size_text(const std::string& text) {
  const std::string s = lower(text);
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  double v = 0;
  std::size_t e = 0;
  if (!number_at(s, i, v, e)) return std::nullopt;
  while (e < s.size() && s[e] == ' ') ++e;
  std::size_t ulen = 0;
  double factor = unit_at(s, e, ulen);
  if (factor == 0 && e < s.size() && s[e] == 'b') {  // torch.cuda.memory_summary's "0 B"
    factor = 1;
    ulen = 1;
  }
  if (factor == 0) return std::nullopt;
  std::size_t end = e + ulen;
  while (end < s.size() && s[end] == ' ') ++end;
  if (end != s.size()) return std::nullopt;
  return to_bytes(v, factor);
}

const StepReading* LogReport::last_training_step() const {
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (it->what == "training_step") return &*it;
  return nullptr;
}

namespace {

// One pass over a log's lines (read_log_text): each reader takes the line at `li` when it is its kind,
// and says so; the state that spans lines (open bars, an nvidia-smi header, a CSV header, a memory
// summary being filled, the end of the last OOM message) lives here.
class LogScan {
 public:
  LogScan(const std::string& text, const std::string& origin) : lines(split_lines(text)) {
    rep.path = origin;
    compacts.reserve(lines.size());
    for (const Line& l : lines) compacts.push_back(compact(l.text));
  }

  LogReport run() {
    for (std::size_t li = 0; li < lines.size(); ++li) {
      const std::string& s = lines[li].text;
      if (s.empty()) continue;
      if (oom(li) || bar(li, s) || smi_table(li, s) || smi_csv(li, s) || nvtop(li, s)) continue;
      if (!memory_summary(li, s)) printed(li, s, "");
    }
    // a bar's reading sits where its last update is
    std::stable_sort(rep.steps.begin(), rep.steps.end(),
                     [](const StepReading& a, const StepReading& b) { return a.line < b.line; });
    return rep;
  }

 private:
  // a message is ~450 characters without its spaces: it ends by these bounds even with no end marker
  static constexpr std::size_t kMaxMessageLines = 120, kMaxMessageChars = 2048;
  static constexpr std::size_t kPhaseLookback = 400;

  const std::vector<Line> lines;
  std::vector<std::string> compacts;
  LogReport rep;
  std::map<std::string, std::size_t> open_bars;  // label + total -> its reading in rep.steps
  std::optional<int> smi_gpu, nvtop_gpu;
  log_memory::SmiCsv csv;
  std::map<std::string, std::size_t> bar_memory;  // a bar's label + total -> the memory its postfix shows
  std::size_t summary_at = std::string::npos;  // the memory reading a torch.cuda.memory_summary fills
  std::size_t last_oom_end = 0;                // phase cues are not looked for before this line

  // out-of-memory: the message from the marker (which a narrow console may split over lines) to its
  // end, joined; `li` moves to its last line
  bool oom(std::size_t& li) {
    const std::string& c = compacts[li];
    std::size_t marker = oom_marker_pos(c);
    if (marker == std::string::npos && li + 1 < lines.size()) {
      const std::string three = c + compacts[li + 1] + (li + 2 < lines.size() ? compacts[li + 2] : std::string());
      const std::size_t at = oom_marker_pos(three);
      if (at < c.size()) marker = at;
    }
    if (marker != std::string::npos) {
      OomMessage m;
      m.line = lines[li].number;
      std::string joined = c.substr(marker);
      std::size_t end = li + 1;
      if (!ends_message(c)) {
        for (; end < lines.size() && end < li + kMaxMessageLines && joined.size() < kMaxMessageChars; ++end) {
          const std::string& next = compacts[end];
          if (next.empty() || oom_marker(next)) break;
          joined += next;
          if (ends_message(next)) {
            ++end;
            break;
          }
        }
      }
      read_oom_figures(joined, m);
      const std::size_t stop = std::max(last_oom_end, li > kPhaseLookback ? li - kPhaseLookback : 0);
      for (std::size_t k = li; k-- > stop;) {
        std::string cue = phase_cue(lower(lines[k].text));
        if (!cue.empty()) {
          m.phase = cue;
          break;
        }
      }
      // a logger that prints the exception again right after the traceback: one message
      const bool repeat = !rep.oom.empty() && li < last_oom_end + 10 && rep.oom.back().tried_to_allocate_bytes == m.tried_to_allocate_bytes &&
                          rep.oom.back().total_capacity_bytes == m.total_capacity_bytes &&
                          rep.oom.back().free_bytes == m.free_bytes;
      if (!repeat) rep.oom.push_back(m);
      last_oom_end = end;
      li = end - 1;
      return true;
    }
    return false;
  }

  // progress bars and step lines: a bar's updates become its last one
  bool bar(std::size_t li, const std::string& s) {
    StepReading r;
    if (read_bar(s, r) || read_deepspeed_line(s, r)) {
      r.line = lines[li].number;
      const std::string key = r.label + "\x1f" + (r.total ? std::to_string(*r.total) : "");
      auto it = open_bars.find(key);
      if (it != open_bars.end() && rep.steps[it->second].step.value_or(0) <= r.step.value_or(0)) {
        rep.steps[it->second] = r;
      } else {
        open_bars[key] = rep.steps.size();
        rep.steps.push_back(r);
      }
      printed(li, s, key);
      return true;
    }
    return false;
  }

  // nvidia-smi tables: a GPU's header line, then its memory row
  bool smi_table(std::size_t li, const std::string& s) {
    if (auto g = smi_gpu_header(s)) {
      smi_gpu = g;
      return true;
    }
    MemoryReading mem;
    if (!read_smi_row(s, mem)) return false;
    mem.line = lines[li].number;
    mem.gpu_index = smi_gpu;
    smi_gpu.reset();
    rep.memory.push_back(mem);
    return true;
  }

  // nvidia-smi --query-gpu=… / --query-compute-apps=… --format=csv: the command or the header, then its rows
  bool smi_csv(std::size_t li, const std::string& s) {
    if (csv.columns(s)) return true;
    MemoryReading mem;
    if (!csv.row(s, mem)) return false;
    mem.line = lines[li].number;
    rep.memory.push_back(mem);
    return true;
  }

  // nvtop: a device line, then its MEM meter; its process rows
  bool nvtop(std::size_t li, const std::string& s) {
    if (auto g = log_memory::nvtop_device(s)) {
      nvtop_gpu = g;
      return true;
    }
    MemoryReading mem;
    if (!log_memory::read_nvtop(s, nvtop_gpu, mem)) return false;
    mem.line = lines[li].number;
    rep.memory.push_back(mem);
    return true;
  }

  // figures printed beside a label naming the memory; a bar's (in its postfix, `bar_key` its key) become
  // its last update's, as its step reading does
  void printed(std::size_t li, const std::string& s, const std::string& bar_key) {
    MemoryReading mem;
    if (!log_memory::read_printed(s, mem)) return;
    mem.line = lines[li].number;
    if (!bar_key.empty()) {
      auto [it, added] = bar_memory.try_emplace(bar_key, rep.memory.size());
      if (!added) {
        rep.memory[it->second] = mem;
        return;
      }
    }
    rep.memory.push_back(mem);
  }

  // torch.cuda.memory_summary(): "PyTorch CUDA memory summary, device ID 0", then its rows
  bool memory_summary(std::size_t li, const std::string& s) {
    const std::size_t sum = s.find("PyTorch CUDA memory summary, device ID ");
    if (sum != std::string::npos) {
      MemoryReading mem;
      mem.line = lines[li].number;
      mem.source = "torch.cuda.memory_summary";
      mem.gpu_index = small_index(s.c_str() + sum + 39);
      summary_at = rep.memory.size();
      rep.memory.push_back(mem);
      return true;
    }
    if (summary_at >= rep.memory.size()) return false;
    MemoryReading& m = rep.memory[summary_at];
    if (summary_row(s, "Allocated memory", m.allocated_bytes, &m.max_allocated_bytes)) return true;
    std::optional<long long> reserved;
    if (summary_row(s, "GPU reserved memory", reserved, nullptr) || summary_row(s, "Reserved memory", reserved, nullptr)) {
      m.reserved_bytes = reserved;
      summary_at = std::string::npos;
      return true;
    }
    return false;
  }
};

}  // namespace

LogReport read_log_text(const std::string& text, const std::string& origin) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\0')
      throw InputError(origin + ": not a text file (a NUL byte at byte " + std::to_string(i) + ")");
  require_utf8(text, origin + ": not a text file");
  return LogScan(text, origin).run();
}

LogReport read_log_file(const std::string& path) {
  const std::string text = read_input_file(path, "log");
  LogReport rep = read_log_text(text, "log '" + brief_text(path) + "'");
  rep.path = path;
  return rep;
}

}  // namespace segadvise
