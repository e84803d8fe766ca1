#!/usr/bin/env bash
# The other trainers' shipped example configs (ai-toolkit `config/examples/*.yaml`, OneTrainer
# `training_presets/*/*.json`): runs `segadvise check CONFIG --gpu GPU` on each and prints its exit code and a
# one-line result (the verdict, or the error saying why it cannot be checked), then the tally
# "predicted / exit 2". A config named after a card (`… 16GB`, `…_24gb`) is checked again with
# `--vram-gib TIER` and its verdict on that card is tallied apart (fits / borderline / does not fit).
# usage: scripts/check-trainer-examples.sh [SEGADVISE_BIN] [EXAMPLES_ROOT] [GPU]
#   EXAMPLES_ROOT holds ai-toolkit/ and onetrainer/ under the trainers' own paths (default
#   tests/fixtures/trainers/shipped, the copies the tests read).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(realpath "${1:-$here/build/segadvise}")"
root="$(realpath "${2:-$here/tests/fixtures/trainers/shipped}")"
gpu="${3:-h100}"
[ -x "$bin" ] || { echo "no segadvise binary at $bin (build first)" >&2; exit 2; }
[ -d "$root" ] || { echo "no examples folder $root" >&2; exit 2; }
cd "$root" || exit 2
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
summary='
import json, sys
j = json.load(sys.stdin); s = j["setup"]; p = j["prediction"]
head = "%s %dx%d b%d %s" % (s["model"], s["width"], s["height"], s["batch"], s["base_model_precision"])
if not p.get("supported", True):
    print("%s\tnot run by the trainer: %s" % (head, p.get("reason", "")[:160]))
else:
    print("%s\t%s peak %.1f GiB of %.1f usable" % (head, p.get("fit") or "?", p["peak_vram_gib"], p.get("usable_vram_gib", 0)))
'
total=0; predicted=0; bad=0
tiers=0; tfits=0; tborder=0; tnofit=0; tbad=0
tier_lines=""
while IFS= read -r -d '' cfg; do
  cfg="${cfg#./}"
  total=$((total + 1))
  out="$("$bin" check "$cfg" --gpu "$gpu" --format json 2>"$err")"
  rc=$?
  if [ $rc -eq 2 ] || [ -z "$out" ]; then
    bad=$((bad + 1))
    printf '%-62s rc=%d  %s\n' "$cfg" "$rc" "$(head -c 300 "$err" | tr '\n' ' ' | sed 's/^segadvise: error: //')"
  else
    predicted=$((predicted + 1))
    line="$(printf '%s' "$out" | python3 -c "$summary")"
    printf '%-62s rc=%d  %s\n' "$cfg" "$rc" "${line//$'\t'/: }"
  fi
  # the card the authors named: "8GB", "16GB", "24gb" as the last size token of the file name
  tier="$(basename "$cfg" | sed -nE 's/.*[ _-]([0-9]+)[gG][bB]?([ ._-].*)?\.(json|ya?ml)$/\1/p')"
  [ -n "$tier" ] || continue
  tiers=$((tiers + 1))
  out="$("$bin" check "$cfg" --vram-gib "$tier" --format json 2>"$err")"
  rc=$?
  if [ $rc -eq 2 ] || [ -z "$out" ]; then
    tbad=$((tbad + 1))
    tier_lines+="$(printf '%-62s %4s GiB  exit 2: %s' "$cfg" "$tier" "$(head -c 200 "$err" | tr '\n' ' ')")"$'\n'
    continue
  fi
  line="$(printf '%s' "$out" | python3 -c "$summary")"
  verdict="${line#*$'\t'}"
  case "$verdict" in
    fits*) tfits=$((tfits + 1)) ;;
    borderline*) tborder=$((tborder + 1)) ;;
    *) tnofit=$((tnofit + 1)) ;;
  esac
  tier_lines+="$(printf '%-62s %4s GiB  %s' "$cfg" "$tier" "$verdict")"$'\n'
done < <(find . \( \( -path './ai-toolkit/config/examples/*' \( -name '*.yaml' -o -name '*.yml' \) \) -o \
                 \( -path './onetrainer/training_presets/*' -name '*.json' \) \) -print0 | sort -z)
pct=0; [ $total -gt 0 ] && pct=$((100 * predicted / total))
echo "configs $total: predicted $predicted ($pct%), exit 2 $bad (gpu $gpu)"
if [ $tiers -gt 0 ]; then
  echo
  echo "named after a card (checked with --vram-gib TIER):"
  printf '%s' "$tier_lines"
  echo "tiered $tiers: fits $tfits, borderline $tborder, does not fit $tnofit, exit 2 $tbad"
fi
