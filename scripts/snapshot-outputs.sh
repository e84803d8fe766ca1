#!/usr/bin/env bash
# Writes the outputs a refactoring must keep byte-identical into OUT_DIR, one file per command:
# advise of every family on six GPUs (table and JSON), predict of six schedules of every family,
# check of every SimpleTuner example config (JSON) and of every trainer fixture (table and JSON),
# each file holding stdout, stderr and the exit code. Compare two snapshots with `diff -r`.
# usage: scripts/snapshot-outputs.sh SEGADVISE_BIN OUT_DIR [EXAMPLES_ROOT]
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(realpath "$1")"; out="$(realpath -m "$2")"
root="$(realpath "${3:-$here/../shared/reference/simpletuner-examples}")"
mkdir -p "$out"/advise "$out"/predict "$out"/check "$out"/fixtures
run() {  # run FILE CMD...
  local f=$1; shift
  { "$@" 2>&1; echo "exit=$?"; } | sed "s|$here|<repo>|g" > "$f"  # the same text from any checkout
}
families=$("$bin" list models --format json | python3 -c '
import json, sys
print(" ".join(f["id"] for f in json.load(sys.stdin)))')
[ -n "$families" ] || { echo "snapshot: no families listed by $bin" >&2; exit 2; }
for m in $families; do
  for g in h100 l40s 4090 a100-40g 3090 h200; do
    run "$out/advise/$m-$g.txt" "$bin" advise --model "$m" --gpu "$g"
  done
  run "$out/advise/$m-l40s.json" "$bin" advise --model "$m" --gpu l40s --format json
  for s in none layer interval2 seg3-stride6 activation-offload layer+unsloth; do
    run "$out/predict/$m-${s//+/_}.txt" "$bin" predict --model "$m" --gpu h100 --schedule "$s"
  done
done
if [ -d "$root/simpletuner/examples" ]; then
  (cd "$root" && for cfg in simpletuner/examples/*/config.json; do
    n=$(basename "$(dirname "$cfg")")
    run "$out/check/$n.json" "$bin" check "$cfg" --gpu h100 --format json
    run "$out/check/$n-4090-advise.txt" "$bin" check "$cfg" --gpu 4090 --advise
  done)
fi
for f in "$here"/tests/fixtures/trainers/*/*; do
  case "$f" in *.md|*dataset*.toml) continue;; esac
  n="$(basename "$(dirname "$f")")-$(basename "$f")"
  (cd "$(dirname "$f")" && b=$(basename "$f") && run "$out/fixtures/$n-h100.txt" "$bin" check "$b" --gpu h100 --advise &&
   run "$out/fixtures/$n-4090.json" "$bin" check "$b" --gpu 4090 --advise --format json)
done
echo "snapshot: $(find "$out" -type f | wc -l) outputs in $out"
