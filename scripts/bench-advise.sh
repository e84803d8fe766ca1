#!/usr/bin/env bash
# Prints advise's whole-process latency for every shipped family (median of N runs, ms) and the
# number of schedules it evaluated. Usage: scripts/bench-advise.sh [build/segadvise] [runs] [gpu]
set -euo pipefail
bin=${1:-build/segadvise}
runs=${2:-7}
gpu=${3:-l40s}
printf '%-24s %9s %9s %9s %10s\n' model median_ms min_ms max_ms schedules
all=()
for m in $("$bin" list models --format json | python3 -c 'import json,sys; print(" ".join(x["id"] for x in json.load(sys.stdin)))'); do
  times=()
  for ((i = 0; i < runs; i++)); do
    s=$(date +%s%N)
    "$bin" --model "$m" --gpu "$gpu" --format json > /tmp/bench-advise.json 2>/dev/null || true
    e=$(date +%s%N)
    times+=($(( (e - s) / 1000 )))
  done
  n=$(python3 -c 'import json; print(json.load(open("/tmp/bench-advise.json")).get("schedules_evaluated", "?"))' 2>/dev/null || echo "?")
  read -r med mn mx < <(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f %.1f %.1f\n", a[int((NR+1)/2)]/1000, a[1]/1000, a[NR]/1000}')
  all+=("$med")
  printf '%-24s %9s %9s %9s %10s\n' "$m" "$med" "$mn" "$mx" "$n"
done
printf '%s\n' "${all[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median over families: %.1f ms, worst family median: %.1f ms\n", a[int((NR+1)/2)], a[NR]}'
