#!/usr/bin/env bash
# Prints advise's whole-process latency for every shipped family (median of N runs: wall ms, and
# CPU ms = user + system of the process, which another load on the machine does not inflate) and
# the number of schedules it evaluated. Then the long cases: user families of 800 blocks
# (one list) and 4,096 blocks (four lists of 1,024, the format's limit; both Wan 2.1 1.3B's block
# repeated, written to a temporary folder), the Pareto front (--front) of 1, 3 and 4 lists of 1,024
# blocks, and Stable Cascade C with --front.
# Usage: scripts/bench-advise.sh [build/segadvise] [runs] [gpu]
set -euo pipefail
bin=${1:-build/segadvise}
runs=${2:-7}
gpu=${3:-l40s}
root=$(cd "$(dirname "$0")/.." && pwd)
python3 - "$bin" "$runs" "$gpu" "$root" <<'PY'
import json, os, resource, statistics, subprocess, sys, tempfile, time

binary, runs, gpu, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
models = [m["id"] for m in json.loads(subprocess.run([binary, "list", "models", "--format", "json"],
                                                     capture_output=True, check=True).stdout)]


def one(model, *extra):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([binary, "--model", model, "--gpu", gpu, "--format", "json", *extra],
                         capture_output=True).stdout
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


def user_family(folder, lists):
    fam = json.load(open(os.path.join(root, "families", "data", "wan2.1-1.3b.json")))
    name = "bench-%d-blocks" % sum(lists)
    block = fam["block_lists"][0]
    fam.update(id=name, aliases=[name], default_for_family=False)
    fam["block_lists"] = [dict(block, name="blocks%d" % i, count=c) for i, c in enumerate(lists)]
    path = os.path.join(folder, name + ".json")
    json.dump(fam, open(path, "w"))
    return path


print()
print("%-24s %9s %9s %9s %10s" % ("long case", "wall_ms", "cpu_ms", "max_wall", "schedules"))
with tempfile.TemporaryDirectory() as folder:
    cases = [("user 1x800 blocks", user_family(folder, [800]), ()),
             ("user 4x1024 blocks", user_family(folder, [1024] * 4), ()),
             ("user 1x1024 --front", user_family(folder, [1024]), ("--front",)),
             ("user 3x1024 --front", user_family(folder, [1024] * 3), ("--front",)),
             ("user 4x1024 --front", user_family(folder, [1024] * 4), ("--front",)),
             ("stable-cascade-c --front", "stable-cascade-c", ("--front",))]
    for label, model, extra in cases:
        rows = [one(model, *extra) for _ in range(min(runs, 3))]
        try:
            n = json.loads(rows[-1][2]).get("schedules_evaluated", "?")
        except ValueError:
            n = "?"
        print("%-24s %9.1f %9.1f %9.1f %10s" % (label, statistics.median(r[0] for r in rows),
                                                 statistics.median(r[1] for r in rows), max(r[0] for r in rows), n))
PY
