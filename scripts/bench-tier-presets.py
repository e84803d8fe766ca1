#!/usr/bin/env python3
"""The trainers' memory-tier presets, checked on the tier their names claim.

Trainers ship presets named after the card they are meant for: SimpleTuner's examples
(`ideogram-image-24g.peft-lora/config.json`, `ltxvideo2-19b-t2v.peft-lora+16G`, `…-141g`), OneTrainer's
training presets (`#qwen LoRA 24GB.json`), ai-toolkit's `train_lora_flux_24gb.yaml`. For each one found
under the folders given, this runs `segadvise check PRESET --vram-gib TIER --format json` in the preset's
folder and prints one line: the verdict on that tier, the predicted peak with its 90% range, the phase
that sets it, and what stood out (the largest resident part of that phase, the first warning, or the
reason check gave no answer). A summary line counts the verdicts.

A benchmark that prints figures, not a test: nothing here asserts a verdict.

usage: scripts/bench-tier-presets.py [--bin build/segadvise] [--verbose] FOLDER...
  e.g. scripts/bench-tier-presets.py ~/SimpleTuner/simpletuner/examples ~/OneTrainer/training_presets \\
       ~/ai-toolkit/config/examples
"""

import argparse
import json
import os
import re
import subprocess
import sys

# a tier in a name: "-24g", "-24gb", "+16G", " 24GB", "_24gb", followed by the end or a separator
# (".peft-lora", ".json", "+ramtorch"); "8xh100", "480p" and "1.3b" are no tiers
TIER = re.compile(r"(?:^|[-_+ #])(\d{1,3})\s?g(?:i?b)?(?=$|[.+\-_ ])", re.IGNORECASE)
CONFIG_NAMES = ("config.json", "config.toml", "config.env", "config.yaml")
PRESET_SUFFIXES = (".json", ".yaml", ".yml", ".toml", ".env", ".sh")


def tier_of(name):
    found = TIER.findall(name)
    return int(found[-1]) if found else None


def presets(folders):
    """(tier, display name, file) for every tier-named preset under the folders"""
    out = []
    for root in folders:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            here = os.path.basename(dirpath.rstrip(os.sep))
            tier = tier_of(here) if dirpath != root else None
            if tier:
                # a preset folder (SimpleTuner's examples): its config file
                for c in CONFIG_NAMES:
                    if c in filenames:
                        out.append((tier, here, os.path.join(dirpath, c)))
                        break
                dirnames[:] = []
                continue
            for f in sorted(filenames):
                t = tier_of(f)
                if t and f.endswith(PRESET_SUFFIXES):
                    out.append((t, f, os.path.join(dirpath, f)))
    return out


def gib(x):
    return "%.1f" % x if isinstance(x, (int, float)) else "-"


def check(binary, tier, path):
    """(verdict, peak text, what stood out, memory breakdown or None)"""
    folder = os.path.dirname(os.path.abspath(path))
    cmd = [binary, "check", os.path.abspath(path), "--vram-gib", str(tier), "--format", "json"]
    p = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300)
    if p.returncode == 2 or not p.stdout.strip():
        why = " ".join(p.stderr.split())
        why = re.sub(r"^segadvise: error: ", "", why).replace(os.path.abspath(path) + ": ", "")
        why = re.sub(r"; tried:.*", "", why)
        return "exit 2", "-", why[:240], None
    j = json.loads(p.stdout)
    pred = j.get("prediction", {})
    if not pred.get("supported", True):
        return "not run", "-", "the trainer would not run it: " + pred.get("reason", "")[:200], None
    lo, hi = (pred.get("peak_vram_gib_range") or [None, None])[:2]
    peak = "%s [%s-%s] %s" % (gib(pred.get("peak_vram_gib")), gib(lo), gib(hi), pred.get("peak_phase", "step"))
    stood = []
    phase = (pred.get("phases") or {}).get(pred.get("peak_phase", ""), {})
    resident = sorted(phase.get("resident", []), key=lambda r: -r.get("gib", 0))
    if resident:
        stood.append("largest: %s %s GiB" % (resident[0].get("what", "?"), gib(resident[0].get("gib"))))
    if j.get("setup", {}).get("confidence") not in (None, "high", "medium"):
        stood.append("confidence " + str(j["setup"]["confidence"]))
    warnings = j.get("warnings") or []
    if warnings:
        first = " ".join(str(warnings[0]).split()).replace(os.path.abspath(path) + ": ", "")
        stood.append("%d warning(s): %s" % (len(warnings), re.sub(r"; tried: [^;]*", "", first)[:160]))
    memory = (pred.get("breakdown") or {}).get("memory_gib")
    return str(pred.get("fit")), peak, "; ".join(stood), memory


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "segadvise"))
    ap.add_argument("--verbose", action="store_true", help="also print the step's memory breakdown")
    ap.add_argument("folders", nargs="*")
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)  # each check runs in its preset's folder
    if not os.access(a.bin, os.X_OK):
        print("no segadvise at " + a.bin + " (--bin names it)", file=sys.stderr)
        return 2
    found = presets(a.folders)
    if not found:
        print("no tier-named presets under: " + (" ".join(a.folders) or "(no folders given)"))
        return 0
    counts = {}
    width = max(len(n) for _, n, _ in found)
    print("%-*s %5s  %-11s %-36s %s" % (width, "preset", "tier", "verdict", "peak GiB [90% range] phase", "what stood out"))
    for tier, name, path in found:
        try:
            verdict, peak, stood, memory = check(a.bin, tier, path)
        except (subprocess.TimeoutExpired, ValueError) as e:
            verdict, peak, stood, memory = "error", "-", str(e)[:200], None
        counts[verdict] = counts.get(verdict, 0) + 1
        print("%-*s %5d  %-11s %-36s %s" % (width, name, tier, verdict, peak, stood))
        if a.verbose and memory:
            print("%*s step memory GiB: %s" % (width, "", ", ".join("%s %.2f" % (k, v) for k, v in sorted(memory.items()) if v)))
    n = len(found)
    order = ["fits", "borderline", "does not fit", "not run", "exit 2", "error"]
    parts = ["%s %d" % (k, counts[k]) for k in order + sorted(set(counts) - set(order)) if counts.get(k)]
    print("tier presets %d: %s; confident fit %.0f%%" % (n, ", ".join(parts), 100.0 * counts.get("fits", 0) / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
