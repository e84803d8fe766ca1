// The distributed runner of `validate --gpus N` (profiler/distributed.hpp has what it does and why).
//
// Gloo in LibTorch 1.13 reduces no bfloat16 and knows no reduce-scatter, so every collective moves
// bytes (tensors viewed as uint8) and the runner sums on its side: a reduce-scatter is N-1 sends of
// the rank's chunks plus N receives in rank order, piece by piece into one small buffer, each added
// to the rank's shard; an all-reduce is a reduce-scatter followed by an all-gather.
#include "segadvise/profiler/distributed.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
// USE_C10D_GLOO: LibTorch's Gloo process group and its headers were found (profiler/CMakeLists.txt).
// A LibTorch without them (a PyTorch wheel ships no gloo/ headers) builds everything but the ranks.
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "segadvise/costmodel/precision.hpp"
#include "segadvise/profiler/profiler.hpp"
#include "stack.hpp"

namespace segadvise::profiler {

using torch::Tensor;

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

#ifdef USE_C10D_GLOO
namespace {

constexpr int64_t kPieceBytes = 64 * 1024;    // receive buffer of a reduction
constexpr uint32_t kFirstTag = 1u << 20;      // point-to-point tags, far from Gloo's collective slots

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// What the rank holds, by kind, and the peak of the sum.
struct Account {
  HeldBytes now, peak;
  void add(double HeldBytes::*kind, double bytes) {
    now.*kind += bytes;
    if (now.total_bytes() > peak.total_bytes()) peak = now;
  }
  void reset_peak() { peak = now; }
};

// One block's tensors as flat buffers: base weights then trainable tensors, each list in its own
// flat buffer padded to N shards; the block's tensors become views of them.
struct Unit {
  std::vector<Tensor> frozen, trainable;
  Tensor frozen_flat, train_flat;    // [N * s] the full (gathered) unit
  int64_t frozen_shard = 0, train_shard = 0;  // s: elements per rank
  Tensor frozen_own, train_own;      // zero3/fsdp2: the rank's persistent shards
  Tensor opt_param;                  // sharded strategies: the optimizer's parameter (the owned elements)
  Tensor grad_flat;                  // the unit's full gradient [N * s_t]
  Tensor grad_own;                   // zero2/3/fsdp2: the reduced gradient shard
  int64_t train_numel = 0;
};

Tensor make_flat(std::vector<Tensor>& ts, int64_t padded, const torch::TensorOptions& o) {
  torch::NoGradGuard ng;
  Tensor flat = torch::zeros({padded}, o);
  int64_t off = 0;
  for (auto& t : ts) {
    const int64_t n = t.numel();
    Tensor view = flat.narrow(0, off, n).view(t.sizes());
    view.copy_(t);
    t.set_data(view);
    off += n;
  }
  return flat;
}

int64_t numel_of(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const auto& t : ts) n += t.numel();
  return n;
}

double nbytes(const Tensor& t) { return t.defined() ? static_cast<double>(t.nbytes()) : 0.0; }

// The block's unit tensors: its trainable tensors and its base weights (2-D/4-D, as
// Block::frozen_params counts them), without the constants the blocks share.
void unit_tensors(const Block& b, const std::set<const void*>& shared, Unit& u) {
  std::set<const void*> seen;
  for (const auto& t : b.trainable) {
    seen.insert(t.unsafeGetTensorImpl());
    u.trainable.push_back(t);
  }
  for (const auto& t : b.frozen) {
    if (t.requires_grad() || (t.dim() != 2 && t.dim() != 4)) continue;
    if (shared.count(t.storage().unsafeGetStorageImpl()) || !seen.insert(t.unsafeGetTensorImpl()).second) continue;
    u.frozen.push_back(t);
  }
}

// Local gradient of one unit into `grad_flat`: the trainable tensors' .grad become its views.
void bind_grads(Unit& u) {
  int64_t off = 0;
  for (auto& t : u.trainable) {
    t.mutable_grad() = u.grad_flat.narrow(0, off, t.numel()).view(t.sizes());
    off += t.numel();
  }
}

void unbind_grads(Unit& u) {
  for (auto& t : u.trainable) t.mutable_grad() = Tensor();
}

Tensor bytes_of(const Tensor& t) { return t.view(torch::kByte); }

class Rank {
 public:
  Rank(const Family& fam, const TrainingSetup& setup, const DistributedOptions& opt) : opt_(opt) {
    ValidateOptions vo;
    vo.seed = opt.seed;
    vo.quiet = true;
    n_blocks_ = blocks_to_run(fam, opt.blocks);
    st_ = build_stack(fam, setup, n_blocks_, vo);
    connect();
    make_units();
  }

  RankRun run(const Family& fam, const TrainingSetup& setup);

 private:
  static int blocks_to_run(const Family& fam, int blocks) {
    int total = 0;
    for (const auto& l : fam.block_lists) total += l.count;
    return blocks > 0 ? std::min(blocks, total) : total;
  }
  bool shards_weights_() const { return shards_weights(opt_.strategy); }
  bool shards_grads_() const { return zero_stage(opt_.strategy) >= 2; }
  bool sharded_() const { return opt_.strategy != Strategy::ddp && opt_.strategy != Strategy::single; }
  int world() const { return opt_.world; }
  int me() const { return opt_.rank; }

  void connect();
  void make_units();
  // collectives (payload counted in comm_ unless `count` is false)
  c10::intrusive_ptr<c10d::Work> all_gather_async(const Tensor& own, const Tensor& out, bool count = true);
  void reduce_scatter(const Tensor& full, const Tensor& own, bool count = true);
  void all_reduce(const Tensor& buf);
  void all_gather_in_place(const Tensor& flat, int64_t s);
  // one step
  void forward_units(int step_index, std::vector<State>& ins, std::vector<State>& outs);
  void backward_units(std::vector<State>& ins, std::vector<State>& outs);
  void gather_unit(int i);
  void wait_unit(int i);
  void free_unit(int i);
  void reduce_unit(int i);
  void optimizer_step();
  void release_step_grads();
  double optimizer_state_bytes() const;
  void check_gradients(const Family& fam, const TrainingSetup& setup, RankRun& out);
  Tensor reassembled_grad(int i);

  DistributedOptions opt_;
  int n_blocks_ = 0;
  Stack st_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  std::vector<Unit> units_;
  Tensor bucket_;  // ddp: the gradients copied out for the all-reduce (gradient_as_bucket_view off)
  std::unique_ptr<torch::optim::AdamW> adam_;
  Account acct_;
  CollectiveBytes comm_;
  uint32_t next_tag_ = kFirstTag;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending_;  // in-flight unit gathers by block
};

void Rank::connect() {
  auto store = c10::make_intrusive<c10d::FileStore>(opt_.store_path, world());
  store->setTimeout(std::chrono::seconds(opt_.timeout_s));
  auto o = c10d::ProcessGroupGloo::Options::create();
  o->timeout = std::chrono::milliseconds(1000LL * opt_.timeout_s);
  o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, me(), world(), o);
}

void Rank::make_units() {
  std::set<const void*> shared;
  if (st_.build.shared)
    for (const auto& [k, t] : *st_.build.shared) shared.insert(t.storage().unsafeGetStorageImpl());
  const auto to = torch::TensorOptions().dtype(st_.build.dtype).device(st_.device);
  const int n = world();
  std::vector<Tensor> params;
  for (const auto& b : st_.blocks) {
    Unit u;
    unit_tensors(b, shared, u);
    u.frozen_shard = ceil_div(numel_of(u.frozen), n);
    u.train_shard = ceil_div(numel_of(u.trainable), n);
    u.train_numel = numel_of(u.trainable);
    for (const auto& t : u.frozen)
      if (t.scalar_type() != st_.build.dtype) throw InputError("validate --gpus: a base weight is not in the run's dtype");
    u.frozen_flat = make_flat(u.frozen, n * u.frozen_shard, to);
    u.train_flat = make_flat(u.trainable, n * u.train_shard, to);
    if (shards_weights_()) {
      u.frozen_own = u.frozen_flat.narrow(0, me() * u.frozen_shard, u.frozen_shard).clone();
      u.opt_param = u.train_flat.narrow(0, me() * u.train_shard, u.train_shard).clone().requires_grad_(true);
      u.train_own = u.opt_param;
      acct_.add(&HeldBytes::weights_bytes, nbytes(u.frozen_own) + nbytes(u.train_own));
    } else {
      acct_.add(&HeldBytes::weights_bytes, nbytes(u.frozen_flat) + nbytes(u.train_flat));
      if (sharded_())  // zero1/2: the owned elements of the replica, updated in place
        u.opt_param = u.train_flat.narrow(0, me() * u.train_shard, u.train_shard).detach().requires_grad_(true);
    }
    if (!shards_grads_()) {  // ddp, zero1: full gradients stay allocated between steps
      u.grad_flat = torch::zeros({n * u.train_shard}, to);
      bind_grads(u);
      acct_.add(&HeldBytes::grads_bytes, nbytes(u.grad_flat));
    } else {
      u.grad_own = torch::zeros({u.train_shard}, to);
      acct_.add(&HeldBytes::grads_bytes, nbytes(u.grad_own));
    }
    params.push_back(sharded_() ? u.opt_param : Tensor());
    units_.push_back(std::move(u));
  }
  if (opt_.strategy == Strategy::ddp) {
    int64_t total = 0;
    for (const auto& u : units_) total += u.grad_flat.numel();
    bucket_ = torch::zeros({total}, to);
    acct_.add(&HeldBytes::buffers_bytes, nbytes(bucket_));
    params = st_.trainable;
  }
  adam_ = std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(opt_.learning_rate));
  pending_.resize(units_.size());
}

c10::intrusive_ptr<c10d::Work> Rank::all_gather_async(const Tensor& own, const Tensor& out, bool count) {
  const int64_t s = own.numel();
  std::vector<std::vector<Tensor>> outs(1);
  for (int r = 0; r < world(); ++r) outs[0].push_back(bytes_of(out.narrow(0, r * s, s)));
  std::vector<Tensor> in{bytes_of(own)};
  if (count) {
    comm_.allgather_bytes += nbytes(out);
    ++comm_.allgather_calls;
  }
  return pg_->allgather(outs, in);
}

// `full` [N * s] is this rank's contribution; `own` [s] receives the sum over ranks of chunk `me`,
// added in rank order 0, 1, … piece by piece.
void Rank::reduce_scatter(const Tensor& full, const Tensor& own, bool count) {
  const int64_t s = own.numel();
  if (s == 0) return;
  const int64_t piece = std::max<int64_t>(1, kPieceBytes / static_cast<int64_t>(own.element_size()));
  const int64_t pieces = ceil_div(s, piece);
  const uint32_t tag0 = next_tag_;
  next_tag_ += static_cast<uint32_t>(pieces);
  std::vector<c10::intrusive_ptr<c10d::Work>> sends;
  for (int dst = 0; dst < world(); ++dst) {
    if (dst == me()) continue;
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t off = p * piece, len = std::min(piece, s - off);
      std::vector<Tensor> v{bytes_of(full.narrow(0, dst * s + off, len))};
      sends.push_back(pg_->send(v, dst, static_cast<int>(tag0 + p)));
    }
  }
  // a piece received, and the rank's own piece (kept aside: `own` may be that chunk of `full`)
  Tensor buf = torch::empty({std::min(piece, s)}, own.options());
  Tensor mine = torch::empty({std::min(piece, s)}, own.options());
  acct_.add(&HeldBytes::buffers_bytes, nbytes(buf) + nbytes(mine));
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t off = p * piece, len = std::min(piece, s - off);
    mine.narrow(0, 0, len).copy_(full.narrow(0, me() * s + off, len));
    Tensor dst = own.narrow(0, off, len);
    for (int src = 0; src < world(); ++src) {
      Tensor chunk = mine.narrow(0, 0, len);
      if (src != me()) {
        std::vector<Tensor> v{bytes_of(buf.narrow(0, 0, len))};
        pg_->recv(v, src, static_cast<int>(tag0 + p))->wait();
        chunk = buf.narrow(0, 0, len);
      }
      if (src == 0)
        dst.copy_(chunk);
      else
        dst.add_(chunk);
    }
  }
  for (auto& w : sends) w->wait();
  acct_.add(&HeldBytes::buffers_bytes, -(nbytes(buf) + nbytes(mine)));
  if (count) {
    comm_.reduce_scatter_bytes += nbytes(full);
    ++comm_.reduce_scatter_calls;
  }
}

// In segments of N pieces, so the shard it reduces into stays one piece (NCCL reduces in place).
void Rank::all_reduce(const Tensor& buf) {
  const int64_t piece = std::max<int64_t>(1, kPieceBytes / static_cast<int64_t>(buf.element_size()));
  const int64_t seg = piece * world();
  Tensor own = torch::empty({std::min(piece, buf.numel() / world())}, buf.options());
  acct_.add(&HeldBytes::buffers_bytes, nbytes(own));
  for (int64_t off = 0; off < buf.numel(); off += seg) {
    const Tensor part = buf.narrow(0, off, std::min(seg, buf.numel() - off));  // a multiple of N elements
    const Tensor mine = own.narrow(0, 0, part.numel() / world());
    reduce_scatter(part, mine, false);
    all_gather_async(mine, part, false)->wait();
  }
  acct_.add(&HeldBytes::buffers_bytes, -nbytes(own));
  comm_.allreduce_bytes += nbytes(buf);
  ++comm_.allreduce_calls;
}

// zero1/2: the owned elements of `flat` gathered into every replica's `flat` in place, a piece at a
// time through one piece-sized copy of the own elements (a collective's input may not be its output).
void Rank::all_gather_in_place(const Tensor& flat, int64_t s) {
  const int64_t piece = std::max<int64_t>(1, kPieceBytes / static_cast<int64_t>(flat.element_size()));
  Tensor in = torch::empty({std::min(piece, s)}, flat.options());
  acct_.add(&HeldBytes::buffers_bytes, nbytes(in));
  for (int64_t off = 0; off < s; off += piece) {
    const int64_t len = std::min(piece, s - off);
    in.narrow(0, 0, len).copy_(flat.narrow(0, me() * s + off, len));
    std::vector<std::vector<Tensor>> outs(1);
    for (int r = 0; r < world(); ++r) outs[0].push_back(bytes_of(flat.narrow(0, r * s + off, len)));
    std::vector<Tensor> inputs{bytes_of(in.narrow(0, 0, len))};
    pg_->allgather(outs, inputs)->wait();
  }
  acct_.add(&HeldBytes::buffers_bytes, -nbytes(in));
  comm_.allgather_bytes += nbytes(flat);
  ++comm_.allgather_calls;
}

// zero3/fsdp2: unit i's shards all-gathered into its flat buffers (the block's tensors), started now
// and waited for by the caller (prefetch).
void Rank::gather_unit(int i) {
  if (!shards_weights_() || i < 0 || i >= static_cast<int>(units_.size()) || pending_[i]) return;
  Unit& u = units_[i];
  acct_.add(&HeldBytes::gathered_bytes, nbytes(u.frozen_flat) + nbytes(u.train_flat));
  torch::NoGradGuard ng;
  if (u.frozen_shard > 0) all_gather_async(u.frozen_own, u.frozen_flat)->wait();
  if (u.train_shard > 0) pending_[i] = all_gather_async(u.train_own.detach(), u.train_flat);
}

// After unit i's backward: reduce its gradient as the strategy does.
void Rank::reduce_unit(int i) {
  Unit& u = units_[i];
  if (opt_.strategy == Strategy::ddp) {
    int64_t off = 0;
    for (int j = 0; j < i; ++j) off += units_[j].grad_flat.numel();
    bucket_.narrow(0, off, u.grad_flat.numel()).copy_(u.grad_flat);
    if (i == 0) all_reduce(bucket_);  // the last unit of the backward: the bucket is full
    return;
  }
  if (!shards_grads_()) {  // zero1: the owned chunk of the full gradient becomes the reduced one
    reduce_scatter(u.grad_flat, u.grad_flat.narrow(0, me() * u.train_shard, u.train_shard));
    return;
  }
  reduce_scatter(u.grad_flat, u.grad_own);
  unbind_grads(u);  // zero2/3/fsdp2: the unit's full gradient is dropped once reduced
  acct_.add(&HeldBytes::grads_bytes, -nbytes(u.grad_flat));
  u.grad_flat = Tensor();
}

State detached_input(const State& out) {
  State x;
  for (const auto& [k, v] : out) x[k] = v.defined() && v.requires_grad() ? v.detach().requires_grad_(true) : v;
  return x;
}

// zero3/fsdp2: a gathered unit freed (reshard): its memory is zeroed until it is gathered again
void Rank::free_unit(int i) {
  if (!shards_weights_()) return;
  Unit& u = units_[i];
  std::memset(u.frozen_flat.data_ptr(), 0, u.frozen_flat.nbytes());
  std::memset(u.train_flat.data_ptr(), 0, u.train_flat.nbytes());
  acct_.add(&HeldBytes::gathered_bytes, -(nbytes(u.frozen_flat) + nbytes(u.train_flat)));
}

void Rank::wait_unit(int i) {
  if (pending_[i]) pending_[i]->wait(), pending_[i].reset();
}

// Forward unit by unit, keeping each unit's input and output for its backward.
void Rank::forward_units(int step_index, std::vector<State>& ins, std::vector<State>& outs) {
  if (shards_weights_()) {  // what the rank does not own is not there: every unit is gathered
    torch::NoGradGuard ng;
    for (auto& u : units_) {
      u.frozen_flat.zero_();
      u.train_flat.zero_();
    }
  }
  State x = stack_input(st_, opt_.seed + 1 + static_cast<uint64_t>(me()));
  torch::manual_seed(opt_.seed + 99 + 1000 * static_cast<uint64_t>(step_index) + static_cast<uint64_t>(me()));
  gather_unit(0);
  for (int i = 0; i < static_cast<int>(units_.size()); ++i) {
    wait_unit(i);
    gather_unit(i + 1);  // prefetch: two units in flight
    ins.push_back(x);
    outs.push_back(st_.blocks[i].forward(x));
    x = detached_input(outs.back());
    free_unit(i);  // reshard after forward
  }
}

// Backward unit by unit from the last, each unit's gradient reduced as soon as it exists.
void Rank::backward_units(std::vector<State>& ins, std::vector<State>& outs) {
  // d loss / d out of a mean-squared loss against a fixed target (as the single-process executor)
  std::map<std::string, Tensor> grad_out;
  for (const auto& [k, v] : outs.back())
    if (v.defined() && v.requires_grad()) grad_out[k] = torch::full_like(v, 1.0 / static_cast<double>(v.numel()));
  const int n = static_cast<int>(units_.size());
  gather_unit(n - 1);
  for (int i = n - 1; i >= 0; --i) {
    Unit& u = units_[i];
    wait_unit(i);
    gather_unit(i - 1);  // prefetch the next unit of the backward
    if (shards_grads_()) {
      const auto to = torch::TensorOptions().dtype(st_.build.dtype).device(st_.device);
      u.grad_flat = torch::zeros({world() * u.train_shard}, to);
      bind_grads(u);
      acct_.add(&HeldBytes::grads_bytes, nbytes(u.grad_flat));
    }
    std::vector<Tensor> o, g;
    for (const auto& [k, v] : outs[i]) {
      auto it = grad_out.find(k);
      if (it == grad_out.end() || !v.requires_grad()) continue;
      o.push_back(v);
      g.push_back(it->second);
    }
    torch::autograd::backward(o, g);
    grad_out.clear();
    for (const auto& [k, v] : ins[i])
      if (v.defined() && v.requires_grad() && v.grad().defined()) grad_out[k] = v.grad();
    outs[i].clear();
    ins[i].clear();
    free_unit(i);
    reduce_unit(i);
  }
}

double Rank::optimizer_state_bytes() const {
  double b = 0;
  for (const auto& [key, state] : adam_->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    b += nbytes(s.exp_avg()) + nbytes(s.exp_avg_sq()) + nbytes(s.max_exp_avg_sq());
  }
  return b;
}

void Rank::optimizer_step() {
  torch::NoGradGuard ng;
  // averaged by division, as the single-process reference divides: x * (1/N) and x / N differ in the
  // last bit unless N is a power of two
  const double n = static_cast<double>(world());
  if (opt_.strategy == Strategy::ddp) {  // the averaged bucket back into the gradients
    int64_t off = 0;
    for (auto& u : units_) {
      u.grad_flat.copy_(bucket_.narrow(0, off, u.grad_flat.numel())).div_(n);
      off += u.grad_flat.numel();
    }
  } else {
    for (auto& u : units_) {
      Tensor g = shards_grads_() ? u.grad_own : u.grad_flat.narrow(0, me() * u.train_shard, u.train_shard);
      g.div_(n);
      u.opt_param.mutable_grad() = g;
    }
  }
  const double before = optimizer_state_bytes();
  adam_->step();
  acct_.add(&HeldBytes::optimizer_bytes, optimizer_state_bytes() - before);
}

// zero1/2: the updated owned elements all-gathered into every replica, unit by unit; then the
// gradients are cleared (kept allocated where the strategy keeps them).
void Rank::release_step_grads() {
  torch::NoGradGuard ng;
  for (auto& u : units_) {
    if (u.grad_flat.defined()) u.grad_flat.zero_();
    if (u.grad_own.defined()) u.grad_own.zero_();
  }
  if (!sharded_() || shards_weights_()) return;
  for (auto& u : units_)
    if (u.train_shard > 0) all_gather_in_place(u.train_flat, u.train_shard);
}

// rank 0 gets every unit's averaged gradient (a verification gather, not counted)
Tensor Rank::reassembled_grad(int i) {
  Unit& u = units_[i];
  if (opt_.strategy == Strategy::ddp) return u.grad_flat.narrow(0, 0, u.train_numel).clone();
  Tensor own = shards_grads_() ? u.grad_own : u.grad_flat.narrow(0, me() * u.train_shard, u.train_shard).clone();
  Tensor full = torch::empty({world() * u.train_shard}, own.options());
  all_gather_async(own, full, false)->wait();
  return full.narrow(0, 0, u.train_numel);
}

// The reference: one process, the same weights, the N micro-batches one after another with the
// same dropout masks, gradients accumulated by autograd, divided by N.
void Rank::check_gradients(const Family& fam, const TrainingSetup& setup, RankRun& out) {
  std::vector<Tensor> got;
  for (int i = 0; i < static_cast<int>(units_.size()); ++i) got.push_back(reassembled_grad(i));
  if (me() != 0) return;
  ValidateOptions vo;
  vo.seed = opt_.seed;
  vo.quiet = true;
  Stack ref = build_stack(fam, setup, n_blocks_, vo);
  Plan keep;
  for (int i = 0; i < n_blocks_; ++i) keep.segments.push_back(Segment{i, i + 1, BlockMode::Keep, false});
  for (int r = 0; r < world(); ++r) {
    ref.input = stack_input(ref, opt_.seed + 1 + static_cast<uint64_t>(r));
    torch::manual_seed(opt_.seed + 99 + static_cast<uint64_t>(r));
    step(ref, keep);
  }
  out.gradients_checked = true;
  out.grad_bit_equal = true;
  for (int i = 0; i < static_cast<int>(units_.size()); ++i) {
    std::vector<Tensor> parts;
    for (const auto& t : ref.blocks[i].trainable)
      parts.push_back((t.grad().defined() ? t.grad() : torch::zeros_like(t)).reshape(-1));
    if (parts.empty()) continue;
    const Tensor want = torch::cat(parts).div(static_cast<double>(world()));
    out.grad_bit_equal = out.grad_bit_equal && torch::equal(want, got[i]);
    out.grad_max_abs = std::max(out.grad_max_abs, want.abs().max().item<double>());
    out.grad_max_abs_diff =
        std::max(out.grad_max_abs_diff, (want.to(torch::kFloat) - got[i].to(torch::kFloat)).abs().max().item<double>());
    ++out.grad_tensors;
  }
}

RankRun Rank::run(const Family& fam, const TrainingSetup& setup) {
  RankRun out;
  out.rank = me();
  out.world = world();
  out.strategy = opt_.strategy;
  for (int s = 0; s < opt_.steps; ++s) {
    pg_->barrier()->wait();  // every rank starts the step together: step times compare
    acct_.reset_peak();
    comm_ = CollectiveBytes{};
    const double t0 = now_s();
    std::vector<State> ins, outs;
    forward_units(s, ins, outs);
    backward_units(ins, outs);
    optimizer_step();
    const double t1 = now_s();
    // the first step's averaged gradients (still in place after the optimizer used them), not timed
    if (s == 0 && opt_.check_gradients) check_gradients(fam, setup, out);
    const double t2 = now_s();
    release_step_grads();
    const double t3 = now_s();
    out.step_times_s.push_back((t1 - t0) + (t3 - t2));
    out.peak = acct_.peak;
    out.comm = comm_;
  }
  out.step_s = out.step_times_s.empty() ? 0 : out.step_times_s.back();
  return out;
}

}  // namespace

RankRun run_rank(const Family& fam, const TrainingSetup& setup, const DistributedOptions& opt) {
  if (opt.world < 1 || opt.rank < 0 || opt.rank >= opt.world)
    throw InputError("validate --gpus: rank " + std::to_string(opt.rank) + " of " + std::to_string(opt.world));
  if (opt.steps < 1) throw InputError("validate --gpus: --steps must be at least 1");
  torch::set_num_threads(1);  // N ranks share the cores; one thread keeps every reduction's order fixed
  Rank r(fam, setup, opt);
  return r.run(fam, setup);
}
#else
RankRun run_rank(const Family&, const TrainingSetup&, const DistributedOptions&) {
  throw std::runtime_error("validate --gpus: this segadvise-torch was built against a LibTorch without Gloo "
                           "headers (c10d's ProcessGroupGloo); rebuild with libgloo-dev or a LibTorch that has them");
}
#endif

nlohmann::json to_json(const RankRun& r) {
  const auto held = [](const HeldBytes& h) {
    return nlohmann::json{{"weights_bytes", h.weights_bytes},   {"grads_bytes", h.grads_bytes},
                          {"optimizer_bytes", h.optimizer_bytes}, {"gathered_bytes", h.gathered_bytes},
                          {"buffers_bytes", h.buffers_bytes},   {"total_bytes", h.total_bytes()}};
  };
  return {{"rank", r.rank},
          {"world", r.world},
          {"strategy", to_string(r.strategy)},
          {"peak", held(r.peak)},
          {"comm",
           {{"allgather_bytes", r.comm.allgather_bytes},
            {"reduce_scatter_bytes", r.comm.reduce_scatter_bytes},
            {"allreduce_bytes", r.comm.allreduce_bytes},
            {"allgather_calls", r.comm.allgather_calls},
            {"reduce_scatter_calls", r.comm.reduce_scatter_calls},
            {"allreduce_calls", r.comm.allreduce_calls}}},
          {"step_times_s", r.step_times_s},
          {"step_s", r.step_s},
          {"gradients_checked", r.gradients_checked},
          {"grad_bit_equal", r.grad_bit_equal},
          {"grad_max_abs_diff", r.grad_max_abs_diff},
          {"grad_max_abs", r.grad_max_abs},
          {"grad_tensors", r.grad_tensors}};
}

RankRun rank_run_from_json(const nlohmann::json& j) {
  RankRun r;
  r.rank = j.at("rank").get<int>();
  r.world = j.at("world").get<int>();
  r.strategy = parse_strategy(j.at("strategy").get<std::string>(), "rank result strategy");
  const auto& p = j.at("peak");
  r.peak.weights_bytes = p.at("weights_bytes").get<double>();
  r.peak.grads_bytes = p.at("grads_bytes").get<double>();
  r.peak.optimizer_bytes = p.at("optimizer_bytes").get<double>();
  r.peak.gathered_bytes = p.at("gathered_bytes").get<double>();
  r.peak.buffers_bytes = p.at("buffers_bytes").get<double>();
  const auto& c = j.at("comm");
  r.comm.allgather_bytes = c.at("allgather_bytes").get<double>();
  r.comm.reduce_scatter_bytes = c.at("reduce_scatter_bytes").get<double>();
  r.comm.allreduce_bytes = c.at("allreduce_bytes").get<double>();
  r.comm.allgather_calls = c.at("allgather_calls").get<int>();
  r.comm.reduce_scatter_calls = c.at("reduce_scatter_calls").get<int>();
  r.comm.allreduce_calls = c.at("allreduce_calls").get<int>();
  r.step_times_s = j.at("step_times_s").get<std::vector<double>>();
  r.step_s = j.at("step_s").get<double>();
  r.gradients_checked = j.at("gradients_checked").get<bool>();
  r.grad_bit_equal = j.at("grad_bit_equal").get<bool>();
  r.grad_max_abs_diff = j.at("grad_max_abs_diff").get<double>();
  r.grad_max_abs = j.at("grad_max_abs").get<double>();
  r.grad_tensors = j.at("grad_tensors").get<int>();
  return r;
}

// ------------------------------------------------------------------------------------ the parent

namespace {

std::string tail_of(const std::string& path, std::size_t max_chars) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > max_chars ? "…" + s.substr(s.size() - max_chars) : s;
}

pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("validate --gpus: fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

void stop_all(std::vector<pid_t>& pids) {
  for (pid_t p : pids)
    if (p > 0) kill(p, SIGTERM);
  for (pid_t& p : pids)
    if (p > 0) {
      waitpid(p, nullptr, 0);
      p = 0;
    }
}

void remove_dir(const std::string& dir, int world) {
  for (int r = 0; r < world; ++r) {
    std::remove((dir + "/rank-" + std::to_string(r) + ".json").c_str());
    std::remove((dir + "/rank-" + std::to_string(r) + ".log").c_str());
  }
  std::remove((dir + "/store").c_str());
  rmdir(dir.c_str());
}

// Waits for every child; the first that fails (or the deadline) stops the others.
void wait_all(std::vector<pid_t>& pids, const std::string& dir, int timeout_s) {
  const double deadline = now_s() + timeout_s;
  int left = static_cast<int>(pids.size());
  while (left > 0) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) {
      const auto it = std::find(pids.begin(), pids.end(), p);
      if (it == pids.end()) continue;
      const int rank = static_cast<int>(it - pids.begin());
      *it = 0;
      --left;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        stop_all(pids);
        const std::string log = tail_of(dir + "/rank-" + std::to_string(rank) + ".log", 1500);
        // a setup the runner cannot run is the user's input, reported as the rank worded it
        const std::string prefix = "segadvise: error: ";
        if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && log.rfind(prefix, 0) == 0)
          throw InputError(log.substr(prefix.size(), log.find_last_not_of("\n") + 1 - prefix.size()));
        throw std::runtime_error("validate --gpus: rank " + std::to_string(rank) + " failed (" +
                                 (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                    : "signal " + std::to_string(WTERMSIG(status))) +
                                 "): " + log);
      }
      continue;
    }
    if (now_s() > deadline) {
      stop_all(pids);
      throw std::runtime_error("validate --gpus: the ranks ran past " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::vector<RankRun> launch_ranks(const std::string& exe, const std::vector<std::string>& args, int world,
                                  int timeout_s) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/segadvise-ranks-XXXXXX";
  if (!mkdtemp(templ.data())) throw std::runtime_error("validate --gpus: cannot create a temporary directory");
  const std::string dir = templ;
  std::vector<pid_t> pids;
  try {
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> a = args;
      for (const std::string& s : {std::string("--rank"), std::to_string(r), std::string("--world"), std::to_string(world),
                                   std::string("--store"), dir + "/store", std::string("--result"),
                                   dir + "/rank-" + std::to_string(r) + ".json"})
        a.push_back(s);
      pids.push_back(spawn(exe, a, dir + "/rank-" + std::to_string(r) + ".log"));
    }
    wait_all(pids, dir, timeout_s);
    std::vector<RankRun> runs;
    for (int r = 0; r < world; ++r) {
      std::ifstream f(dir + "/rank-" + std::to_string(r) + ".json");
      if (!f) throw std::runtime_error("validate --gpus: rank " + std::to_string(r) + " wrote no result");
      runs.push_back(rank_run_from_json(nlohmann::json::parse(f)));
    }
    remove_dir(dir, world);
    return runs;
  } catch (...) {
    stop_all(pids);
    remove_dir(dir, world);
    throw;
  }
}

RankStateInput rank_state_input(const BlockChain& chain, const TrainingSetup& setup, Strategy strategy, int world) {
  const double dtype = weight_dtype_bytes(setup);
  const bool full = setup.model_type == ModelType::Full;
  double base = 0, trainable = 0, largest = 0, largest_grad = 0;
  for (const auto& b : chain.blocks) {
    base += b.params;
    trainable += full ? b.params : b.lora_params;
    largest = std::max(largest, (full ? b.params : b.params + b.lora_params) * dtype);
    largest_grad = std::max(largest_grad, (full ? b.params : b.lora_params) * dtype);
  }
  RankStateInput in;
  in.world = world;
  in.strategy = strategy;
  in.frozen_weight_bytes = (full ? 0 : base) * dtype;
  in.trainable_weight_bytes = trainable * dtype;
  in.grad_bytes = trainable * dtype;
  in.optimizer_state_bytes = 2 * trainable * dtype;  // LibTorch AdamW: exp_avg, exp_avg_sq
  in.frozen_element_bytes = in.trainable_element_bytes = in.grad_element_bytes = in.optimizer_element_bytes = dtype;
  in.largest_unit_weight_bytes = largest;
  // a unit's backward leaves its whole gradient alive until its reduce-scatter (ZeRO-2/3, FSDP2)
  in.largest_unit_grad_bytes = largest_grad;
  in.bucket_bytes = strategy == Strategy::ddp ? in.grad_bytes : 0;
  return in;
}

}  // namespace segadvise::profiler
