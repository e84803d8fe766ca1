// What a trainer's console log already says about memory and speed: PyTorch's CUDA/HIP
// out-of-memory messages (every format since 1.x, hard-wrapped or not), progress bars and the
// trainers' own step lines, and memory readouts (nvidia-smi tables and CSV, nvtop, torch.cuda.memory_summary,
// labelled figures a script printed).
// One pass over the lines, hand-written scanning: linear in the size of the text.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace segadvise {

// One out-of-memory message. Every figure is in bytes, nullopt where the message has no such figure.
struct OomMessage {
  int line = 0;  // 1-based line the message starts on
  std::optional<long long> tried_to_allocate_bytes, total_capacity_bytes, free_bytes, process_in_use_bytes,
      allocated_by_pytorch_bytes, reserved_unallocated_bytes, reserved_total_bytes, private_pools_bytes;
  std::optional<int> gpu_index;
  struct OtherProcess {
    long long pid = 0;
    long long bytes = 0;
  };
  std::vector<OtherProcess> other_processes;  // "Process N has X memory in use"
  // what the run was doing, from the nearest cue above the message (the traceback's frames and source
  // lines, progress bars, log lines): caching, model_load, training_step, sampling, save, unknown
  std::string phase = "unknown";
};

// One progress bar (its last update) or one step line of a trainer.
struct StepReading {
  int line = 0;
  double sec_per_step = 0;
  std::optional<long long> step, total;
  // training_step (optimizer steps only), epoch, sampling (validation, denoising), caching (latents,
  // text embeds), loading, other
  std::string what;
  std::string label;  // the bar's description or the line's kind ("deepspeed steps")
};

// One memory readout. Bytes; nullopt where the readout has no such figure. Each field is one quantity:
// used (the card's memory in use, as nvidia-smi and nvtop show it) of total; allocated and reserved
// (PyTorch's caching allocator: torch.cuda.memory_allocated, memory_reserved) and their peaks
// (max_memory_allocated, max_memory_reserved); process_used (one process's memory as nvidia-smi or nvtop
// show it, with its pid).
struct MemoryReading {
  int line = 0;
  std::optional<int> gpu_index;
  std::optional<long long> used_bytes, total_bytes, allocated_bytes, reserved_bytes, max_allocated_bytes,
      max_reserved_bytes, process_used_bytes, pid;
  // nvidia-smi, nvidia-smi csv, nvtop, torch.cuda.memory_summary, deepspeed see_memory_usage, printed (a
  // labelled figure some script printed)
  std::string source;
  std::string note;  // what the reading assumed: a unit ("GB taken as GiB"), a quantity the label does not name
};

struct LogReport {
  std::string path;
  std::vector<OomMessage> oom;
  std::vector<StepReading> steps;
  std::vector<MemoryReading> memory;
  // the last training_step reading (nullptr: none)
  const StepReading* last_training_step() const;
};

// The log at `path`: a regular file of at most kMaxInputFileBytes, text (no NUL byte, valid UTF-8);
// InputError naming the file otherwise.
LogReport read_log_file(const std::string& path);
// The same reading of text already in memory; `origin` names it in messages.
LogReport read_log_text(const std::string& text, const std::string& origin);

// "20.00 MiB", "1.5GiB", "512 bytes", "3 KiB" -> bytes (binary units; KB/MB/GB as 10^3/10^6/10^9).
std::optional<long long> parse_size_text(const std::string& text);

}  // namespace segadvise
