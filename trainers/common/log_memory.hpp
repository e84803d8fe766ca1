// Memory readouts of a log other than nvidia-smi's table and torch.cuda.memory_summary (log_reader.cpp):
// nvidia-smi's CSV queries, nvtop's screen, and figures a script printed beside a label that names the
// memory. Each reads one line, bounded by its length; LogScan (log_reader.cpp) keeps the state across lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "segadvise/trainers/log_reader.hpp"

namespace segadvise::log_memory {

// nvidia-smi --query-gpu=… / --query-compute-apps=… --format=csv[,noheader][,nounits]: the command line
// or the header row names the columns; the rows that follow are read until a line that is not one.
class SmiCsv {
 public:
  // the command line or the header row: true when `s` is one (its columns are kept)
  bool columns(std::string_view s);
  // a row of the kept columns (true: `r` filled); any other line forgets them
  bool row(std::string_view s, MemoryReading& r);

 private:
  struct Column {
    std::string name;  // "memory.used", "used_gpu_memory", "index", "pid", … (no unit)
    double unit = 0;   // the header's "[MiB]"; 0 when it has none
  };
  std::vector<Column> cols_;
  bool apps_ = false;  // --query-compute-apps: each row is a process
};

// nvtop's device line "Device 0 [NVIDIA GeForce RTX 4090] PCIe GEN 4@16x …": the GPU its MEM bar is of
std::optional<int> nvtop_device(std::string_view s);
// nvtop's memory meter "MEM[||||      18.21Gi/23.99Gi]" (used of total), or a process row
// "12345 user 0 Compute 95% 4100MiB 17% …" (process_used, pid); `gpu` the device line above
bool read_nvtop(std::string_view s, std::optional<int> gpu, MemoryReading& r);

// Figures a script printed beside a label naming the memory: "max_memory_allocated: 18.2 GB",
// "Peak VRAM 21.45GB", "memory: 18234MiB", "allocated=18234.5MiB", "mem 18234M", DeepSpeed's
// "MA 12.34 GB Max_MA 15.67 GB CA 16.0 GB Max_CA 18.0 GB". True when the line gave one.
bool read_printed(std::string_view s, MemoryReading& r);

}  // namespace segadvise::log_memory
