#!/usr/bin/env bash
# The trainer's tiered examples: configs named after the card they are meant for (`ideogram-image-24g`,
# `mageflow-image-12g` … `-80g`, `infinitetalk-14b-480p-24gb`, `…-141g`). Runs
# `segadvise check CONFIG --vram-gib TIER` on each and prints the tier, the predicted peak and the
# verdict on the card the authors named: "fits" (the 90% range's upper end fits with headroom),
# "borderline" (the range straddles it), "does not fit", or "exit 2" with the reason when the config
# cannot be checked (a data-backend file the trainer's repository lacks, an unmodelled component).
# usage: scripts/check-tiers.sh [SEGADVISE_BIN] [EXAMPLES_ROOT]
set -u
source "$(dirname "$0")/examples-env.sh"
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
n=0; fits=0; border=0; nofit=0; bad=0
printf '%-58s %5s %9s  %s\n' example tier "peak GiB" verdict
for cfg in simpletuner/examples/*/config.json; do
  name="$(basename "$(dirname "$cfg")")"
  # the tier: a "-<N>g" or "-<N>gb" token in the name (not "8xh100" multi-GPU recipes)
  tier="$(printf '%s' "$name" | sed -nE 's/.*-([0-9]+)gb?([.+-].*)?$/\1/p')"
  [ -n "$tier" ] || continue
  n=$((n + 1))
  out="$("$bin" check "$cfg" --vram-gib "$tier" --format json 2>"$err")"
  rc=$?
  if [ $rc -eq 2 ] || [ -z "$out" ]; then
    bad=$((bad + 1))
    # the reason without the config's own path or the list of paths tried
    printf '%-58s %5s %9s  exit 2: %s\n' "$name" "$tier" "-" "$(tr '\n' ' ' <"$err" | sed 's/^segadvise: error: //; s/^[^ ]*config\.json: //; s/; tried: .*//' | head -c 300)"
    continue
  fi
  line="$(printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin); p = j["prediction"]
if not p.get("supported", True):
    print("-\tnot run by the trainer: " + p.get("reason", "")[:160])
else:
    print("%.1f\t%s (usable %.1f GiB)" % (p["peak_vram_gib"], str(p.get("fit")), p.get("usable_vram_gib", 0)))
')"
  peak="${line%%$'\t'*}"; verdict="${line#*$'\t'}"
  case "$verdict" in
    fits*) fits=$((fits + 1)) ;;
    borderline*) border=$((border + 1)) ;;
    *) nofit=$((nofit + 1)) ;;
  esac
  printf '%-58s %5s %9s  %s\n' "$name" "$tier" "$peak" "$verdict"
done
echo "tiered examples $n: fits $fits, borderline $border, does not fit $nofit, exit 2 $bad"
