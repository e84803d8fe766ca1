// segadvise_bench_optimal [blocks] [repeats]: time the optimal-plan search on a synthetic chain of
// distinct blocks (sizes drawn from a fixed pseudo-random sequence, so every run is the same) with
// three options per block (keep, checkpoint inside a segment, FFN-only), at a budget halfway
// between the smallest and the largest peak. Prints the median wall time per solve.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/planner/optimal.hpp"

using namespace segadvise;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 60;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 9;
  unsigned long long state = 12345;
  auto uniform = [&] {  // 64-bit LCG (Knuth), top bits as [0,1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  BlockChain chain;
  chain.model_id = "synthetic";
  for (int i = 0; i < n; ++i) {
    BlockCost b;
    b.list = "blocks";
    b.index = i;
    b.kind = "synthetic";
    b.saved_attention_bytes = (0.5 + uniform()) * kGiB;
    b.saved_ffn_bytes = (0.5 + uniform()) * kGiB;
    b.saved_rest_bytes = 0.1 * uniform() * kGiB;
    b.ffn_input_bytes = 0.1 * kGiB;
    b.boundary_bytes = (0.05 + 0.1 * uniform()) * kGiB;
    b.transient_bytes = 0.2 * kGiB;
    b.matmul_flops = (1 + uniform()) * 1e13;
    b.ffn_matmul_flops = b.matmul_flops * (0.4 + 0.3 * uniform());
    b.attention_flops = uniform() * 1e13;
    b.params = 2e8;
    b.quantizable_params = 2e8;
    b.lora_params = 1e6;
    chain.blocks.push_back(b);
  }
  GpuSpec gpu;
  gpu.id = "bench";
  gpu.total_bytes = 1000 * kGiB;
  gpu.bf16_flops_per_s = 1e15;
  gpu.mem_bytes_per_s = 3e12;
  gpu.pcie_bytes_per_s = 5e10;
  TrainingSetup setup;
  Coefficients coef;
  OptimalOptions opts;
  opts.allow_offload = false;            // three options per block: keep, checkpoint, FFN-only
  opts.allow_attention_offload = false;

  for (std::size_t max_labels : {std::size_t(0), std::size_t(2048)}) {
    opts.max_labels = max_labels;
    const PlanOptimizer probe(chain, setup, gpu, coef, 0, opts);
    const double lo = probe.min_peak_vram_bytes();
    const double hi = probe.solve_for_peak(1e30).prediction.peak_vram_bytes;
    const double target = (lo + hi) / 2;
    std::vector<double> ms;
    OptimalPlan p;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const PlanOptimizer opt(chain, setup, gpu, coef, 0, opts);
      p = opt.solve_for_peak(target);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%d blocks, 3 options each, budget %.1f GiB (peaks %.1f..%.1f): %s, %zu labels, plan %.3f s/step at "
                "%.1f GiB; median %.2f ms per solve (%s)\n",
                n, target / kGiB, lo / kGiB, hi / kGiB, p.exact ? "exact" : "thinned on a 65536-cell grid", p.labels,
                p.prediction.step_time_s, p.prediction.peak_vram_bytes / kGiB, ms[ms.size() / 2],
                max_labels == 0 ? "no label cap" : "label cap 2048");
  }
  return 0;
}
