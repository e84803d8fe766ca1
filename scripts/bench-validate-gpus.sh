#!/usr/bin/env bash
# validate --gpus N on this machine's CPU: N segadvise-torch processes over c10d Gloo (127.0.0.1), the block
# stack sharded per strategy, against the per-rank formulas of costmodel/distributed.hpp. Prints one
# markdown row per strategy x N: predicted and measured model-state peak of the busiest rank, payload bytes per
# rank per step (predicted = measured on every rank, or "DIFFER"), gradients against one process, and the
# slowest rank's step time (a benchmark: it depends on the machine's load; the tests assert bytes only).
# Usage: scripts/bench-validate-gpus.sh [build/segadvise] [lora|full] [ranks...]   (default: lora 2 4)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/segadvise}
type=${2:-lora}
shift $(($# > 2 ? 2 : $#)) || true
ranks=("$@")
((${#ranks[@]})) || ranks=(2 4)
echo "| N | strategy | predicted peak MiB | measured peak MiB | error | all-gather MiB | reduce-scatter MiB | all-reduce MiB | bytes | gradients | s/step |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |"
for n in "${ranks[@]}"; do
  "$bin" validate --model tests/data/tiny-dit.json --resolution 256 --model-type "$type" --steps 3 --quiet \
    --format json --gpus "$n" |
    python3 -c '
import json, sys
j = json.load(sys.stdin)
mib = 1024.0 ** 2
for r in j["runs"]:
    p = r["predicted"]
    grads = "bit-equal" if r["gradients_bit_equal"] else "max diff %.2g" % r["grad_max_abs_diff"]
    print("| %d | %s | %.2f | %.2f | %+.1f%% | %.2f | %.2f | %.2f | %s | %s | %.3f |" % (j["gpus"], r["strategy"],
          p["peak_bytes"] / mib, r["measured_peak_bytes"] / mib, 100 * r["peak_error"], p["allgather_bytes"] / mib,
          p["reduce_scatter_bytes"] / mib, p["allreduce_bytes"] / mib, "equal" if r["comm_equal"] else "DIFFER",
          grads, r["step_s"]))'
done
