#!/usr/bin/env python3
"""Fit the part of a peak's range that a user's run adds beyond the model (calibration/data/published-band.json).

usage: fit-published-band.py SEGADVISE_BIN MANIFEST.json [--write calibration/data/published-band.json]

MANIFEST lists published figures with the trainer config each describes (the format of the reference set
published-measurements/manifest.json: cases with "main", "gpu", "claim" {kind, value, unit, quantity}). For every
"peak_gb" case it runs `BIN check MAIN --format json` in MAIN's folder on the claim's card (a catalog id; "<N>GB"
as --vram-gib N; none: 4090) and reads the model's figures before any widening: the allocated range's lower end
and the nvidia-smi range's upper end (prediction.peak_allocated_gib_range, peak_nvidia_smi_gib_range). A figure
below the first needs lo = figure / allocated_lo; above the second, hi = figure / nvidia_smi_hi. Each end is
split-conformal at 95% (a 90% range, 5% beyond each end): the ceil(0.95 (n + 1))-th most extreme need of the n
figures (the most extreme when n < 19). Prints one line per figure and the factors; --write writes them.
"""
import json
import math
import os
import re
import subprocess
import sys


def to_gib(value, unit):
    return {"GB": value * 1e9 / 2**30, "MiB": value / 1024.0, "GiB": float(value)}[unit]


def catalog(binary):
    out = subprocess.run([binary, "list", "gpus"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines()[1:] if line.split() and not set(line.split()[0]) <= set("-")}


def card_args(case, cat):
    g = case.get("gpu")
    if g is None:
        return ["--gpu", "4090"]
    if g in cat:
        return ["--gpu", g]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)GB", g)
    return ["--vram-gib", m.group(1)] if m else ["--gpu", g]


def conformal_end(needs):
    """The ceil(0.95 (n+1))-th most extreme of `needs` (sorted most extreme first), capped at the most extreme."""
    n = len(needs)
    k = min(n, math.ceil(0.95 * (n + 1)))
    return needs[n - k] if n else 1.0


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    binary, manifest = os.path.abspath(args[0]), os.path.abspath(args[1])
    write = args[args.index("--write") + 1] if "--write" in args else None
    base = os.path.dirname(manifest)
    cases = [c for c in json.load(open(manifest, encoding="utf-8"))["cases"] if c["claim"]["kind"] == "peak_gb"]
    cat = catalog(binary)
    lo_needs, hi_needs = [], []
    for c in cases:
        main_path = os.path.join(base, c["main"])
        p = subprocess.run([binary, "check", os.path.basename(main_path), *card_args(c, cat), "--format", "json"],
                           cwd=os.path.dirname(main_path), capture_output=True, text=True, timeout=120)
        try:
            pred = json.loads(p.stdout)["prediction"]
            alo = pred["peak_allocated_gib_range"][0]
            shi = pred["peak_nvidia_smi_gib_range"][1]
        except (ValueError, KeyError, TypeError):
            print(f"{c['id']:40} no answer (exit {p.returncode})")
            continue
        v = to_gib(c["claim"]["value"], c["claim"]["unit"])
        lo, hi = min(1.0, v / alo), max(1.0, v / shi)
        lo_needs.append(lo)
        hi_needs.append(hi)
        print(f"{c['id']:40} figure {v:6.2f} GiB ({c['claim']['quantity']}); allocated lo {alo:6.2f}, nvidia-smi hi {shi:6.2f}"
              f"; needs lo x{lo:.3f} hi x{hi:.3f}")
    lo_f = conformal_end(sorted(lo_needs))                 # smallest first: the most extreme low need
    hi_f = conformal_end(sorted(hi_needs, reverse=True))   # largest first
    n = len(lo_needs)
    inside = sum(lo >= lo_f - 1e-12 and hi <= hi_f + 1e-12 for lo, hi in zip(lo_needs, hi_needs))
    print(f"figures {n}; lo_factor {lo_f:.3f} hi_factor {hi_f:.3f}; inside the widened range {inside}/{n}; "
          f"inside the quantity range alone {sum(lo == 1.0 and hi == 1.0 for lo, hi in zip(lo_needs, hi_needs))}/{n}")
    if write:
        band = {"source": f"scripts/fit-published-band.py on {n} published peak figures ({os.path.basename(os.path.dirname(manifest))}"
                          f"/{os.path.basename(manifest)}: SimpleTuner quickstart guides and a OneTrainer issue), split-conformal "
                          "at 95% on each end", "lo_factor": round(lo_f, 4), "hi_factor": round(hi_f, 4), "figures": n}
        with open(write, "w", encoding="utf-8") as f:
            json.dump(band, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
