#!/usr/bin/env bash
# Runs `segadvise check` on every SimpleTuner example config and prints the whole run's phases: the
# peak GiB of startup_caching, model_load, training_step, validation and save, which one sets the
# run's peak, and the verdict. The trainer's tiered examples (names with -12g, -24g, +16G, …) are
# judged on a card of that size (--vram-gib); the others on GPU (default h100).
# usage: scripts/check-phases.sh [SEGADVISE_BIN] [EXAMPLES_ROOT] [GPU]
set -u
source "$(dirname "$0")/examples-env.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for cfg in simpletuner/examples/*/config.json; do
  name="$(basename "$(dirname "$cfg")")"
  tier="$(printf '%s' "$name" | grep -oiE '[-+]([0-9]+)gb?([.+]|$)' | head -1 | grep -oE '[0-9]+')"
  if [ -n "$tier" ]; then card=(--vram-gib "$tier"); where="${tier}G"; else card=(--gpu "$gpu"); where="$gpu"; fi
  "$bin" check "$cfg" "${card[@]}" --format json >"$tmp/out.json" 2>"$tmp/err.txt"
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$where" "$rc" >"$tmp/head.txt"
  python3 - "$tmp/head.txt" "$tmp/out.json" "$tmp/err.txt" >>"$tmp/rows.tsv" <<'PY'
import json, sys
name, where, rc = open(sys.argv[1]).read().strip().split("\t")
try:
    j = json.load(open(sys.argv[2]))
except Exception:
    err = open(sys.argv[3]).read().strip().replace("\n", " ").replace("segadvise: error: ", "")[:150]
    print("\t".join([name, where, rc, "error", err])); sys.exit()
p = j["prediction"]
ph = p.get("phases")
if not ph:
    print("\t".join([name, where, rc, "unsupported", (p.get("reason") or "")[:150]])); sys.exit()
cells = []
for k in ("startup_caching", "model_load", "training_step", "validation", "save"):
    v = ph[k]["peak_vram_gib"]
    cells.append("-" if v is None else "%.1f" % v)
fix = "; ".join("%s=%s" % (a["key"], json.dumps(a["value"])) for a in j.get("phase_advice", []))
print("\t".join([name, where, rc, p["peak_phase"], " ".join(cells), p.get("fit") or ("fits" if p["fits"] else "does-not-fit"), fix]))
PY
done
python3 - "$tmp/rows.tsv" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
print("%-58s %-5s %-2s %-15s %-31s %-12s %s" % ("example", "card", "rc", "peak phase", "startup load step valid save", "run", "phase advice"))
peaks, verdicts, tiers, errors = collections.Counter(), collections.Counter(), [], 0
for r in rows:
    if r[3] in ("error", "unsupported"):
        errors += 1
        print("%-58s %-5s %-2s %s: %s" % (r[0][:58], r[1], r[2], r[3], r[4]))
        continue
    print("%-58s %-5s %-2s %-15s %-31s %-12s %s" % (r[0][:58], r[1], r[2], r[3], r[4], r[5], r[6]))
    peaks[r[3]] += 1
    verdicts[r[5]] += 1
    if r[1].endswith("G"):
        tiers.append((r[0], r[1], r[5], r[3]))
print()
print("examples %d: peak set by %s; %d not predicted (error or not run by the trainer)" %
      (len(rows), ", ".join("%s %d" % kv for kv in peaks.most_common()), errors))
print("run verdicts (the worst phase's 90%% range against the card): %s" % ", ".join("%s %d" % kv for kv in verdicts.most_common()))
print("tiered examples judged on their card: %d, fit %d, borderline %d, do not fit %d" %
      (len(tiers), sum(t[2] == "fits" for t in tiers), sum(t[2] == "borderline" for t in tiers),
       sum(t[2] not in ("fits", "borderline") for t in tiers)))
for t in tiers:
    if t[2] != "fits":
        print("  %s: %s on %s (peak in %s)" % (t[2], t[0], t[1], t[3]))
PY
