#!/usr/bin/env bash
# The prepared GPU check: on a machine with an NVIDIA GPU and PyTorch, in one call of under ten minutes,
#   1. builds segadvise and segadvise-torch against the LibTorch inside that PyTorch,
#   2. profiles three families at the shapes their trainers' examples train
#      (flux1 1024x1024, wan2.1-14b 832x480x81f, qwen-image 1024x1024),
#   3. validates two schedules of flux1 at 1024x1024 (all 57 blocks, LoRA rank 16): layer and none,
#   4. anchors the prediction of `none` on the validated `layer` step and compares it with the
#      validated `none`,
#   5. writes one JSON report with its provenance (GPU, driver, CUDA, torch, date, commit).
#
#   scripts/gpu-check.sh --prepare           here (no GPU): collect the header-only dependencies and
#                                            yaml-cpp into .gpu-deps/ (git-ignored) for the GPU machine,
#                                            which has PyTorch, CMake and ninja but no Debian -dev packages
#   scripts/gpu-check.sh --out DIR           on the GPU machine: everything above; DIR/gpu-check.json
#   scripts/gpu-check.sh --dry-run --out DIR every step the CPU can: configures against .gpu-deps (when
#                                            prepared) to check it is complete, then runs the same steps
#                                            with the CPU build in build/ on tests/data/tiny-dit.json at
#                                            small shapes; the report says dry_run: true (CI runs this)
#
# Exit code: 0 every step ran, 1 a step failed (the report names it; later steps still run when they can).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode=gpu; out=""
while (($#)); do
  case "$1" in
    --prepare) mode=prepare ;;
    --dry-run) mode=dry ;;
    --out) out="$2"; shift ;;
    *) echo "gpu-check: unknown argument '$1' (--prepare | --dry-run | --out DIR)" >&2; exit 2 ;;
  esac
  shift
done
deps="$root/.gpu-deps"

# ---------------------------------------------------------------------------------- --prepare
if [[ $mode == prepare ]]; then
  rm -rf "$deps"; mkdir -p "$deps/usr/include" "$deps/usr/share/cmake" "$deps/usr/lib/x86_64-linux-gnu/cmake"
  cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/toml11 /usr/include/toml.hpp \
    /usr/include/yaml-cpp "$deps/usr/include/" 2>/dev/null
  [[ -d /usr/include/CLI ]] || { echo "gpu-check: CLI11 headers missing (scripts/setup.sh installs them)" >&2; exit 2; }
  for p in nlohmann_json CLI11 toml11; do cp -r "/usr/share/cmake/$p" "$deps/usr/share/cmake/"; done
  for p in yaml-cpp Boost-1.74.0 boost_headers-1.74.0 BoostDetectToolset-1.74.0.cmake; do
    cp -r "/usr/lib/x86_64-linux-gnu/cmake/$p" "$deps/usr/lib/x86_64-linux-gnu/cmake/"
  done
  cp -P /usr/lib/x86_64-linux-gnu/libyaml-cpp.so* "$deps/usr/lib/x86_64-linux-gnu/"
  # the Boost headers the planner really includes (Boost.Graph: planner/include/.../block_graph.hpp)
  echo '#include "segadvise/planner/block_graph.hpp"' |
    g++ -std=c++17 -M -x c++ - -I planner/include -I families/include -I costmodel/include |
    tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u | while read -r h; do
      mkdir -p "$deps/$(dirname "$h")"; cp "$h" "$deps/$h"
    done
  echo "gpu-check: prepared $(du -sh "$deps" | cut -f1) in .gpu-deps ($(find "$deps" -type f | wc -l) files)"
  exit 0
fi

[[ -n $out ]] || { echo "gpu-check: --out DIR is required" >&2; exit 2; }
mkdir -p "$out"; out=$(realpath "$out")
log="$out/gpu-check.log"; : > "$log"
steps_json="$out/steps.jsonl"; : > "$steps_json"
failed=0
step() {  # step NAME CMD... : stdout to DIR/NAME.out, stderr to the log; records rc and seconds
  local name=$1; shift
  local t0; t0=$(date +%s%N)
  echo "== $name: $*" | tee -a "$log" >&2
  "$@" > "$out/$name.out" 2>> "$log"
  local rc=$?
  printf '{"step": "%s", "rc": %d, "seconds": %.1f}\n' "$name" "$rc" \
    "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" >> "$steps_json"
  ((rc == 0)) || { failed=1; echo "   $name failed (rc $rc); see $log" >&2; }
  return $rc
}

# --------------------------------------------------------------------------------- provenance
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
torch_version=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
torch_cuda=$(python3 -c 'import torch; print(torch.version.cuda or "")' 2>/dev/null)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)

# ---------------------------------------------------------------------------------- the build
if [[ $mode == gpu ]]; then
  [[ -n $gpu_name ]] || { echo "gpu-check: no GPU (nvidia-smi found none); use --dry-run here" >&2; exit 2; }
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  # PyTorch's headers need C++20 from 2.10 on; C++17 before
  std=$(python3 -c 'import torch; v=tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]); print(20 if v >= (2, 10) else 17)')
  bdir="$root/build-gpu"
  prefix="$torch_prefix"; flags=""
  # the carried headers also serve those included without a CMake package (toml11's toml.hpp)
  [[ -d $deps/usr ]] && { prefix="$torch_prefix;$deps/usr"; flags="-isystem $deps/usr/include"; }
  step configure cmake -S . -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSEGADVISE_WITH_TORCH=ON \
    -DSEGADVISE_BUILD_TESTS=OFF -DCMAKE_CXX_STANDARD="$std" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DTORCH_CUDA_ARCH_LIST=9.0 || exit 1
  step build cmake --build "$bdir" -j "$(nproc)" --target segadvise segadvise-torch || exit 1
  bin="$bdir/segadvise"; device=cuda
  catalog_gpu=$(case "$gpu_name" in *H200*) echo h200 ;; *H100*PCIe*) echo h100-pcie ;; *H100*) echo h100 ;;
                *L40S*) echo l40s ;; *A100*40GB*) echo a100-40g ;; *A100*) echo a100 ;; *4090*) echo 4090 ;;
                *5090*) echo 5090 ;; *B200*) echo b200 ;; *) echo auto ;; esac)
  families=("flux1 --resolution 1024x1024" "wan2.1-14b --resolution 832x480 --frames 81" "qwen-image --resolution 1024x1024")
  val_model=(--model flux1 --resolution 1024x1024)
  val_extra=(--steps 3 --warmup 1 --gpu "$catalog_gpu")
else
  # dry run: the deps folder must be enough for CMake to find every package (configure only; the CPU
  # build in build/ then runs the steps)
  if [[ -d $deps/usr ]]; then
    step configure-with-deps cmake -S . -B "$root/build-gpu-dry" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSEGADVISE_WITH_TORCH=ON -DSEGADVISE_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$deps/usr"
    for v in nlohmann_json_DIR CLI11_DIR yaml-cpp_DIR Boost_DIR; do
      d=$(grep "^$v:" "$root/build-gpu-dry/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
      if [[ $d != "$deps"* ]]; then
        echo "gpu-check: $v is '$d', not in .gpu-deps: the GPU machine would not find it" | tee -a "$log" >&2
        failed=1
      fi
    done
  fi
  bin="$root/build/segadvise"; device=cpu; catalog_gpu=h100
  [[ -x $root/build/segadvise-torch ]] || { echo "gpu-check: --dry-run needs build/segadvise-torch (scripts/setup.sh)" >&2; exit 2; }
  tiny="$root/tests/data/tiny-dit.json"
  families=("$tiny --resolution 256x256" "$tiny --resolution 384x256 --batch 2" "$tiny --resolution 128x128")
  val_model=(--model "$tiny" --tokens 256)
  val_extra=(--steps 1 --warmup 0)
fi

# ---------------------------------------------------------------------------- profile, validate
i=0
for f in "${families[@]}"; do
  read -r -a args <<< "$f"
  step "profile-$i-${args[0]##*/}" "$bin" profile --model "${args[@]:0:1}" "${args[@]:1}" --device "$device" \
    --quiet --output "$out/profile-$i.json"
  i=$((i + 1))
done
for s in layer none; do  # DIR/validate-SCHEDULE.out is its JSON report
  step "validate-$s" "$bin" validate "${val_model[@]}" --device "$device" --schedule "$s" "${val_extra[@]}" \
    --profile "$out/profile-0.json" --format json --quiet
done

# ------------------------------------------------------------------------------------ the report
python3 - "$out" "$mode" "$gpu_name" "$driver" "$torch_version" "$torch_cuda" "$commit" "$failed" <<'EOF' || failed=1
import datetime, glob, json, os, sys
out, mode, gpu, driver, torch_v, torch_cuda, commit, failed = sys.argv[1:9]
def load(p):
    try:
        with open(p) as f: return json.load(f)
    except (OSError, ValueError): return None
steps = [json.loads(l) for l in open(os.path.join(out, "steps.jsonl")) if l.strip()]
profiles = {os.path.basename(p): load(p) for p in sorted(glob.glob(os.path.join(out, "profile-*.json")))}
def profile_summary(v):
    if not v: return None
    return {k: v.get(k) for k in ("family", "device", "gpu_id", "dtype", "torch_version", "attention_backend",
                                  "tokens_image", "tokens_text", "batch", "pcie")} | {
        "block_kinds": [{k: b.get(k) for k in ("list", "kind", "tokens", "saved_attention_bytes", "saved_ffn_bytes",
                                               "forward_fit", "backward_fit", "extrapolated")} for b in v.get("block_kinds", [])]}
runs = {}
for s in ("layer", "none"):
    v = load(os.path.join(out, "validate-%s.out" % s))
    runs[s] = v["runs"][0] if v and v.get("runs") else None
anchor = None
if runs["layer"] and runs["none"]:
    L, N = runs["layer"], runs["none"]
    # level anchoring on the measured layer step: the model's ratio none/layer for time, its difference
    # for the peak (the static part cancels), applied to what layer measured
    t = L["measured_step_s"] * N["predicted_step_s"] / L["predicted_step_s"]
    p = L["measured_peak_bytes"] + N["predicted_peak_bytes"] - L["predicted_peak_bytes"]
    anchor = {"on": "layer", "predicts": "none",
              "anchored_step_s": t, "measured_step_s": N["measured_step_s"],
              "step_error": t / N["measured_step_s"] - 1,
              "anchored_peak_bytes": p, "measured_peak_bytes": N["measured_peak_bytes"],
              "peak_error": p / N["measured_peak_bytes"] - 1,
              "static_step_error": N["step_error"], "static_peak_error": N["peak_error"]}
report = {
    "dry_run": mode != "gpu",
    "provenance": {"gpu": gpu or None, "driver": driver or None, "torch": torch_v or None,
                   "torch_cuda": torch_cuda or None, "commit": commit,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
    "steps": steps,
    "profiles": {k: profile_summary(v) for k, v in profiles.items()},
    "validate": runs,
    "anchor": anchor,
    "ok": failed == "0" and all(s["rc"] == 0 for s in steps) and anchor is not None,
}
with open(os.path.join(out, "gpu-check.json"), "w") as f: json.dump(report, f, indent=2)
print("gpu-check: %s, %d steps, anchor %s -> %s" % ("ok" if report["ok"] else "FAILED", len(steps),
      "none" if anchor is None else "step %+.1f%%, peak %+.1f%%" % (100 * anchor["step_error"], 100 * anchor["peak_error"]),
      os.path.join(out, "gpu-check.json")))
sys.exit(0 if report["ok"] else 1)
EOF
exit $failed
