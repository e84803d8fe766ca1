#!/usr/bin/env python3
"""Step-time error and time-range figures by kind of step, from a scorer's per-case rows.

usage: scripts/time-by-kind.py SEGADVISE_BIN ROWS.json CASES.json EXAMPLES_DIR [ROWS2.json ...]

ROWS.json: the per-case rows of the sweep scorer (`score-check.py ... --rows ROWS.json`: family,
precision, gpu, mode, status, sec_per_step, pred_time, time_range). CASES.json: the sweep's cases
(family, precision, gpu, mode, example, frames, lora_type, ramtorch). EXAMPLES_DIR: the folder holding
`simpletuner/examples/` (each case's example config is read by `segadvise check` once, on the H100, for
what the trainer reads from it: regional compilation, image tokens, resident weights).

Kinds of step, the first that applies:
  compiled          the example's blocks are regionally compiled (dynamo_use_regional_compilation)
  streamed          weights streamed from the host (RamTorch)
  lycoris           a LyCORIS adapter (lora_type lycoris)
  video/long seq    frames > 1 or more than 8,192 image tokens a sample
  small image       resident weights under 6 GiB (bf16: under ~3B parameters)
  large image       the rest
Prints, per kind and overall: completed runs, median and p90 of |predicted / measured - 1|, the
signed median, the share of measured step times inside the printed 90% range and its median hi/lo.
Several ROWS files print side by side (before / after).
"""
import json
import os
import statistics
import subprocess
import sys


def setup_of(binary, examples, example, cache):
    if example in cache:
        return cache[example]
    path = os.path.join(examples, "simpletuner", "examples", example, "config.json")
    out = {}
    if os.path.exists(path):
        p = subprocess.run([binary, "check", path, "--gpu", "h100", "--format", "json"],
                           capture_output=True, text=True, timeout=60)
        try:
            d = json.loads(p.stdout)
            out = dict(d.get("setup") or {})
            mem = ((d.get("prediction") or {}).get("breakdown") or {}).get("memory_gib") or {}
            out["_weights_gib"] = (mem.get("weights") or 0) + (mem.get("streamed_weights_on_host") or 0)
        except ValueError:
            pass
    cache[example] = out
    return out


def kind_of(case, setup):
    if setup.get("regional_compile"):
        return "compiled"
    if case.get("ramtorch"):
        return "streamed"
    if case.get("lora_type") == "lycoris":
        return "lycoris"
    if (case.get("frames") or 1) > 1 or (setup.get("image_tokens") or 0) > 8192:
        return "video/long seq"
    w = setup.get("_weights_gib")
    if isinstance(w, (int, float)) and w < 6:
        return "small image"
    return "large image"


def figures(rows):
    err = [r["pred_time"] / r["sec_per_step"] - 1 for r in rows]
    a = sorted(abs(e) for e in err)
    inside = [r for r in rows if r.get("time_range")]
    cov = sum(1 for r in inside if r["time_range"][0] <= r["sec_per_step"] <= r["time_range"][1])
    hilo = [r["time_range"][1] / r["time_range"][0] for r in inside if r["time_range"][0] > 0]
    return (len(rows), statistics.median(a) * 100, a[min(len(a) - 1, int(0.9 * len(a)))] * 100,
            statistics.median(err) * 100, cov / len(inside) if inside else float("nan"),
            statistics.median(hilo) if hilo else float("nan"), max(hilo) if hilo else float("nan"))


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    binary, rows_path, cases_path, examples = sys.argv[1:5]
    more = sys.argv[5:]
    cases = json.load(open(cases_path))["cases"]
    by_key = {}
    for c in cases:
        key = (c["family"], c["precision"], c["gpu"], c["mode"])
        if key not in by_key or c.get("variant", "main") == "main":
            by_key[key] = c
    cache = {}
    tables = []
    for path in [rows_path] + more:
        kinds = {}
        for r in json.load(open(path)):
            if r.get("status") != "ok" or not r.get("sec_per_step") or not r.get("pred_time"):
                continue
            c = by_key.get((r["family"], r["precision"], r["gpu"], r["mode"]))
            if not c:
                continue
            k = kind_of(c, setup_of(binary, examples, c["example"], cache))
            kinds.setdefault(k, []).append(r)
            kinds.setdefault("all", []).append(r)
        tables.append((path, kinds))
    order = ["video/long seq", "small image", "large image", "lycoris", "streamed", "compiled", "all"]
    print("%-16s %s" % ("kind", "  ".join("%-58s" % os.path.basename(p) for p, _ in tables)))
    print("%-16s %s" % ("", "  ".join("%-58s" % "runs  med%   p90%  signed  in-range  hi/lo med  max" for _ in tables)))
    for k in order:
        cells = []
        for _, kinds in tables:
            if k in kinds:
                n, med, p90, signed, cov, hl, mx = figures(kinds[k])
                cells.append("%-58s" % ("%4d %6.1f %6.1f %+7.1f %8.2f %9.2f %6.1f" % (n, med, p90, signed, cov, hl, mx)))
            else:
                cells.append("%-58s" % "-")
        print("%-16s %s" % (k, "  ".join(cells)))


if __name__ == "__main__":
    main()
