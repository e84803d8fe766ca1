// `--gpu auto`: the local NVIDIA GPU, found through NVML (libnvidia-ml.so.1) or the CUDA driver
// (libcuda.so.1), both loaded with dlopen only when asked, so segadvise builds and starts on
// machines without CUDA.
#pragma once

#include <string>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

struct DetectedGpu {
  std::string name;       // as the driver reports it: "NVIDIA H100 80GB HBM3"
  double total_bytes = 0;
  double free_bytes = 0;  // 0 when unknown
  int pcie_generation = 0, pcie_width = 0;  // current link, 0 when unknown
  std::string via;        // "NVML" | "CUDA driver"
};

// The first GPU; throws InputError (exit 2) when there is none, saying what was tried.
DetectedGpu detect_gpu();

// The catalog card a detected name is (its id), or "" when it is none of them.
std::string catalog_id_for(const std::string& detected_name, double total_bytes);

// Nominal one-direction PCIe bandwidth of a link (bytes/s): per-lane rates of gen 1..6 after
// encoding (0.25, 0.5, 0.985, 1.969, 3.938, 7.563 GB/s) times the width; 0 when unknown.
double pcie_link_bytes_per_s(int generation, int width);

// --gpu auto as a GpuSpec: the catalog entry with the detected memory, or a custom card.
GpuSpec auto_gpu();

// The machine's memory (MemTotal of /proc/meminfo), bytes; 0 when unknown.
double detect_host_memory_bytes(const std::string& meminfo_path = "/proc/meminfo");

}  // namespace segadvise
