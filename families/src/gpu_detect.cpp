#include "segadvise/families/gpu_detect.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

#include "segadvise/families/family.hpp"

namespace segadvise {

namespace {

// NVML and CUDA driver entry points, declared here so no CUDA header is needed to build.
using nvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlGetHandle = int (*)(unsigned int, nvmlDevice*);
using NvmlGetName = int (*)(nvmlDevice, char*, unsigned int);
using NvmlGetMemory = int (*)(nvmlDevice, NvmlMemory*);
using NvmlGetPcie = int (*)(nvmlDevice, unsigned int*);

using CuInit = int (*)(unsigned int);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);

bool try_nvml(DetectedGpu& g, std::string& why) {
  void* h = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    why += std::string("libnvidia-ml.so.1: ") + (e ? e : "not found");
    return false;
  }
  auto init = reinterpret_cast<NvmlInit>(::dlsym(h, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdown>(::dlsym(h, "nvmlShutdown"));
  auto handle = reinterpret_cast<NvmlGetHandle>(::dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
  auto name = reinterpret_cast<NvmlGetName>(::dlsym(h, "nvmlDeviceGetName"));
  auto memory = reinterpret_cast<NvmlGetMemory>(::dlsym(h, "nvmlDeviceGetMemoryInfo"));
  auto gen = reinterpret_cast<NvmlGetPcie>(::dlsym(h, "nvmlDeviceGetCurrPcieLinkGeneration"));
  auto width = reinterpret_cast<NvmlGetPcie>(::dlsym(h, "nvmlDeviceGetCurrPcieLinkWidth"));
  bool ok = false;
  if (init && handle && name && memory && init() == 0) {
    nvmlDevice dev = nullptr;
    char buf[96] = {0};
    NvmlMemory mem{};
    if (handle(0, &dev) == 0 && name(dev, buf, sizeof buf) == 0 && memory(dev, &mem) == 0) {
      g.name = buf;
      g.total_bytes = static_cast<double>(mem.total);
      g.free_bytes = static_cast<double>(mem.free);
      unsigned int v = 0;
      if (gen && gen(dev, &v) == 0) g.pcie_generation = static_cast<int>(v);
      if (width && width(dev, &v) == 0) g.pcie_width = static_cast<int>(v);
      g.via = "NVML";
      ok = true;
    } else {
      why += "NVML: no device 0";
    }
    if (shutdown) shutdown();
  } else {
    why += "NVML: initialisation failed (no driver or no GPU)";
  }
  ::dlclose(h);
  return ok;
}

bool try_cuda_driver(DetectedGpu& g, std::string& why) {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    why += std::string("; libcuda.so.1: ") + (e ? e : "not found");
    return false;
  }
  auto init = reinterpret_cast<CuInit>(::dlsym(h, "cuInit"));
  auto count = reinterpret_cast<CuDeviceGetCount>(::dlsym(h, "cuDeviceGetCount"));
  auto get = reinterpret_cast<CuDeviceGet>(::dlsym(h, "cuDeviceGet"));
  auto name = reinterpret_cast<CuDeviceGetName>(::dlsym(h, "cuDeviceGetName"));
  auto total = reinterpret_cast<CuDeviceTotalMem>(::dlsym(h, "cuDeviceTotalMem_v2"));
  bool ok = false;
  int n = 0, dev = 0;
  char buf[96] = {0};
  std::size_t bytes = 0;
  if (init && count && get && name && total && init(0) == 0 && count(&n) == 0 && n > 0 && get(&dev, 0) == 0 &&
      name(buf, sizeof buf, dev) == 0 && total(&bytes, dev) == 0) {
    g.name = buf;
    g.total_bytes = static_cast<double>(bytes);
    g.via = "CUDA driver";
    ok = true;
  } else {
    why += "; CUDA driver: no device";
  }
  ::dlclose(h);
  return ok;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

DetectedGpu detect_gpu() {
  DetectedGpu g;
  std::string why;
  if (try_nvml(g, why) || try_cuda_driver(g, why)) return g;
  throw InputError("--gpu auto: no NVIDIA GPU found on this machine (" + why +
                   "); name the card (--gpu l40s) or give its memory (--vram-gib 24)");
}

std::string catalog_id_for(const std::string& detected_name, double total_bytes) {
  const std::string n = lower(detected_name);
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("h200")) return "h200";
  if (has("h100")) return has("pcie") ? "h100-pcie" : "h100";
  if (has("l40s")) return "l40s";
  if (has("a100")) return total_bytes > 50 * kGiB ? "a100" : "a100-40g";
  if (has("b200")) return "b200";
  if (has("a6000")) return "a6000";
  if (has("5090")) return "5090";
  if (has("4090")) return "4090";
  if (has("3090")) return "3090";
  if (has("mi300x")) return "mi300x";
  return "";
}

double pcie_link_bytes_per_s(int generation, int width) {
  static const double per_lane[] = {0, 0.25e9, 0.5e9, 0.985e9, 1.969e9, 3.938e9, 7.563e9};
  if (generation < 1 || generation > 6 || width <= 0) return 0;
  return per_lane[generation] * width;
}

GpuSpec auto_gpu() {
  const DetectedGpu d = detect_gpu();
  const std::string id = catalog_id_for(d.name, d.total_bytes);
  GpuSpec g;
  if (!id.empty()) {
    g = find_gpu(id);
    g.total_bytes = d.total_bytes;  // what this card really has (MIG slices, 94 GB H100 NVL …)
  } else {
    g = custom_gpu(d.total_bytes / kGiB);
  }
  g.name = d.name + (id.empty() ? " (not in the catalog: compute figures of an RTX A6000)" : "");
  const double link = pcie_link_bytes_per_s(d.pcie_generation, d.pcie_width);
  if (link > 0) g.pcie_bytes_per_s = link;
  g.source = "detected through " + d.via + (d.free_bytes > 0 ? ", " + std::to_string(static_cast<long long>(d.free_bytes / kMiB)) + " MiB free now" : "") +
             (link > 0 ? ", PCIe gen " + std::to_string(d.pcie_generation) + " x" + std::to_string(d.pcie_width) : "");
  return g;
}

double detect_host_memory_bytes(const std::string& meminfo_path) {
  std::ifstream in(meminfo_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    double value = 0;
    if (fields >> key >> value >> unit && key == "MemTotal:" && unit == "kB") return value * 1024;
  }
  return 0;
}

}  // namespace segadvise
