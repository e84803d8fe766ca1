#!/usr/bin/env bash
# Runs `segadvise check` on every SimpleTuner example config and prints, per example, the exit code
# and a one-line result (the prediction, or the error saying what cannot be checked).
# usage: scripts/check-examples.sh [SEGADVISE_BIN] [EXAMPLES_ROOT] [GPU]
#   EXAMPLES_ROOT holds simpletuner/examples/*/config.json (default ../shared/reference/simpletuner-examples).
# It runs from EXAMPLES_ROOT so that `simpletuner/examples/…` data-backend paths resolve as they do for
# the trainer; `config/examples/…` paths are found through the config's parent folders.
set -u
source "$(dirname "$0")/examples-env.sh"
total=0; fits=0; nofit=0; bad=0
for cfg in simpletuner/examples/*/config.json; do
  name="$(basename "$(dirname "$cfg")")"
  out="$("$bin" check "$cfg" --gpu "$gpu" --format json 2>/tmp/check-examples.err.$$)"
  rc=$?
  total=$((total + 1))
  if [ $rc -eq 2 ] || [ -z "$out" ]; then
    bad=$((bad + 1))
    line="$(head -c 400 /tmp/check-examples.err.$$ | tr '\n' ' ' | sed 's/^segadvise: error: //')"
  else
    [ $rc -eq 0 ] && fits=$((fits + 1)) || nofit=$((nofit + 1))
    line="$(printf '%s' "$out" | python3 -c '
import json, sys
j = json.load(sys.stdin); s = j["setup"]; p = j["prediction"]
shape = "%dx%d" % (s["width"], s["height"]) + ("x%df" % s["frames"] if s["frames"] > 1 else "")
head = "%s %s b%d %s %s" % (s["model"], shape, s["batch"], s["base_model_precision"], j["schedule"]["name"])
if p["supported"]:
    print("%s: %s peak %.1f GiB, %.2f s/step; %d warning(s)" % (head, p.get("fit") or "not run", p["peak_vram_gib"], p["step_time_s"], len(j["warnings"])))
else:
    print("%s: not run by the trainer: %s" % (head, p["reason"][:200]))
')"
  fi
  printf '%-62s rc=%d  %s\n' "$name" "$rc" "$line"
done
rm -f /tmp/check-examples.err.$$
echo "examples $total: fits $fits, does not fit / not run $nofit, error $bad (gpu $gpu)"
