#!/bin/sh
# Time the optimal-plan search: 60 distinct blocks, three options each (keep, checkpoint inside a
# segment, FFN-only), exact labels; then advise's own optimizer on a few real families.
# Usage: scripts/bench-optimal.sh [build-dir]
set -eu
build=${1:-build}
"$build/segadvise_bench_optimal" 60 9
for spec in "wan2.1-14b l40s" "flux1 l40s" "kolors h100" "hunyuanvideo-1.5 l40s"; do
  set -- $spec
  start=$(date +%s%N)
  for i in 1 2 3 4 5; do "$build/segadvise" --model "$1" --gpu "$2" >/dev/null || true; done
  end=$(date +%s%N)
  echo "segadvise --model $1 --gpu $2 (whole process, table output): $(( (end - start) / 5000000 )) ms mean of 5"
done
