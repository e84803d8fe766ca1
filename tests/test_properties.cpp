// Properties (rapidcheck through a small doctest adapter): predictions are finite and
// non-negative for any valid setup; the peak never falls as batch, resolution or frames grow; plan
// JSON round-trips through a file; malformed schedule names and resolutions are InputErrors naming
// the input. Case counts are kept moderate (the whole file runs in a few seconds); RC_PARAMS
// (e.g. RC_PARAMS="max_success=2000 seed=42") overrides them and the fixed seed for a longer run.
#include <doctest/doctest.h>
#include <rapidcheck.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/planner/plan_json.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"

using namespace segadvise;

namespace {

// doctest adapter: runs the property, and on a counterexample fails the test case with rapidcheck's
// report (the shrunk input and the seed to reproduce it).
template <typename Testable>
void property(const char* description, int cases, Testable&& testable) {
  rc::detail::TestMetadata meta;
  meta.id = meta.description = description;
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  if (!std::getenv("RC_PARAMS")) {  // the same cases every run (CI); RC_PARAMS explores others
    params.maxSuccess = cases;
    params.seed = 20261130;
  }
  const auto result = rc::detail::checkTestable(std::forward<Testable>(testable), meta, params);
  if (result.template is<rc::detail::SuccessResult>()) return;
  std::ostringstream report;
  rc::detail::printResultMessage(result, report);
  const std::string message = std::string(description) + "\n" + report.str();
  FAIL_CHECK(message);
}

bool is_video(const Family& f) { return f.geometry.vae_temporal > 0; }

// A valid setup: any shipped family, batch 1..8, width and height 256..1536 on the family's
// alignment, frames 1..121 after the family's frame rule for video, any known precision.
struct Case {
  const Family* family;
  TrainingSetup setup;
  std::string gpu;
};

rc::Gen<Case> valid_case() {
  return rc::gen::exec([] {
    const auto& fams = builtin_families();
    const Family& fam = fams[*rc::gen::inRange<std::size_t>(0, fams.size())];
    TrainingSetup s = default_setup(fam);
    s.batch = *rc::gen::inRange(1, 9);
    const int a = std::max(1, fam.geometry.alignment);
    s.width = round_to_alignment(*rc::gen::inRange(256, 1537), a);
    s.height = round_to_alignment(*rc::gen::inRange(256, 1537), a);
    if (is_video(fam)) s.frames = apply_frame_rule(fam, *rc::gen::inRange(1, 122));
    s.base_precision = *rc::gen::elementOf(precision_names());
    s.sdnq_hadamard = false;
    const auto& gpus = builtin_gpus();
    return Case{&fam, s, gpus[*rc::gen::inRange<std::size_t>(0, gpus.size())].id};
  });
}

// A schedule of the kinds the trainer knows: none, layer, intervalK, segK-strideS, any backend,
// attention offload on or off. realize() says whether the family supports it.
rc::Gen<Schedule> any_schedule() {
  return rc::gen::exec([] {
    Schedule s;
    const int kind = *rc::gen::inRange(0, 4);
    s.checkpointing = kind != 0;
    if (kind >= 2) s.interval = *rc::gen::inRange(2, 9);
    if (kind == 3) s.stride = s.interval + *rc::gen::inRange(0, 9);
    s.backend = *rc::gen::element(Backend::Torch, Backend::Unsloth, Backend::TorchFfn, Backend::UnslothFfn);
    s.offload_attention = *rc::gen::arbitrary<bool>();
    return s;
  });
}

struct Outcome {
  bool supported = false;
  Prediction prediction;
};

Outcome predict_case(const Case& c, const Schedule& schedule) {
  const BlockChain chain = analyze(*c.family, c.setup);
  const PlanResult r = realize(*c.family, chain, schedule, c.setup);
  if (!r.supported) return {};
  return {true, predict(chain, r.plan, c.setup, find_gpu(c.gpu), default_coefficients(), 0)};
}

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

}  // namespace

TEST_CASE("property: predictions are finite and non-negative for any valid setup") {
  property("finite predictions", 500, [] {
    const Case c = *valid_case();
    const Schedule s = *any_schedule();
    const Outcome o = predict_case(c, s);
    RC_PRE(o.supported);
    const Prediction& p = o.prediction;
    RC_LOG() << c.family->id << " " << c.setup.width << "x" << c.setup.height << "x" << c.setup.frames << " batch "
             << c.setup.batch << " " << c.setup.base_precision << " " << s.name() << " on " << c.gpu;
    RC_ASSERT(finite_non_negative(p.peak_vram_bytes));
    RC_ASSERT(finite_non_negative(p.step_time_s));
    const MemoryBreakdown& m = p.memory;
    for (double x : {m.weights_bytes, m.trainable_bytes, m.gradient_bytes, m.optimizer_bytes, m.activation_peak_bytes,
                     m.fragmentation_bytes, m.streamed_weights_bytes, m.host_activation_bytes})
      RC_ASSERT(finite_non_negative(x));
    const TimeBreakdown& t = p.time;
    for (double x : {t.forward_s, t.backward_s, t.recompute_s, t.transfer_s, t.optimizer_s, t.overhead_s})
      RC_ASSERT(finite_non_negative(x));
  });
}

TEST_CASE("property: the peak never falls as batch, resolution or frames grow (fixed schedule)") {
  property("monotone peak", 400, [] {
    const Case small = *valid_case();
    const Schedule s = *any_schedule();
    Case big = small;
    const int a = std::max(1, small.family->geometry.alignment);
    const int grow = *rc::gen::inRange(0, 3);
    if (grow == 0) big.setup.batch += *rc::gen::inRange(1, 8);
    if (grow == 1) {
      big.setup.width += a * *rc::gen::inRange(0, 8);
      big.setup.height += a * *rc::gen::inRange(1, 8);
    }
    if (grow == 2) {
      RC_PRE(is_video(*small.family));
      big.setup.frames = apply_frame_rule(*small.family, small.setup.frames + *rc::gen::inRange(1, 60));
      RC_PRE(big.setup.frames > small.setup.frames);
    }
    const Outcome lo = predict_case(small, s), hi = predict_case(big, s);
    RC_PRE(lo.supported && hi.supported);
    RC_LOG() << small.family->id << " " << s.name() << " grow " << grow << ": " << lo.prediction.peak_vram_bytes
             << " -> " << hi.prediction.peak_vram_bytes;
    RC_ASSERT(hi.prediction.peak_vram_bytes >= lo.prediction.peak_vram_bytes * (1 - 1e-12));
  });
}

TEST_CASE("property: a plan written as JSON reads back equal") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("segadvise-prop-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  property("plan JSON round-trip", 100, [&] {
    // random segments covering n blocks, in order
    const int n = *rc::gen::inRange(1, 200);
    Plan p;
    for (int begin = 0; begin < n;) {
      Segment seg;
      seg.begin = begin;
      seg.mode = *rc::gen::element(BlockMode::Keep, BlockMode::Checkpoint, BlockMode::CheckpointFfn);
      // FFN-only checkpointing is per block (a longer segment reads back as one per block)
      seg.end = seg.mode == BlockMode::CheckpointFfn ? begin + 1 : std::min(n, begin + *rc::gen::inRange(1, 12));
      seg.offload_to_host = seg.mode != BlockMode::Keep && *rc::gen::arbitrary<bool>();
      p.segments.push_back(seg);
      begin = seg.end;
    }
    p.offload_attention = *rc::gen::arbitrary<bool>();
    p.description = *rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::inRange('a', 'z')));
    write_file_atomically(dir + "/plan.json", plan_to_json(p).dump(2) + "\n");
    const Plan q = load_plan(dir + "/plan.json", n);
    RC_ASSERT(q.segments.size() == p.segments.size());
    for (std::size_t i = 0; i < p.segments.size(); ++i) {
      RC_ASSERT(q.segments[i].begin == p.segments[i].begin);
      RC_ASSERT(q.segments[i].end == p.segments[i].end);
      RC_ASSERT(q.segments[i].mode == p.segments[i].mode);
      RC_ASSERT(q.segments[i].offload_to_host == p.segments[i].offload_to_host);
    }
    RC_ASSERT(q.offload_attention == p.offload_attention);
    RC_ASSERT(plan_to_json(q) == plan_to_json(p));
  });
  std::filesystem::remove_all(dir);
}

namespace {

// Printable text that is not a schedule name as written: a valid name with junk around it, or
// junk alone.
rc::Gen<std::string> malformed_schedule() {
  return rc::gen::exec([] {
    const std::string junk = *rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::inRange(' ', '~')));
    const std::string name = *rc::gen::element<std::string>("layer", "interval4", "seg2-stride4", "none");
    switch (*rc::gen::inRange(0, 3)) {
      case 0: return name + junk;
      case 1: return junk + name;
      default: return junk;
    }
  });
}

}  // namespace

// ("layer+" -> "unknown gradient_checkpointing_backend ''"); costmodel/src/types.cpp
TEST_CASE("property: a malformed schedule name is an InputError naming it") {
  property("schedule errors", 300, [] {
    const std::string text = *malformed_schedule();
    try {
      const Schedule s = Schedule::parse(text);
      // accepted: then it must be a name of the same schedule (e.g. "layer " is not accepted silently
      // as something else)
      RC_ASSERT(Schedule::parse(s.name()).name() == s.name());
    } catch (const InputError& e) {
      const std::string msg = e.what();
      RC_LOG() << "input '" << text << "' message: " << msg;
      RC_ASSERT(msg.find(text.substr(0, 16)) != std::string::npos);
    }
  });
}

TEST_CASE("property: a malformed --resolution is an InputError naming the flag and the value") {
  const Family& fam = find_family("flux");
  property("resolution errors", 300, [&] {
    // digits, 'x', signs, dots and letters: most are not WxH or N
    const std::string text =
        *rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::element('1', '0', '5', 'x', 'X', '-', '+', '.', 'e', 'a', ' ')));
    const std::string type = *rc::gen::element<std::string>("pixel", "pixel_area", "area");
    try {
      const ResolvedSize r = parse_resolution(text, type, fam, 1.0);
      RC_ASSERT(r.width > 0);
      RC_ASSERT(r.height > 0);
    } catch (const InputError& e) {
      const std::string msg = e.what();
      RC_LOG() << "input '" << text << "' message: " << msg;
      RC_ASSERT(msg.find("--resolution") != std::string::npos);
      RC_ASSERT(msg.find(text.substr(0, 16)) != std::string::npos);
    }
  });
}

namespace {

struct Run {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// The segadvise executable as a user runs it (arguments single-quoted for the shell).
Run run_segadvise(const std::vector<std::string>& args) {
  std::string cmd = SEGADVISE_BIN;
  for (const auto& a : args) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " " + q + "'";
  }
  cmd += " 2>&1";
  Run r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

TEST_CASE("property: a bad flag value exits 2 with a message naming the flag") {
  // (flag, values no reading of the flag accepts): negatives, zero where a count must be positive,
  // non-numbers, NaN and infinities, values past int, empty strings
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kBad = {
      {"--batch", {"-1", "0", "nan", "1e99", "99999999999999999999", "two", ""}},
      {"--frames", {"-1", "0", "inf", "4294967297", "x"}},
      {"--lora-rank", {"-1", "nan", "1099511627776", ""}},
      {"--blocks-to-swap", {"-1", "nan", "99999999999"}},
      {"--text-tokens", {"-1", "nan", "1e300"}},
      {"--ramtorch-percent", {"-1", "nan", "101", "inf"}},
      {"--vram-gib", {"0", "-1", "nan", "-inf", "inf"}},
      {"--headroom-gib", {"nan", "-1", "inf"}},
      {"--resolution", {"", "0x0", "2147483648x2147483648", "-512x512", "big", "1e308"}},
      {"--schedule", {"", "seg2-stride0", "interval99999999999999999999", "seg2-stride99999999999", "interval0"}},
      {"--precision", {"", "int9"}},
      {"--optimizer", {"", "sgd9"}},
      {"--aspect", {"1:0", "0:1", "-1:1", "x"}},
  };
  property("bad flags exit 2", 40, [] {
    const auto& [flag, values] = *rc::gen::elementOf(kBad);
    const std::string value = *rc::gen::elementOf(values);
    const std::string command = flag == "--schedule" ? "predict" : "advise";
    const Run r = run_segadvise({command, "--model", "flux", "--gpu", "l40s", flag, value});
    RC_LOG() << command << " " << flag << " '" << value << "' -> exit " << r.exit_code << ": " << r.output.substr(0, 300);
    RC_ASSERT(r.exit_code == 2);
    // the flag, or the value as typed
    const bool names_flag = r.output.find(flag) != std::string::npos;
    // (an empty value named as '')
    const bool names_value = r.output.find(value.empty() ? "''" : "'" + value.substr(0, 16)) != std::string::npos;
    RC_ASSERT(names_flag || names_value);
  });
}
