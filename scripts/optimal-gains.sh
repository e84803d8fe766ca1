#!/bin/sh
# Per family at its example shape, on an H100 and an L40S: the best schedule the trainer's knobs
# reach, the optimal per-block plan, and the predicted gain. Prints a markdown table.
# Usage: scripts/optimal-gains.sh [build-dir]
set -eu
build=${1:-build}
bin="$build/segadvise"
models=$("$bin" list models --format json | python3 -c 'import json,sys; print(" ".join(m["id"] for m in json.load(sys.stdin)))')
echo "| model | GPU | best with the trainer's knobs | s/step | peak GiB | optimal plan | s/step | peak GiB | gain |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for m in $models; do
  for g in h100 l40s; do
    out=$("$bin" --model "$m" --gpu "$g" --format json 2>/dev/null) || true
    if [ -z "$out" ]; then echo "| $m | $g | error: $("$bin" --model "$m" --gpu "$g" 2>&1 >/dev/null | head -1) | | | | | | |"; continue; fi
    printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin)
m, g = sys.argv[1], sys.argv[2]
r, o = j.get("recommendation"), j.get("optimal") or {}
def cell(p): return ("%.2f" % p["step_time_s"], "%.1f" % p["peak_vram_gib"])
if r:
    rs, rp = cell(r["prediction"]); rname = r["schedule"]["name"]
else:
    rs, rp, rname = "-", "-", "nothing fits"
if o.get("plan"):
    os_, op = cell(o["prediction"]); desc = o["description"].replace("optimal per-block plan: ", "")
    gain = ("%.2f s (%.1f%%)" % (o["gain_s"], o["gain_percent"])) if o.get("gain_s") is not None else "fits only per-block"
else:
    os_, op, desc, gain = "-", "-", "nothing fits", "-"
print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (m, g, rname, rs, rp, desc, os_, op, gain))
' "$m" "$g"
  done
done
