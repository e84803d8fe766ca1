#!/usr/bin/env bash
# Prints advise's whole-process latency for every shipped family (median of N runs: wall ms, and
# CPU ms = user + system of the process, which another load on the machine does not inflate) and
# the number of schedules it evaluated. Usage: scripts/bench-advise.sh [build/segadvise] [runs] [gpu]
set -euo pipefail
bin=${1:-build/segadvise}
runs=${2:-7}
gpu=${3:-l40s}
python3 - "$bin" "$runs" "$gpu" <<'PY'
import json, os, resource, statistics, subprocess, sys, time

binary, runs, gpu = sys.argv[1], int(sys.argv[2]), sys.argv[3]
models = [m["id"] for m in json.loads(subprocess.run([binary, "list", "models", "--format", "json"],
                                                     capture_output=True, check=True).stdout)]


def one(model):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([binary, "--model", model, "--gpu", gpu, "--format", "json"], capture_output=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1e3, cpu * 1e3, out


print("%-24s %9s %9s %9s %10s" % ("model", "wall_ms", "cpu_ms", "max_wall", "schedules"))
walls, cpus = [], []
for m in models:
    rows = [one(m) for _ in range(runs)]
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[1] for r in rows)
    try:
        n = json.loads(rows[-1][2]).get("schedules_evaluated", "?")
    except ValueError:
        n = "?"
    walls.append(wall)
    cpus.append(cpu)
    print("%-24s %9.1f %9.1f %9.1f %10s" % (m, wall, cpu, max(r[0] for r in rows), n))
print("median over families: %.1f ms wall, %.1f ms CPU; worst family: %.1f ms wall, %.1f ms CPU" %
      (statistics.median(walls), statistics.median(cpus), max(walls), max(cpus)))
PY
