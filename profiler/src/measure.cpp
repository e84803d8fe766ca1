// The profiler's measurements (profiler.hpp) and the LibTorch plumbing they stand on (runtime.hpp).
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/autograd/engine.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/profiler/archetypes.hpp"
#include "segadvise/profiler/profiler.hpp"
#include "segadvise/profiler/runtime.hpp"

#ifdef SEGADVISE_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace segadvise::profiler {

using torch::Tensor;

// ---------------------------------------------------------------------------------------------
// CPU allocator hook: exact live and peak bytes. LibTorch asserts that an allocation's context
// pointer equals its data pointer, so the hook returns DataPtr(ptr, ptr, deleter) and keeps the
// default allocator's own DataPtr (and the size) in a side table.

namespace {

thread_local bool t_host = false;

struct Entry {
  c10::DataPtr original;
  std::size_t bytes = 0;
  bool host = false;
};

struct Tracker {
  std::mutex mu;
  std::unordered_map<void*, Entry> live;
  double device_live = 0, device_peak = 0, host_live = 0;
};

Tracker& tracker() {
  static Tracker* t = new Tracker();  // never destroyed: frees can run during static destruction
  return *t;
}

class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(std::size_t n) const override {
    c10::DataPtr p = base_->allocate(n);
    void* raw = p.get();
    if (!raw) return p;
    Tracker& t = tracker();
    std::lock_guard<std::mutex> g(t.mu);
    if (t_host)
      t.host_live += static_cast<double>(n);
    else {
      t.device_live += static_cast<double>(n);
      t.device_peak = std::max(t.device_peak, t.device_live);
    }
    t.live[raw] = Entry{std::move(p), n, t_host};
    return {raw, raw, &TrackingAllocator::release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &TrackingAllocator::release; }

  static void release(void* raw) {
    Entry e;
    {
      Tracker& t = tracker();
      std::lock_guard<std::mutex> g(t.mu);
      auto it = t.live.find(raw);
      if (it == t.live.end()) return;
      e = std::move(it->second);
      t.live.erase(it);
      if (e.host)
        t.host_live -= static_cast<double>(e.bytes);
      else
        t.device_live -= static_cast<double>(e.bytes);
    }
    // e.original frees the memory through the default allocator's deleter here
  }

 private:
  c10::Allocator* base_;
};

bool g_cpu_hooked = false;

// The autograd engine with C++ saved-tensor hooks (runtime.hpp).
thread_local HookSink* t_sink = nullptr;

class HookingEngine : public torch::autograd::Engine {
 public:
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    return t_sink ? t_sink->make_hooks() : nullptr;
  }
};

torch::autograd::Engine& hooking_engine() {
  static HookingEngine* e = new HookingEngine();  // leaked on purpose: worker threads outlive main
  return *e;
}

}  // namespace

void install_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    // keep freed memory in the process (no munmap/trim): a CUDA caching allocator reuses its
    // blocks, and page faults on fresh mappings would otherwise dominate CPU step times and make
    // a schedule that holds more memory look slower than it is
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    static TrackingAllocator* alloc = new TrackingAllocator(c10::GetDefaultCPUAllocator());
    c10::SetCPUAllocator(alloc, /*priority=*/100);
    g_cpu_hooked = c10::GetCPUAllocator() == alloc;
    torch::autograd::set_default_engine_stub(&hooking_engine);
  });
}

HostScope::HostScope() : prev_(t_host) { t_host = true; }
HostScope::~HostScope() { t_host = prev_; }
SinkScope::SinkScope(HookSink* sink) : prev_(t_sink) { t_sink = sink; }
SinkScope::~SinkScope() { t_sink = prev_; }

bool Memory::cpu_hooked() { return g_cpu_hooked; }

void Memory::reset_peak(const torch::Device& d) {
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(d.index() < 0 ? 0 : d.index());
    return;
  }
#endif
  (void)d;
  Tracker& t = tracker();
  std::lock_guard<std::mutex> g(t.mu);
  t.device_peak = t.device_live;
}

double Memory::live_bytes(const torch::Device& d) {
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda()) {
    const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(d.index() < 0 ? 0 : d.index());
    return static_cast<double>(s.allocated_bytes[0].current);
  }
#endif
  (void)d;
  Tracker& t = tracker();
  std::lock_guard<std::mutex> g(t.mu);
  return t.device_live;
}

double Memory::peak_bytes(const torch::Device& d) {
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda()) {
    const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(d.index() < 0 ? 0 : d.index());
    return static_cast<double>(s.allocated_bytes[0].peak);
  }
#endif
  (void)d;
  Tracker& t = tracker();
  std::lock_guard<std::mutex> g(t.mu);
  return t.device_peak;
}

double Memory::host_live_bytes() {
  Tracker& t = tracker();
  std::lock_guard<std::mutex> g(t.mu);
  return t.host_live;
}

void Memory::empty_cache(const torch::Device& d) {
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda()) {
    synchronize(d);
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#endif
  (void)d;
}

void synchronize(const torch::Device& d) {
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda()) c10::cuda::device_synchronize();
#endif
  (void)d;
}

Tensor to_host(const Tensor& t) {
  if (t.is_cuda()) {
    Tensor h = torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(true));
    h.copy_(t, /*non_blocking=*/false);
    return h;
  }
  HostScope host;
  return t.clone();
}

Tensor to_device(const Tensor& host, const torch::Device& d) {
  if (d.is_cuda()) return host.to(d, /*non_blocking=*/false);
  return host.clone();  // outside a HostScope: device memory again
}

RngState RngState::capture(const torch::Device& d) {
  RngState s;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> g(gen.mutex());
    s.cpu = gen.get_state();
  }
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda()) {
    auto gen = at::cuda::detail::getDefaultCUDAGenerator(d.index() < 0 ? 0 : d.index());
    std::lock_guard<std::mutex> g(gen.mutex());
    s.cuda = gen.get_state();
  }
#endif
  (void)d;
  return s;
}

void RngState::restore(const torch::Device& d) const {
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> g(gen.mutex());
    gen.set_state(cpu);
  }
#ifdef SEGADVISE_TORCH_CUDA
  if (d.is_cuda() && cuda.defined()) {
    auto gen = at::cuda::detail::getDefaultCUDAGenerator(d.index() < 0 ? 0 : d.index());
    std::lock_guard<std::mutex> g(gen.mutex());
    gen.set_state(cuda);
  }
#endif
  (void)d;
}

// ---------------------------------------------------------------------------------------------
// Saved-tensor accounting: every tensor autograd saves during a block's forward, by storage,
// attributed to the side of the part that saved it first. Parameters and constants are excluded.

namespace {

struct Accounting : HookSink {
  std::set<const c10::StorageImpl*> exclude;
  std::unordered_map<const c10::StorageImpl*, std::pair<Side, double>> seen;

  struct Hooks : torch::autograd::SavedVariableHooks {
    Accounting* acc = nullptr;
    Tensor held;
    void call_pack_hook(const Tensor& t) override {
      // holding a detached alias keeps the storage alive exactly as the plain SavedVariable would,
      // without a reference cycle through an output's grad_fn
      held = t.detach();
      const auto* impl = t.storage().unsafeGetStorageImpl();
      if (!acc->exclude.count(impl) && !acc->seen.count(impl)) {
        acc->seen[impl] = {current_side(), static_cast<double>(t.storage().nbytes())};
        static const bool trace = std::getenv("SEGADVISE_TRACE_SAVED") != nullptr;
        if (trace) {
          std::ostringstream os;
          os << t.sizes();
          std::fprintf(stderr, "saved %-9s %-24s %-9s %10zu bytes\n", side_name(current_side()), os.str().c_str(),
                       c10::toString(t.scalar_type()), t.storage().nbytes());
        }
      }
    }
    Tensor call_unpack_hook() override { return held; }
  };
  std::unique_ptr<torch::autograd::SavedVariableHooks> make_hooks() override {
    auto h = std::make_unique<Hooks>();
    h->acc = this;
    return h;
  }
  void exclude_all(const std::vector<Tensor>& ts) {
    for (const auto& t : ts)
      if (t.defined()) exclude.insert(t.storage().unsafeGetStorageImpl());
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<Tensor> tensors_of(const State& s) {
  std::vector<Tensor> v;
  for (const auto& [k, t] : s)
    if (t.defined()) v.push_back(t);
  return v;
}

bool is_oom(const std::string& what) {
  return what.find("out of memory") != std::string::npos || what.find("CUDA out of memory") != std::string::npos ||
         what.find("DefaultCPUAllocator: can't allocate") != std::string::npos ||
         what.find("DefaultCPUAllocator: not enough memory") != std::string::npos;
}

std::string shape_text(const BlockListSpec& spec, const BlockShape& sh) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s block '%s' at %d stream tokens (grid %dx%d), %d text tokens, batch %d",
                to_string(spec.kind).c_str(), spec.name.c_str(), sh.image_tokens, sh.grid_h, sh.grid_w, sh.text_tokens, sh.batch);
  return buf;
}

}  // namespace

std::string torch_version() { return TORCH_VERSION; }

bool cuda_available() { return torch::cuda::is_available(); }

std::string device_name(const std::string& device) {
#ifdef SEGADVISE_TORCH_CUDA
  if (device == "cuda") {
    const auto* prop = at::cuda::getCurrentDeviceProperties();
    return prop->name;
  }
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      std::string name = pos == std::string::npos ? line : line.substr(pos + 2);
      return "cpu: " + name + " (" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cores)";
    }
  }
  return "cpu";
}

static torch::Device torch_device(const std::string& device) {
  if (device == "cpu") return torch::kCPU;
  if (device == "cuda") {
    if (!torch::cuda::is_available())
      throw InputError("--device cuda: this LibTorch (" + torch_version() +
                       ") sees no CUDA device; use --device cpu, or build segadvise-torch against a CUDA LibTorch");
    return torch::Device(torch::kCUDA, 0);
  }
  throw InputError("--device: '" + device + "' is not cpu or cuda");
}

static torch::Dtype run_dtype(const TrainingSetup& setup) {
  const double e = weight_dtype_bytes(setup);
  if (e == 4) return torch::kFloat;
  return setup.mixed_precision == "fp16" ? torch::kHalf : torch::kBFloat16;
}

// The outputs of a block that need a gradient, each with a small constant one (backward's seeds).
static std::pair<std::vector<Tensor>, std::vector<Tensor>> grads_for(const State& out) {
  std::vector<Tensor> outs, grads;
  for (const auto& t : tensors_of(out)) {
    if (!t.requires_grad()) continue;
    outs.push_back(t);
    grads.push_back(torch::ones_like(t) * 0.01);
  }
  return std::make_pair(outs, grads);
}

// Forward, its FFN side and backward timed over opt.repeats runs after opt.warmup (the first allocates
// the adapters' .grad): the medians into `m`.
static void time_block(Block& blk, const BlockListSpec& spec, const BlockShape& shape, const BuildOptions& bo,
                       const ProfileOptions& opt, const torch::Device& dev, int skips_in, ListMeasurement& m) {
  auto progress = [&](const char* what, double secs) {
    if (!opt.quiet && secs > 1.0)
      std::fprintf(stderr, "segadvise profile: %s: %s %.1f s\n", shape_text(spec, shape).c_str(), what, secs);
  };
  std::vector<double> fwd, bwd, ffn_fwd;
  for (int r = 0; r < opt.warmup + opt.repeats; ++r) {
    State in = make_input(spec, shape, bo, skips_in);
    synchronize(dev);
    double t0 = now_s(), ffn_s = 0;
    // the block's parts one by one, timing the FFN side apart (the -ffn backends recompute it)
    State s = in;
    for (const auto& p : blk.parts) {
      set_current_side(p.side);
      const double p0 = now_s();
      for (auto& [key, v] : p.fn(s)) s[key] = v;
      synchronize(dev);
      if (p.side == Side::Ffn) ffn_s += now_s() - p0;
    }
    set_current_side(Side::Rest);
    State out = boundary_of(s);
    s.clear();
    synchronize(dev);
    double t1 = now_s();
    auto [outs, grads] = grads_for(out);
    out.clear();
    synchronize(dev);
    double t2 = now_s();
    torch::autograd::backward(outs, grads);
    synchronize(dev);
    double t3 = now_s();
    if (r >= opt.warmup) {
      fwd.push_back(t1 - t0);
      bwd.push_back(t3 - t2);
      ffn_fwd.push_back(ffn_s);
    }
    progress(r < opt.warmup ? "warm-up forward+backward" : "forward+backward", t3 - t0);
  }
  m.forward_s = median(fwd);
  m.backward_s = median(bwd);
  m.ffn_forward_s = median(ffn_fwd);
}

// Saved bytes by side through the saved-tensor hooks, the boundary, and the transient workspace of
// forward and backward, into `m`.
static void measure_block_memory(Block& blk, const BlockListSpec& spec, const BlockShape& shape, const BuildOptions& bo,
                                 const torch::Device& dev, int skips_in, ListMeasurement& m) {
  State in = make_input(spec, shape, bo, skips_in);
  Memory::empty_cache(dev);
  Accounting acc;
  acc.exclude_all(blk.frozen);
  acc.exclude_all(blk.trainable);
  const double in_bytes = state_bytes(in);
  m.boundary_bytes = in_bytes;
  const double live0 = Memory::live_bytes(dev);
  Memory::reset_peak(dev);
  State out;
  {
    SinkScope sink(&acc);
    out = blk.forward(in);
  }
  synchronize(dev);
  const double fwd_peak = Memory::peak_bytes(dev) - live0;
  const double live1 = Memory::live_bytes(dev);
  double saved[3] = {0, 0, 0};
  double saved_input = 0;
  std::set<const c10::StorageImpl*> in_storages;
  for (const auto& t : tensors_of(in)) in_storages.insert(t.storage().unsafeGetStorageImpl());
  for (const auto& [impl, sb] : acc.seen) {
    saved[static_cast<int>(sb.first)] += sb.second;
    if (in_storages.count(impl)) saved_input += sb.second;
  }
  m.saved_attention_bytes = saved[0];
  m.saved_ffn_bytes = saved[1];
  m.saved_rest_bytes = saved[2];
  // output storages that are new (a block may pass a stream through unchanged)
  double out_new = 0;
  {
    std::set<const c10::StorageImpl*> seen_out;
    for (const auto& t : tensors_of(out)) {
      const auto* impl = t.storage().unsafeGetStorageImpl();
      if (!in_storages.count(impl) && seen_out.insert(impl).second) out_new += t.storage().nbytes();
    }
  }
  m.hooks_retained_bytes = m.saved_bytes() - saved_input;
  if (!dev.is_cuda() && Memory::cpu_hooked()) m.allocator_retained_bytes = live1 - live0 - out_new;
  if (dev.is_cuda()) m.allocator_retained_bytes = live1 - live0 - out_new;
  // forward: the timeline counts saved + transient + one boundary (the output) while a block runs
  const double transient_fwd = fwd_peak - (m.saved_bytes() - saved_input) - out_new;
  // backward: saved + incoming and outgoing gradient (2 x boundary) + transient
  auto [outs, grads] = grads_for(out);
  out.clear();
  synchronize(dev);
  const double live2 = Memory::live_bytes(dev);
  Memory::reset_peak(dev);
  torch::autograd::backward(outs, grads);
  synchronize(dev);
  const double bwd_peak = Memory::peak_bytes(dev) - live2;
  const double transient_bwd = bwd_peak - m.boundary_bytes;
  m.transient_bytes = std::max({0.0, transient_fwd, transient_bwd});
}

ListMeasurement measure_list(const Family& fam, const BlockListSpec& spec, const TrainingSetup& setup,
                             const ProfileOptions& opt, double scale) {
  install_hooks();
  const torch::Device dev = torch_device(opt.device);
  BuildOptions bo;
  bo.dtype = run_dtype(setup);
  bo.device = dev;
  bo.lora = lora_setup(fam, setup);
  BlockShape shape = block_shape(fam, spec, setup);
  if (scale < 1.0) shape = scaled_shape(shape, scale);

  ListMeasurement m;
  m.list = spec.name;
  m.kind = to_string(spec.kind);
  const double unscaled_stream = spec.token_scale > 0 ? shape.image_tokens / spec.token_scale : shape.image_tokens;
  m.tokens = list_tokens(spec, std::round(unscaled_stream), shape.text_tokens) * shape.batch;
  try {
    torch::AutoGradMode grad(true);
    Block blk = make_block(spec, shape, bo);
    m.frozen_params = blk.frozen_params();
    m.trainable_params = blk.trainable_params();
    const int skips_in = spec.skip == "pop" ? 1 : 0;
    time_block(blk, spec, shape, bo, opt, dev, skips_in, m);
    measure_block_memory(blk, spec, shape, bo, dev, skips_in, m);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (is_oom(what))
      throw InputError("profile: out of memory on " + opt.device + " while running " + shape_text(spec, shape) +
                       "; try a smaller --tokens (e.g. --tokens " + std::to_string(std::max(64, shape.image_tokens / 2)) +
                       ") so the profiler measures smaller shapes and extrapolates");
    throw;
  } catch (const std::bad_alloc&) {
    throw InputError("profile: out of host memory while running " + shape_text(spec, shape) +
                     "; try a smaller --tokens (e.g. --tokens " + std::to_string(std::max(64, shape.image_tokens / 2)) + ")");
  }
  return m;
}

PcieBandwidth measure_pcie(const torch::Device& dev);

PcieBandwidth measure_pcie_on(const std::string& device) {
  install_hooks();
  return measure_pcie(torch_device(device));
}

namespace {

// Least-squares fit t = a n + b n^2 through the origin (b clamped at 0: a negative quadratic term
// from timing noise would make large shapes cheaper than small ones).
std::pair<double, double> fit_time(const std::vector<double>& n, const std::vector<double>& t) {
  if (n.size() == 1) return {t[0] / n[0], 0.0};
  double s11 = 0, s12 = 0, s22 = 0, y1 = 0, y2 = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double x1 = n[i], x2 = n[i] * n[i];
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    y1 += x1 * t[i];
    y2 += x2 * t[i];
  }
  const double det = s11 * s22 - s12 * s12;
  double a = det != 0 ? (y1 * s22 - y2 * s12) / det : 0, b = det != 0 ? (s11 * y2 - s12 * y1) / det : 0;
  if (b < 0 || a < 0) {  // refit linear only
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n.size(); ++i) {
      num += n[i] * t[i];
      den += n[i] * n[i];
    }
    a = num / den;
    b = 0;
  }
  return {a, b};
}

// bytes = c + s n (the text-side tensors of cross-attention do not grow with the stream)
double fit_bytes_at(const std::vector<double>& n, const std::vector<double>& y, double target) {
  if (n.size() == 1) return y[0] * target / n[0];
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    mx += n[i];
    my += y[i];
  }
  mx /= n.size();
  my /= n.size();
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    sxy += (n[i] - mx) * (y[i] - my);
    sxx += (n[i] - mx) * (n[i] - mx);
  }
  const double s = sxx > 0 ? sxy / sxx : 0;
  return std::max(0.0, my + s * (target - mx));
}

std::string list_signature(const BlockListSpec& s) {
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s|%d|%d|%d|%d|%s|%s|%d|%d|%g|%s|%d|%d|%d", to_string(s.kind).c_str(), s.hidden, s.heads,
                s.head_dim, s.ffn_hidden, s.ffn_act.c_str(), s.tokens.c_str(), s.cross_attention, s.text_hidden,
                s.token_scale, s.skip.c_str(), s.moe_experts, s.moe_active, s.moe_shared_hidden);
  return buf;
}

double available_bytes(const torch::Device& dev) {
#ifdef SEGADVISE_TORCH_CUDA
  if (dev.is_cuda()) {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) return static_cast<double>(free_b);
  }
#endif
  (void)dev;
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace

Profile run_profile(const Family& fam, const TrainingSetup& setup, const ProfileOptions& opt) {
  install_hooks();
  const torch::Device dev = torch_device(opt.device);
  if (setup.lora_type == LoraType::Lycoris)
    throw InputError("profile: --lora-type lycoris has no LibTorch archetype yet (standard LoRA and full are measured)");
  Profile p;
  p.family = fam.id;
  p.precision = precision_key(setup);
  p.device = device_name(opt.device);
  p.gpu_id = dev.is_cuda() ? "" : "cpu";
  const torch::Dtype dt = run_dtype(setup);
  p.dtype = dt == torch::kFloat ? "float32" : dt == torch::kHalf ? "float16" : "bfloat16";
  p.torch_version = torch_version();
  p.created_by = "segadvise-torch";
  const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  p.tokens_image = g.image_tokens;
  p.tokens_text = g.text_tokens;
  p.batch = std::max(1, setup.batch);
  if (precision_info(setup.base_precision).quantized)
    p.notes.push_back("base weights run in " + p.dtype + ": the archetypes do not quantize (" + setup.base_precision +
                      "); activations and adapters are what the quantized run saves");

  const BlockChain chain = analyze(fam, setup);
  std::map<std::string, ProfiledKind> done;  // by list signature
  for (const auto& spec : fam.block_lists) {
    const std::string sig = list_signature(spec);
    if (done.count(sig)) {
      ProfiledKind k = done[sig];
      k.list = spec.name;
      p.kinds.push_back(k);
      continue;
    }
    // the static estimate of one block of this list decides whether the target shape fits
    double est_bytes = 0;
    for (const auto& b : chain.blocks)
      if (b.list == spec.name) {
        est_bytes = b.saved_bytes() + 3 * b.boundary_bytes + b.transient_bytes;
        break;
      }
    const double stream_tokens = g.image_tokens * spec.token_scale * p.batch;
    double scale = 1.0;
    if (opt.max_tokens > 0 && stream_tokens > opt.max_tokens) scale = opt.max_tokens / stream_tokens;
    const double room = 0.5 * available_bytes(dev);
    if (est_bytes * scale > room) scale = std::min(scale, room / est_bytes);
    std::vector<ListMeasurement> ms;
    if (scale >= 1.0) {
      ms.push_back(measure_list(fam, spec, setup, opt, 1.0));
      // a second, smaller point separates the linear and quadratic time terms when it is cheap
      if (ms[0].forward_s + ms[0].backward_s < 2.0 && stream_tokens >= 64)
        ms.push_back(measure_list(fam, spec, setup, opt, 0.5));
    } else {
      for (double s : {scale, scale / 2, scale / 4}) ms.push_back(measure_list(fam, spec, setup, opt, s));
    }
    ProfiledKind k;
    k.list = spec.name;
    k.kind = to_string(spec.kind);
    const double target = list_tokens(spec, g.image_tokens, g.text_tokens) * p.batch;
    k.tokens = target;
    k.extrapolated = scale < 1.0;
    std::vector<double> n, a, f, r, bnd, tr, tf, tb, tff;
    for (const auto& m : ms) {
      n.push_back(m.tokens);
      a.push_back(m.saved_attention_bytes);
      f.push_back(m.saved_ffn_bytes);
      r.push_back(m.saved_rest_bytes);
      bnd.push_back(m.boundary_bytes);
      tr.push_back(m.transient_bytes);
      tf.push_back(m.forward_s);
      tb.push_back(m.backward_s);
      tff.push_back(m.ffn_forward_s);
      k.measured_tokens.push_back(m.tokens);
    }
    if (!k.extrapolated) {  // bytes exactly as measured at the target
      k.saved_attention_bytes = a[0];
      k.saved_ffn_bytes = f[0];
      k.saved_rest_bytes = r[0];
      k.boundary_bytes = bnd[0];
      k.transient_bytes = tr[0];
    } else {
      k.saved_attention_bytes = fit_bytes_at(n, a, target);
      k.saved_ffn_bytes = fit_bytes_at(n, f, target);
      k.saved_rest_bytes = fit_bytes_at(n, r, target);
      k.boundary_bytes = fit_bytes_at(n, bnd, target);
      k.transient_bytes = fit_bytes_at(n, tr, target);
    }
    auto [fl, fq] = fit_time(n, tf);
    auto [bl, bq] = fit_time(n, tb);
    auto [ffl, ffq] = fit_time(n, tff);
    k.ffn_forward_linear_s = ffl;
    k.ffn_forward_quadratic_s = ffq;
    if (!k.extrapolated && n.size() == 2) {
      // exact at the target point: the fit passes through it, the smaller point sets the curvature
    }
    if (!k.extrapolated) {
      // the fit must give back the time measured at the target: when the quadratic term was
      // dropped (noise made it negative), the linear term goes through the target point
      if (fq == 0) fl = tf[0] / n[0];
      if (bq == 0) bl = tb[0] / n[0];
      if (ffq == 0) k.ffn_forward_linear_s = tff[0] / n[0];
    }
    k.forward_linear_s = fl;
    k.forward_quadratic_s = fq;
    k.backward_linear_s = bl;
    k.backward_quadratic_s = bq;
    done[sig] = k;
    p.kinds.push_back(k);
  }
  p.attention_backend = attention_backend_name();
  if (dev.is_cuda()) p.pcie = measure_pcie(dev);
  return p;
}

// Host<->device copies of 256 MiB through LibTorch (cudaMemcpy underneath), pinned and pageable,
// both directions; the median of 5 after a warm-up.
PcieBandwidth measure_pcie(const torch::Device& dev) {
  PcieBandwidth bw;
  if (!dev.is_cuda()) return bw;
  const int64_t n = 256LL * 1024 * 1024;
  auto timed = [&](const Tensor& dst, const Tensor& src) {
    std::vector<double> t;
    for (int i = 0; i < 6; ++i) {
      synchronize(dev);
      const double t0 = now_s();
      dst.copy_(src, /*non_blocking=*/false);
      synchronize(dev);
      if (i > 0) t.push_back(now_s() - t0);
    }
    return static_cast<double>(n) / std::max(1e-9, median(t));
  };
  Tensor d = torch::empty({n}, torch::TensorOptions().dtype(torch::kUInt8).device(dev));
  Tensor pinned = torch::empty({n}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
  Tensor pageable = torch::empty({n}, torch::TensorOptions().dtype(torch::kUInt8));
  pageable.fill_(1);
  pinned.fill_(1);
  bw.h2d_pinned_bytes_per_s = timed(d, pinned);
  bw.d2h_pinned_bytes_per_s = timed(pinned, d);
  bw.h2d_pageable_bytes_per_s = timed(d, pageable);
  bw.d2h_pageable_bytes_per_s = timed(pageable, d);
  return bw;
}

}  // namespace segadvise::profiler
