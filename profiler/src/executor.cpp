// The checkpoint executor and validation runs (validate.hpp).
//
// LibTorch has no torch.utils.checkpoint, so a checkpoint call is a custom autograd Function:
// forward runs its blocks (or one block's FFN parts) without building a graph and keeps only its
// input state — in pinned host memory for the unsloth backends; backward restores the RNG state
// (dropout masks repeat), re-runs the work with grad enabled, back-propagates through it (the
// adapters' gradients accumulate there) and returns the gradient of the input state. Attention
// offload packs the tensors autograd saves while an attention part runs into host memory and
// unpacks them for backward (saved-tensor hooks, runtime.hpp).
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/profiler/archetypes.hpp"
#include "segadvise/profiler/profiler.hpp"
#include "segadvise/profiler/runtime.hpp"
#include "segadvise/profiler/validate.hpp"
#include "stack.hpp"

namespace segadvise::profiler {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What one checkpoint call runs: a function of a state, with the key order of its flat inputs.
struct Runner {
  std::function<State(const State&)> fn;
  std::vector<std::string> in_keys, out_keys;
  std::vector<bool> in_requires_grad;
  bool offload = false;
  std::vector<Tensor> host_inputs;
  torch::Device device = torch::kCPU;
  RngState rng;
};

std::mutex g_runners_mu;
std::unordered_map<int64_t, std::shared_ptr<Runner>> g_runners;
int64_t g_next_runner = 1;

int64_t register_runner(std::shared_ptr<Runner> r) {
  std::lock_guard<std::mutex> g(g_runners_mu);
  const int64_t id = g_next_runner++;
  g_runners[id] = std::move(r);
  return id;
}

std::shared_ptr<Runner> take_runner(int64_t id) {
  std::lock_guard<std::mutex> g(g_runners_mu);
  auto it = g_runners.find(id);
  if (it == g_runners.end()) return nullptr;
  auto r = it->second;
  g_runners.erase(it);
  return r;
}

State to_state(const std::vector<std::string>& keys, const variable_list& v) {
  State s;
  for (std::size_t i = 0; i < keys.size(); ++i) s[keys[i]] = v[i];
  return s;
}

struct CheckpointFn : public torch::autograd::Function<CheckpointFn> {
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, int64_t id) {
    std::shared_ptr<Runner> r;
    {
      std::lock_guard<std::mutex> g(g_runners_mu);
      r = g_runners.at(id);
    }
    ctx->saved_data["id"] = id;
    r->rng = RngState::capture(r->device);
    State out = r->fn(to_state(r->in_keys, inputs.vec()));  // grad mode is off inside a Function's forward
    r->out_keys.clear();
    variable_list outs;
    for (const auto& [k, v] : out) {
      if (!v.defined()) continue;
      r->out_keys.push_back(k);
      outs.push_back(v);
    }
    if (r->offload) {
      for (const auto& t : inputs) r->host_inputs.push_back(to_host(t));
    } else {
      ctx->save_for_backward(inputs.vec());
    }
    return outs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t id = ctx->saved_data["id"].toInt();
    std::shared_ptr<Runner> r = take_runner(id);
    TORCH_CHECK(r, "segadvise checkpoint: backward ran twice");
    variable_list inputs;
    if (r->offload) {
      for (const auto& h : r->host_inputs) inputs.push_back(to_device(h, r->device));
      r->host_inputs.clear();
    } else {
      inputs = ctx->get_saved_variables();
    }
    variable_list detached;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      detached.push_back(inputs[i].detach().requires_grad_(r->in_requires_grad[i]));
    inputs.clear();
    const RngState now = RngState::capture(r->device);
    r->rng.restore(r->device);
    State out;
    {
      torch::AutoGradMode grad(true);
      const bool prev = in_recompute();
      set_in_recompute(true);
      out = r->fn(to_state(r->in_keys, detached));
      set_in_recompute(prev);
    }
    now.restore(r->device);
    variable_list outs, gs;
    for (std::size_t i = 0; i < r->out_keys.size(); ++i) {
      const Tensor& o = out.at(r->out_keys[i]);
      if (!o.requires_grad() || !grads[i].defined()) continue;
      outs.push_back(o);
      gs.push_back(grads[i]);
    }
    out.clear();
    if (!outs.empty()) torch::autograd::backward(outs, gs);
    variable_list result;
    for (auto& d : detached) result.push_back(d.requires_grad() ? d.grad() : Tensor());
    result.push_back(Tensor());  // the runner id
    return result;
  }
};

State run_checkpoint(std::function<State(const State&)> fn, const State& in, bool offload, const torch::Device& dev) {
  auto r = std::make_shared<Runner>();
  r->fn = std::move(fn);
  r->offload = offload;
  r->device = dev;
  variable_list inputs;
  for (const auto& [k, v] : in) {
    if (!v.defined()) continue;
    r->in_keys.push_back(k);
    r->in_requires_grad.push_back(v.requires_grad());
    inputs.push_back(v);
  }
  const int64_t id = register_runner(r);
  // a TensorList (not a std::vector) so that apply() sees the inputs as variables and records a node
  variable_list outs = CheckpointFn::apply(torch::TensorList(inputs), id);
  State out;
  for (std::size_t i = 0; i < r->out_keys.size(); ++i) out[r->out_keys[i]] = outs[i];
  return out;
}

// Attention offload: tensors saved while an attention part runs (outside a recompute) go to host
// memory; one host copy per distinct tensor of the block.
struct OffloadSink : HookSink {
  torch::Device device = torch::kCPU;
  // one host copy per distinct device tensor of this block; the entry holds the device tensor
  // until the block's forward ends, so its storage address cannot be reused by another tensor
  // while the key is live
  std::map<std::tuple<const void*, int64_t, std::vector<int64_t>>, std::pair<Tensor, Tensor>> cache;
  struct Hooks : torch::autograd::SavedVariableHooks {
    OffloadSink* sink = nullptr;
    Tensor held, host;
    torch::Device device = torch::kCPU;
    void call_pack_hook(const Tensor& t) override {
      device = sink->device;
      if (current_side() != Side::Attention || in_recompute()) {
        held = t.detach();
        return;
      }
      auto key = std::make_tuple(static_cast<const void*>(t.storage().unsafeGetStorageImpl()), t.storage_offset(),
                                 t.sizes().vec());
      auto it = sink->cache.find(key);
      if (it != sink->cache.end() && it->second.second.strides() == t.strides()) {
        host = it->second.second;
      } else {
        host = to_host(t.detach());
        sink->cache[key] = {t.detach(), host};
      }
    }
    Tensor call_unpack_hook() override { return held.defined() ? held : to_device(host, device); }
  };
  std::unique_ptr<torch::autograd::SavedVariableHooks> make_hooks() override {
    auto h = std::make_unique<Hooks>();
    h->sink = this;
    return h;
  }
};

// One block's forward as the plan wants it: plain, FFN parts checkpointed, attention offloaded.
State run_block(const Block& b, const State& in, BlockMode mode, bool offload_to_host, bool offload_attention,
                const torch::Device& dev) {
  OffloadSink sink;
  sink.device = dev;
  std::unique_ptr<SinkScope> scope;
  if (offload_attention) scope = std::make_unique<SinkScope>(&sink);
  State s = in;
  const Side outer = current_side();
  for (const auto& p : b.parts) {
    set_current_side(p.side);
    State w;
    if (mode == BlockMode::CheckpointFfn && p.side == Side::Ffn) {
      SinkScope none(nullptr);
      const Side side = p.side;
      auto fn = p.fn;
      w = run_checkpoint(
          [fn, side](const State& st) {
            const Side prev = current_side();
            set_current_side(side);
            State r = fn(st);
            set_current_side(prev);
            return r;
          },
          s, offload_to_host, dev);
    } else {
      w = p.fn(s);
    }
    for (auto& [k, v] : w) s[k] = v;
  }
  set_current_side(outer);
  return boundary_of(s);
}

}  // namespace

Stack build_stack(const Family& fam, const TrainingSetup& setup, int n_blocks, const ValidateOptions& opt) {
  install_hooks();
  Stack st;
  if (opt.device == "cuda") {
    if (!cuda_available()) throw InputError("--device cuda: this LibTorch sees no CUDA device; use --device cpu");
    st.device = torch::Device(torch::kCUDA, 0);
  } else if (opt.device != "cpu") {
    throw InputError("--device: '" + opt.device + "' is not cpu or cuda");
  }
  BuildOptions bo;
  bo.dtype = weight_dtype_bytes(setup) == 4 ? torch::kFloat
             : setup.mixed_precision == "fp16" ? torch::kHalf
                                               : torch::kBFloat16;
  bo.device = st.device;
  bo.lora = lora_setup(fam, setup);
  bo.shared = std::make_shared<std::map<std::string, Tensor>>();
  if (setup.lora_type == LoraType::Lycoris) throw InputError("validate: --lora-type lycoris has no LibTorch archetype yet");
  int made = 0;
  const BlockListSpec* first = nullptr;
  for (const auto& spec : fam.block_lists) {
    if (!spec.skip.empty())
      throw InputError("validate: " + fam.name + " carries U-Net skip tensors between blocks (list " + spec.name +
                       "); the executor runs stacks without skips");
    for (int i = 0; i < spec.count && made < n_blocks; ++i, ++made) {
      if (!first) first = &spec;
      const BlockShape shape = block_shape(fam, spec, setup);
      bo.seed = opt.seed + made;
      st.blocks.push_back(make_block(spec, shape, bo));
      st.attention_offloadable.push_back(fam.checkpointing.attention_offload && traits(spec.kind).attention);
      for (const auto& t : st.blocks.back().trainable) st.trainable.push_back(t);
    }
  }
  if (st.blocks.empty()) throw InputError("validate: no blocks to run");
  // every block of the stack must see the state the previous one leaves
  for (std::size_t i = 1; i < st.blocks.size(); ++i)
    if (st.blocks[i].kind != st.blocks[0].kind)
      throw InputError("validate: the first " + std::to_string(st.blocks.size()) + " blocks of " + fam.name +
                       " mix block kinds (" + st.blocks[0].kind + ", " + st.blocks[i].kind +
                       ") whose states differ; use --blocks to stay within the first list");
  st.first = *first;
  st.shape = block_shape(fam, *first, setup);
  st.build = bo;
  st.input = stack_input(st, opt.seed);
  return st;
}

State stack_input(const Stack& st, uint64_t seed) {
  torch::manual_seed(seed);
  State in = make_input(st.first, st.shape, st.build, 0);
  // leaves: the hidden state entering the stack requires grad (every block then sees the
  // steady-state input of a block deep in a network, and the first checkpoint gets a graph node)
  for (auto& [k, v] : in) v = v.detach().requires_grad_(true);
  return in;
}

namespace {

State run_plan(const Stack& st, const Plan& plan, const State& in) {
  State s = in;
  for (const auto& seg : plan.segments) {
    if (seg.mode == BlockMode::Checkpoint) {
      const Stack* stp = &st;
      const int b = seg.begin, e = seg.end;
      s = run_checkpoint(
          [stp, b, e](const State& x) {
            State y = x;
            for (int i = b; i < e; ++i) y = stp->blocks[i].forward(y);
            return y;
          },
          s, seg.offload_to_host, st.device);
    } else {
      for (int i = seg.begin; i < seg.end; ++i)
        s = run_block(st.blocks[i], s, seg.mode, seg.offload_to_host,
                      plan.offload_attention && st.attention_offloadable[i], st.device);
    }
  }
  return s;
}

void check_plan(const Plan& plan, int n) {
  int next = 0;
  for (const auto& s : plan.segments) {
    if (s.begin != next || s.end <= s.begin || s.end > n)
      throw InputError("validate: the plan's segments must cover blocks 0.." + std::to_string(n - 1) +
                       " in order, got [" + std::to_string(s.begin) + "," + std::to_string(s.end) + ")");
    next = s.end;
  }
  if (next != n) throw InputError("validate: the plan covers " + std::to_string(next) + " of " + std::to_string(n) + " blocks");
}

}  // namespace

void step(const Stack& st, const Plan& plan) {
  State out = run_plan(st, plan, st.input);
  std::vector<Tensor> outs, grads;
  for (const auto& [k, v] : out) {
    if (!v.defined() || !v.requires_grad()) continue;
    outs.push_back(v);
    // d loss / d out of a mean-squared loss against a fixed target, without keeping the target
    grads.push_back(torch::full_like(v, 1.0 / static_cast<double>(v.numel())));
  }
  out.clear();
  torch::autograd::backward(outs, grads);
}

namespace {

bool is_oom(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("DefaultCPUAllocator: can't allocate") != std::string::npos ||
         what.find("not enough memory") != std::string::npos;
}

}  // namespace

ValidateRun run_validation(const Family& fam, const TrainingSetup& setup, const Plan& plan, const ValidateOptions& opt) {
  int total = 0;
  for (const auto& l : fam.block_lists) total += l.count;
  const int n = opt.blocks > 0 ? std::min(opt.blocks, total) : total;
  ValidateRun run;
  try {
    Stack st = build_stack(fam, setup, n, opt);
    check_plan(plan, static_cast<int>(st.blocks.size()));
    torch::optim::AdamW adam(st.trainable, torch::optim::AdamWOptions(opt.learning_rate));
    for (int s = 0; s < opt.warmup + opt.steps; ++s) {
      synchronize(st.device);
      Memory::empty_cache(st.device);
      run.static_bytes = Memory::live_bytes(st.device);
      Memory::reset_peak(st.device);
      const double host0 = Memory::host_live_bytes();
      double host_peak = 0;
      const double t0 = now_s();
      step(st, plan);
      adam.step();
      adam.zero_grad();
      for (auto& [k, v] : st.input)
        if (v.grad().defined()) v.mutable_grad() = Tensor();
      synchronize(st.device);
      const double t1 = now_s();
      host_peak = std::max(host_peak, Memory::host_live_bytes() - host0);
      if (s >= opt.warmup) {
        run.step_times_s.push_back(t1 - t0);
        run.peak_bytes = std::max(run.peak_bytes, Memory::peak_bytes(st.device));
      }
      if (!opt.quiet && t1 - t0 > 1.0)
        std::fprintf(stderr, "segadvise validate: %s step %d/%d: %.1f s\n", plan.description.c_str(), s + 1,
                     opt.warmup + opt.steps, t1 - t0);
    }
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (is_oom(what))
      throw InputError("validate: out of memory on " + opt.device + " running " + std::to_string(n) + " blocks of " +
                       fam.name + " (" + plan.description + "); try fewer --blocks or a smaller --tokens/--resolution");
    throw;
  } catch (const std::bad_alloc&) {
    throw InputError("validate: out of host memory running " + std::to_string(n) + " blocks of " + fam.name +
                     "; try fewer --blocks or a smaller --tokens/--resolution");
  }
  std::vector<double> t = run.step_times_s;
  std::sort(t.begin(), t.end());
  run.step_s = t.empty() ? 0 : (t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]));
  run.plan_description = plan.description;
  return run;
}

GradientCheck compare_gradients(const Family& fam, const TrainingSetup& setup, const Plan& plan,
                                const ValidateOptions& opt) {
  int total = 0;
  for (const auto& l : fam.block_lists) total += l.count;
  const int n = opt.blocks > 0 ? std::min(opt.blocks, total) : total;
  Stack st = build_stack(fam, setup, n, opt);
  check_plan(plan, static_cast<int>(st.blocks.size()));
  Plan keep;
  for (int i = 0; i < n; ++i) keep.segments.push_back(Segment{i, i + 1, BlockMode::Keep, false});
  auto grads_of = [&](const Plan& p) {
    for (auto& t : st.trainable)
      if (t.grad().defined()) t.mutable_grad() = Tensor();
    for (auto& [k, v] : st.input)
      if (v.grad().defined()) v.mutable_grad() = Tensor();
    torch::manual_seed(opt.seed + 99);  // the same dropout masks in both runs
    step(st, p);
    std::vector<Tensor> g;
    for (auto& t : st.trainable) g.push_back(t.grad().defined() ? t.grad().clone() : torch::zeros_like(t));
    for (auto& [k, v] : st.input) g.push_back(v.grad().defined() ? v.grad().clone() : torch::zeros_like(v));
    return g;
  };
  const auto ref = grads_of(keep);
  const auto got = grads_of(plan);
  GradientCheck c;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    c.max_abs_grad = std::max(c.max_abs_grad, ref[i].abs().max().item<double>());
    const double diff = (ref[i].to(torch::kFloat) - got[i].to(torch::kFloat)).abs().max().item<double>();
    if (std::getenv("SEGADVISE_TRACE_GRADS"))
      std::fprintf(stderr, "grad %zu: ref %.4g got %.4g diff %.4g\n", i, ref[i].abs().max().item<double>(),
                   got[i].abs().max().item<double>(), diff);
    c.max_abs_diff = std::max(c.max_abs_diff, diff);
    ++c.tensors;
  }
  return c;
}

BlockChain validation_chain(const Family& fam, const TrainingSetup& setup, int n_blocks) {
  BlockChain chain = analyze(fam, setup);
  const int n = n_blocks > 0 ? std::min<int>(n_blocks, static_cast<int>(chain.blocks.size()))
                             : static_cast<int>(chain.blocks.size());
  chain.blocks.resize(n);
  chain.outside_params = 0;
  chain.outside_activation_bytes = 0;
  chain.outside_matmul_flops = 0;
  return chain;
}

GpuSpec cpu_gpu_spec() {
  GpuSpec g;
  g.id = "cpu";
  g.name = device_name("cpu");
  g.total_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  g.bf16_flops_per_s = 1e12;  // unused when every block time comes from a profile
  const double copy = host_copy_bytes_per_s();
  g.mem_bytes_per_s = copy;
  g.pcie_bytes_per_s = copy;  // "offload to host" on a CPU is a memcpy
  g.source = "this machine's CPU";
  return g;
}

void use_cpu_coefficients(Coefficients& coef) {
  GpuCoefficients g;
  g.overhead_s = 0;
  g.pcie_efficiency = 1;
  g.reserve_bytes = 0;
  coef.gpu["cpu"] = g;
  coef.fragmentation = 0;
  coef.offload_overlap = 0;
}

double host_copy_bytes_per_s() {
  install_hooks();
  Tensor a = torch::ones({32 * 1024 * 1024 / 4}, torch::kFloat);
  Tensor b = torch::empty_like(a);
  b.copy_(a);
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    const double t0 = now_s();
    b.copy_(a);
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return static_cast<double>(a.nbytes()) / std::max(1e-9, t[2]);
}

}  // namespace segadvise::profiler
