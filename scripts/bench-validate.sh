#!/usr/bin/env bash
# Predicted against measured peak memory and step time of every schedule shape the checkpoint
# executor knows, on this machine's CPU with LibTorch (needs a build with -DSEGADVISE_WITH_TORCH=ON).
# Step times depend on what else the machine runs: this is a benchmark, not a test (the tests
# assert the bytes only). Usage: scripts/bench-validate.sh [build/segadvise] [steps]
# Setup: 8 Wan-shaped blocks of width 256 (tests/data/tiny-dit.json) at 512x512 (1024 image + 64
# text tokens), LoRA rank 16, one profile measured first on the same machine (5 repeats).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/segadvise}
steps=${2:-3}
model=tests/data/tiny-dit.json
shape=(--resolution 512x512)
profile=$(mktemp --suffix=.profile.json)
trap 'rm -f "$profile"' EXIT
"$bin" profile --model "$model" "${shape[@]}" --device cpu --repeats 5 --quiet --output "$profile" > /dev/null
schedules=(none layer interval2 interval3 seg2-stride4 layer+torch-ffn layer+unsloth seg2-stride3+unsloth
           layer+unsloth-ffn activation-offload seg2-stride4-offload layer-offload)
echo "| schedule | predicted peak MiB | measured peak MiB | error | predicted s/step | measured s/step | error |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in "${schedules[@]}"; do
  "$bin" validate --model "$model" "${shape[@]}" --device cpu --blocks 8 --steps "$steps" --quiet \
    --profile "$profile" --schedule "$s" --format json |
    python3 -c '
import json, sys
r = json.load(sys.stdin)["runs"][0]
mib = 1024.0 ** 2
print("| %s | %.1f | %.1f | %+.1f%% | %.3f | %.3f | %+.1f%% |" % (r["schedule"], r["predicted_peak_bytes"] / mib,
      r["measured_peak_bytes"] / mib, 100 * r["peak_error"], r["predicted_step_s"], r["measured_step_s"],
      100 * r["step_error"]))'
done
