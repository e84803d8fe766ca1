#!/usr/bin/env bash
# Whole-process checks of the CLI: answers, exit codes, error messages. Usage: cli_test.sh BIN [TORCH_BIN]
# With TORCH_BIN (segadvise-torch), also its flag checks, which must fail before anything is measured.
set -u
bin=$1
torch_bin=${2:-}
pass=0 fail=0
# runs kept by `segadvise runs add` (the user's cache) must not move these answers: an empty cache of our own
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
expect() {  # expect CODE PATTERN -- ARGS...
  local code=$1 pattern=$2; shift 3
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [[ $rc -eq $code ]] && grep -qE -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: segadvise $* -> rc $rc (want $code), output:"; head -5 <<<"$out"
  fi
}
expect 0 'Recommendation: ' -- --model wan14b --gpu l40s
# the example's RamTorch streaming, which that recommendation assumes, is among the keys to merge
expect 0 '"ramtorch": true' -- --model wan14b --gpu l40s
# the example's flash-attn-3-hub on a Hopper card; on an L40S (which FlashAttention-3 does not run on) the
# advice assumes the trainer's default and its keys leave the mechanism out
expect 0 '"attention_mechanism": "flash-attn-3-hub"' -- --model wan14b --gpu h100
expect 0 'flash-attn-3-hub is FlashAttention-3, a Hopper kernel' -- --model wan14b --gpu l40s
if "$bin" --model wan14b --gpu l40s 2>&1 | grep -q '"attention_mechanism"'; then
  fail=$((fail + 1)); echo "FAIL: advise --model wan14b --gpu l40s printed an attention_mechanism the L40S cannot run"
else
  pass=$((pass + 1))
fi
# and so is the base precision asked for
expect 0 '"base_model_precision": "int8-quanto"' -- --model flux1 --gpu h100 --precision int8-quanto
# the setup line names the precision asked for, and the kernels it is timed with where they differ
expect 0 'base int2-quanto \(timed as int4-quanto kernels\)' -- predict --model flux1 --gpu h100 --schedule layer --precision int2-quanto
expect 0 'base int8-quanto, optimizer' -- predict --model flux1 --gpu h100 --schedule layer --precision int8-quanto
# the printed keys can be merged into a config: no null (SimpleTuner skips one), interval 1 = unset
# (on an H100 the example's Wan 14B setup is recommended `layer`: interval 1)
expect 0 '"gradient_checkpointing_interval": 1' -- --model wan14b --gpu h100
# interval2 (+unsloth) without a stride on Wan's segmented path: the keys set stride = interval (the
# same segments), so a stride already in the user's config is overridden and nothing is left to delete
# (the schedule named, on a card it fits with room: which one advise recommends, and whether a
# schedule is borderline on 48 GB, move with the fitted ranges)
expect 0 '"gradient_checkpointing_segment_stride": 2' -- predict -m wan14b --gpu l40s --vram-gib 80 --schedule interval2+unsloth --format json
if "$bin" --model wan14b --gpu l40s 2>&1 | grep -q 'Also delete'; then
  fail=$((fail + 1)); echo "FAIL: advise --model wan14b asked to delete a key its own keys override"
else
  pass=$((pass + 1))
fi
# HiDream's per-block path reads any stride as i % stride < interval: a stride in the config must go
# (predict names it in config_remove for the schedule named: which schedule advise recommends, and so
# whether its table prints the "Also delete" line, moves with the model and the fitted ranges)
expect 0 '^ +"gradient_checkpointing_segment_stride"$' -- predict -m hidream --gpu l40s --schedule interval2 --format json
if "$bin" --model wan14b --gpu l40s 2>&1 | grep -q ': null'; then
  fail=$((fail + 1)); echo "FAIL: advise --model wan14b printed a null config key"
else
  pass=$((pass + 1))
fi
# unmeasured, Flux on a 24 GB card has a confident recommendation (its whole 90% range fits); on a
# 19 GiB card it is only borderline, and a measured layer run settles it
expect 0 '"recommendation"' -- advise --model flux --gpu 4090 --format json
expect 3 '"borderline"' -- advise --model flux --vram-gib 17 --format json
expect 0 '"recommendation"' -- advise --model flux --gpu 4090 --format json --measured layer:3.1:17.5
expect 0 '"peak_vram_gib_range"' -- predict --model flux1 --gpu h100 --schedule layer --format json
expect 0 '"fit": "fits"' -- predict --model flux1 --gpu h100 --schedule layer --format json
expect 0 'layer: 1.18 s/step, 16.9 GiB measured' -- predict --model flux1 --gpu l40s --schedule none --measured layer:1.18:16.9
expect 2 "--measured 'layer:1:0.5'" -- advise --model flux --gpu 4090 --measured layer:1:0.5
expect 2 "--measured 'layr:1:20'" -- advise --model flux --gpu 4090 --measured layr:1:20
expect 2 "--measured 'layer:nan:20'" -- advise --model flux --gpu 4090 --measured layer:nan:20
expect 0 '^\| schedule' -- advise --model sd3 --gpu h100 --format markdown
expect 2 "unknown model 'wan15b'.*nearest" -- --model wan15b --gpu l40s
expect 2 "unknown GPU 'l40x'" -- --model wan14b --gpu l40x
expect 2 "--resolution: 'big'" -- --model wan14b --gpu l40s --resolution big
expect 2 "unknown precision 'int9'" -- --model flux --gpu l40s --precision int9
expect 2 "--batch: must be positive" -- --model flux --gpu l40s --batch 0
expect 1 'Nothing fits' -- --model wan14b --gpu 3090 --ramtorch off
expect 1 '"supported": false' -- predict --model sdxl --gpu h100 --schedule interval2 --format json
expect 1 'not supported' -- predict --model sdxl --gpu h100 --schedule interval2
expect 1 'rejects overlapping' -- predict --model wan14b --gpu h100 --schedule seg4-stride2
expect 0 'fits' -- predict --model sd3 --gpu h100 --schedule seg2-stride4
# several GPUs: per-rank JSON keys, the trainer's rejections, bad flag combinations
expect 0 '"strategy": "fsdp2"' -- predict --model ltx-2.3 --gpu h100 --schedule layer --gpus 8 --strategy fsdp2 --format json
# a bf16 base per rank on eight H100s: its whole range fits one card (exit 0, as advise and check do)
expect 0 '"communication": ' -- predict --model ltx-2.3 --gpu h100 --schedule layer --gpus 8 --precision bf16 --format json
expect 1 'LoRA with DeepSpeed' -- predict --model ltx-2.3 --gpu h100 --schedule layer --gpus 8 --strategy zero2
expect 1 'has no _cp_plan' -- predict --model sdxl --gpu h100 --schedule layer --gpus 2 --context-parallel 2
expect 2 '--fsdp-cpu-offload needs --strategy fsdp2' -- predict --model flux --gpu h100 --schedule layer --gpus 2 --fsdp-cpu-offload
expect 2 '--strategy: ' -- predict --model flux --gpu h100 --schedule layer --gpus 2 --strategy fsdp
# a measured run anchors the single-GPU breakdown only: refused with a multi-GPU setup, not misapplied
expect 2 "anchoring on a measured run is for one GPU" -- predict --model flux --gpu h100 --schedule layer --gpus 2 --measured layer:3:20
expect 0 "no multi-GPU run was measured" -- predict --model flux --gpu h100 --schedule layer --gpus 2
expect 0 'accelerate config' -- advise --model ltx-2.3 --gpu h100 --gpus 8
expect 0 'verdict: fits' -- predict --model qwen-image --gpu h100 --schedule layer --backend unsloth --precision bf16
expect 3 'borderline: peak' -- predict --model qwen-image --gpu h100 --vram-gib 50 --schedule layer --backend unsloth --precision bf16
expect 0 'wan2.1-14b' -- list models
expect 0 'l40s' -- list gpus
expect 0 'Recommendation: ' -- --model sdxl --vram-gib 13
expect 3 'No confident recommendation' -- --model sdxl --vram-gib 8
expect 0 'custom card' -- --model sdxl --vram-gib 12 --measured layer:1.2:6.5
# no input aborts: numbers too large for their type, a zero aspect, an unknown command
expect 2 "segadvise: error: --resolution '99999999999x480': width: .* not an integer in \[1, 65536\]" -- --model flux --gpu h100 --resolution 99999999999x480
expect 2 "segadvise: error: schedule 'interval99999999999': interval: .* is not an integer" -- predict --model flux --gpu h100 --schedule interval99999999999
expect 2 "--aspect: '1:0'" -- advise --model sd3 --aspect 1:0 --resolution 480 --gpu h100
expect 2 "--batch: must be positive, got -1" -- --model flux --gpu h100 --batch -1
expect 2 "--vram-gib" -- --model flux --vram-gib nan
expect 2 "unknown command 'frobnicate'" -- frobnicate --model flux
# numeric and enum flags of every command go through validators (NaN, negatives, unknown words)
expect 2 "--ramtorch-percent: must be 0..100, got nan" -- --model flux --gpu h100 --ramtorch-percent nan
expect 2 "--headroom-gib: must be 0..4096 GiB, got nan" -- --model flux --gpu h100 --headroom-gib nan
expect 2 "--model-type" -- --model flux --gpu h100 --model-type half
expect 2 "--lora-type" -- --model flux --gpu h100 --lora-type loha
expect 2 "--headroom-gib: must be 0..4096 GiB, got nan" -- accuracy --headroom-gib nan
expect 2 "--prior-weight: must be >= 0, got -1" -- calibrate --prior-weight -1
expect 2 "--max-iterations: must be >= 0, got -1" -- accuracy --leave-family-out --max-iterations -1
expect 2 "--format" -- accuracy --format yaml
expect 2 "modles" -- list modles
expect 2 "--format" -- list models --format xml
if [[ -n $torch_bin ]]; then
  bin=$torch_bin
  tiny=$(dirname "$0")/data/tiny-dit.json
  expect 2 "--batch: must be positive, got -1" -- profile --model "$tiny" --batch -1
  expect 2 "--tokens: must be positive, got 0" -- profile --model "$tiny" --tokens 0
  expect 2 "--repeats: must be positive, got -1" -- profile --model "$tiny" --repeats -1
  expect 2 "--device" -- profile --model "$tiny" --device tpu
  expect 2 "--headroom-gib: must be 0..4096 GiB, got nan" -- validate --model "$tiny" --schedule layer --headroom-gib nan
  expect 2 "--warmup: must be >= 0, got -1" -- validate --model "$tiny" --schedule layer --warmup -1
  expect 2 "--blocks: must be positive, got 0" -- validate --model "$tiny" --schedule layer --blocks 0
  expect 2 "--tokens: must be positive, got 0" -- validate --model "$tiny" --schedule layer --tokens 0
  expect 2 "--steps: must be positive, got 0" -- validate --model "$tiny" --schedule layer --steps 0
  expect 2 "--backend" -- validate --model "$tiny" --schedule layer --backend fast
  # a bad schedule name fails before the profile validate would measure first (no --profile given)
  expect 2 "^segadvise: error: .*'garbage'" -- validate --model "$tiny" --schedule garbage
  expect 2 "--format" -- validate --model "$tiny" --schedule layer --format yaml
  # validate --gpus N: its flags fail before any rank starts
  expect 2 "--strategy is 'zero4'; expected one of" -- validate --model "$tiny" --gpus 2 --strategy zero4
  expect 2 "--strategy: 'single' is one process" -- validate --model "$tiny" --gpus 2 --strategy single
  expect 2 "--strategy: needs --gpus N" -- validate --model "$tiny" --strategy ddp
  expect 2 "--gpus: the ranks run without checkpointing" -- validate --model "$tiny" --gpus 2 --schedule layer
  expect 2 "--gpus: runs N processes on this CPU" -- validate --model "$tiny" --gpus 2 --device cuda
  expect 2 "--gpus" -- validate --model "$tiny" --gpus 0
  # what only a rank finds out comes back as its input error
  expect 2 "^segadvise: error: validate: --lora-type lycoris has no LibTorch archetype" -- \
    validate --model "$tiny" --gpus 2 --strategy ddp --lora-type lycoris
  bin=$1
fi
# the whole run: int8 Flux quantized on the accelerator (the default) puts its 22.2 GiB bf16 base on a
# 20 GiB card; the step alone fits (--step-only), and the phase advice names quantize_via cpu
fixture="$(cd "$(dirname "$0")" && pwd)/fixtures/check/flux-480-square.json"
expect 1 'model_load .*peak, over' -- check "$fixture" --vram-gib 20
# its 90% range: the bf16 base is counted parameters (1.0-1.05x): 22.2-23.3 GiB, all over the 19 GiB budget
expect 1 'model_load +22.2 +22.2–23.3 +peak, over' -- check "$fixture" --vram-gib 20
expect 1 'quantize_via: "cpu" -> 14.3 GiB \(90%: 14.3–15.0, fits\)' -- check "$fixture" --vram-gib 20
expect 1 'quantize_via: "cpu"' -- check "$fixture" --vram-gib 20
expect 0 'Verdict \(training step only\): fits' -- check "$fixture" --vram-gib 20 --step-only --ranges "$(dirname "$fixture")/point-ranges.json"
expect 1 '"peak_phase": "model_load"' -- check "$fixture" --vram-gib 20 --format json

# ---- outputs: only regular files or new paths, modes kept, all files or none ----------
fixtures=$(cd "$(dirname "$0")/fixtures" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check_that() {  # check_that DESCRIPTION COMMAND...: passes when COMMAND succeeds
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
# a failed write to stdout is an error, not exit 0
"$bin" --model wan14b --gpu l40s >/dev/full 2>"$tmp/err"; rc=$?
check_that "stdout to /dev/full exits 2 with a message (rc $rc)" \
  eval '[[ $rc -eq 2 ]] && grep -q "cannot write to standard output" "$tmp/err"'
# device-like targets are refused and left as they are: a FIFO, a directory, a symlink
mkfifo "$tmp/fifo"
expect 2 "cannot write '$tmp/fifo': it is a FIFO" -- --model flux --gpu l40s --plot "$tmp/fifo"
check_that "the FIFO is still a FIFO" test -p "$tmp/fifo"
expect 2 "it is a directory" -- --model flux --gpu l40s --plan-out "$tmp"
echo keep >"$tmp/real.svg"
ln -s "$tmp/real.svg" "$tmp/link.svg"
expect 2 "cannot write '$tmp/link.svg': it is a symbolic link" -- --model flux --gpu l40s --plot "$tmp/link.svg"
check_that "the symlink and its file are untouched" \
  eval '[[ -L $tmp/link.svg && $(cat "$tmp/real.svg") == keep ]]'
# mode 600 stays 600 (advise --plan-out and check --output)
: >"$tmp/plan.json"; chmod 600 "$tmp/plan.json"
expect 0 'Recommendation: ' -- --model flux --gpu l40s --plan-out "$tmp/plan.json"
check_that "plan file mode kept 600" eval '[[ $(stat -c %a "$tmp/plan.json") == 600 && -s $tmp/plan.json ]]'
: >"$tmp/config.json"; chmod 600 "$tmp/config.json"
expect 0 'Wrote ' -- check "$fixtures/check/flux-pixel-area-1024.json" --gpu h100 --emit simpletuner --output "$tmp/config.json"
check_that "config mode kept 600" eval '[[ $(stat -c %a "$tmp/config.json") == 600 && -s $tmp/config.json ]]'
# no output is one of the command's inputs: the config's own data backend, the family file, a log, the cases
cp -r "$fixtures/check" "$tmp/own"
before=$(sha256sum "$tmp/own/backends/pixel-area-480-square.json")
expect 2 "is the input" -- check "$tmp/own/flux-480-square.json" --gpu h100 --emit simpletuner --output "$tmp/own/backends/pixel-area-480-square.json"
check_that "the data backend is untouched" eval '[[ $(sha256sum "$tmp/own/backends/pixel-area-480-square.json") == "$before" ]]'
ln -s "$tmp/own/flux-480-square.json" "$tmp/own-link.json"
expect 2 "is the input" -- check "$tmp/own/flux-480-square.json" --gpu h100 --emit simpletuner --output "$tmp/own-link.json"
expect 2 "is the input" -- --model flux --gpu l40s --measured-from "$fixtures/logs/diffusers.txt" --measured-from-schedule layer --plan-out "$fixtures/logs/diffusers.txt"
# read-log, and a log as the measurement: an OOM during training turns the config's schedule into "does not fit"
expect 0 '"what": "training_step"' -- read-log "$fixtures/logs/diffusers.txt" --format json
expect 2 'not a text file' -- read-log "$fixtures/logs-binary.bin"
expect 2 'not a regular file' -- read-log "$fixtures/logs"
# (the log's card: 23.50 GiB total capacity, a 24 GB card; on an 80 GB card it proves only the 21.50 GiB needed)
expect 1 'verdict: does not fit' -- check "$fixtures/check/flux-480-square.json" --gpu 4090 --measured-from "$fixtures/logs/simpletuner.txt"
expect 1 'read from .*simpletuner.txt line 12: out of memory .*at least 21.50 GiB needed' -- check "$fixtures/check/flux-480-square.json" --gpu 4090 --measured-from "$fixtures/logs/simpletuner.txt"
expect 0 'on a card of 23.50 GiB, not this one' -- check "$fixtures/check/flux-480-square.json" --gpu h100 --measured-from "$fixtures/logs/simpletuner.txt"
expect 0 'verdict: fits — peak 21.5 GiB reserved \(90%: 21.5–' -- check "$fixtures/check/flux-480-square.json" --gpu h100 --measured-from "$fixtures/logs/simpletuner.txt"
# an OOM of none on the H100 itself: none does not fit, and the recommendation is one whose range fits
expect 0 'none +79.0 GiB reserved \(90%: 79.0–.*does not fit' -- advise --model flux --gpu h100 --measured-from "$fixtures/logs/simpletuner_h100_none.txt" --measured-from-schedule none
expect 0 '"oom_need_gib": 79.0' -- advise --model flux --gpu h100 --measured none:oom:79 --format json
expect 0 'read from .*diffusers.txt line 4: 0.500 s/step' -- predict --model flux --gpu a100 --schedule layer --measured-from "$fixtures/logs/diffusers.txt"
# an OOM while sampling says nothing of the step: passed over, and with no step peak in the log an error
expect 2 'line [0-9]+\) came while sampling, not in a training step' -- predict --model flux --gpu 4090 --schedule layer --measured-from "$fixtures/logs/ai_toolkit.txt"
expect 2 'measured-from-schedule' -- advise --model flux --gpu h100 --measured-from "$fixtures/logs/diffusers.txt"
expect 2 'no out-of-memory message and no peak' -- predict --model flux --gpu a100 --schedule layer --measured-from "$fixtures/logs/diffusion_pipe.txt"
# the other memory readouts, each naming its quantity; a printed peak whose label names none says so where it is used
expect 0 '"source": "nvtop"' -- read-log "$fixtures/logs/nvtop.txt" --format json
expect 0 '"process_used_bytes": 20835205120' -- read-log "$fixtures/logs/nvidia_smi_csv.txt" --format json
expect 0 'line 4: the label names no quantity: read as max_memory_allocated; GB read as GiB' -- read-log "$fixtures/logs/printed_memory.txt"
expect 0 'line 5: peak 21.45 GiB allocated \(the label names no quantity' -- predict --model flux --gpu a100 --schedule layer --measured-from "$fixtures/logs/printed_memory.txt"
# a valid 250-character file name works (the temporary name must fit NAME_MAX too)
long=$(printf 'p%.0s' {1..245}).json
expect 0 'Recommendation: ' -- --model flux --gpu l40s --plan-out "$tmp/$long"
check_that "250-character name written" test -s "$tmp/$long"
# all outputs of one command or none
expect 2 "cannot write '/nodir-segadvise/x.svg'" -- --model flux --gpu l40s --plan-out "$tmp/ok.json" --plot /nodir-segadvise/x.svg
check_that "no ok.json when --plot fails" test ! -e "$tmp/ok.json"

# runs remembered: nothing is kept unless asked; runs add keeps one, check of that setup anchors on it and
# says so first; --no-runs leaves it out; another card's check is not anchored; remove forgets it
runs_json=$XDG_CACHE_HOME/segadvise/runs.json
check_that "no runs file before runs add (the commands above wrote none)" test ! -e "$runs_json"
expect 0 'no runs kept' -- runs list
expect 0 'kept run #1 in .*runs.json: layer of' -- runs add "$fixtures/logs/simpletuner.txt" --config "$fixtures/check/flux-480-square.json" --gpu 4090
check_that "runs.json written, no temporary left" eval '[[ -s $runs_json && -z $(find "$XDG_CACHE_HOME" -name ".segadvise-*") ]]'
expect 0 '^1 +[0-9-]+ [0-9:]+ UTC .*4090 +layer:oom:21.50' -- runs list
first=$("$bin" check "$fixtures/check/flux-480-square.json" --gpu 4090 | head -1)
check_that "check's first line says it is anchored on the run ($first)" \
  eval '[[ $first == "anchored on your run of "*"(segadvise runs #1): layer ran out of memory needing at least 21.5 GiB" ]]'
expect 1 'verdict: does not fit' -- check "$fixtures/check/flux-480-square.json" --gpu 4090
# (the whole run's model load, 22.2 GiB reserved, is borderline on a 24 GB card's 23.0 GiB less 0.5 GiB
# headroom: exit 3; the step's verdict moves from "does not fit", the kept OOM, to a confident fit of the
# step, 15.5 GiB with its range under 20 GiB)
expect 3 'verdict: fits' -- check "$fixtures/check/flux-480-square.json" --gpu 4090 --no-runs
expect 1 '"source": "your run of .*simpletuner.txt line 12' -- check "$fixtures/check/flux-480-square.json" --gpu 4090 --format json
expect 3 '^anchored on your run of ' -- advise --model flux --gpu 4090 --lora-rank 16
if "$bin" check "$fixtures/check/flux-480-square.json" --gpu h100 | grep -q 'your run of'; then
  fail=$((fail + 1)); echo "FAIL: a run kept for the 4090 anchored a check on the h100"
else
  pass=$((pass + 1))
fi
expect 2 'no run #7' -- runs remove 7
expect 0 'removed 1 run' -- runs remove 1
expect 3 'verdict: fits' -- check "$fixtures/check/flux-480-square.json" --gpu 4090
printf '{"format": "segadvise runs 1", "runs": [{"id": "x"}]}' >"$runs_json"
expect 2 "runs file '.*runs.json': field 'runs\[0\].id'" -- check "$fixtures/check/flux-480-square.json" --gpu 4090
expect 0 'removed every run' -- runs remove --all
expect 0 'no runs kept' -- runs list

# the dataset: images written with their headers only; SimpleTuner's pixel buckets at 1024 (docs/datasets.md):
# 6 squares -> 1024x1024, 2 photos 1500x1000 -> 1536x1024, one 768x1024 -> 1024x1344, one 400x400 under
# minimum_image_size 512; repeats 1 doubles every count. The run is judged by 1536x1024.
ds=$tmp/dataset
mkdir -p "$ds/sub"
python3 - "$ds" <<'PY'
import struct, sys
d = sys.argv[1]
def png(p, w, h):
    open(p, 'wb').write(b'\x89PNG\r\n\x1a\n' + struct.pack('>I', 13) + b'IHDR' + struct.pack('>II', w, h) + b'\x08\x02\0\0\0' + b'\0' * 4)
def jpeg(p, w, h):
    app1 = b'Exif\0\0' + b'x' * 100
    open(p, 'wb').write(b'\xff\xd8\xff\xe1' + struct.pack('>H', len(app1) + 2) + app1 + b'\xff\xc0' + struct.pack('>HBHHB', 17, 8, h, w, 3) + b'\0' * 9 + b'\xff\xd9')
def webp(p, w, h):
    v = b'\0\0\0\x9d\x01\x2a' + struct.pack('<HH', w, h)
    open(p, 'wb').write(b'RIFF' + struct.pack('<I', 12 + len(v)) + b'WEBP' + b'VP8 ' + struct.pack('<I', len(v)) + v)
for i in range(6): png(f'{d}/sq{i}.png', 1024, 1024)
jpeg(f'{d}/sub/photo1.jpg', 1500, 1000); jpeg(f'{d}/sub/photo2.jpeg', 1500, 1000)
webp(f'{d}/tall.webp', 768, 1024); png(f'{d}/small.png', 400, 400)
PY
cat >"$tmp/backend.json" <<EOF
[{"id": "photos", "type": "local", "dataset_type": "image", "instance_data_dir": "$ds", "resolution": 1024,
  "resolution_type": "pixel", "minimum_image_size": 512, "repeats": 1},
 {"id": "embeds", "type": "local", "dataset_type": "text_embeds", "default": true, "cache_dir": "$tmp/cache"}]
EOF
cat >"$tmp/dsconfig.json" <<EOF
{"model_family": "flux", "model_type": "lora", "lora_rank": 16, "base_model_precision": "int8-quanto",
 "train_batch_size": 1, "data_backend_config": "$tmp/backend.json", "gradient_checkpointing": true}
EOF
expect 0 'shape +1536x1024, batch 1' -- check "$tmp/dsconfig.json" --gpu l40s
# a config that asks for FlashAttention-3 on a card it does not run on is told so
cat >"$tmp/fa3config.json" <<EOF
{"model_family": "flux", "model_type": "lora", "lora_rank": 16, "base_model_precision": "int8-quanto",
 "train_batch_size": 1, "data_backend_config": "$tmp/backend.json", "gradient_checkpointing": true,
 "attention_mechanism": "flash-attn-3-hub"}
EOF
expect 0 'the trainer cannot run it on NVIDIA L40S' -- check "$tmp/fa3config.json" --gpu l40s
expect 0 '^1536x1024 +4 +[0-9.]+ +fits' -- check "$tmp/dsconfig.json" --gpu l40s
expect 0 '^1024x1344 +2 ' -- check "$tmp/dsconfig.json" --gpu l40s
expect 0 '^1024x1024 +12 ' -- check "$tmp/dsconfig.json" --gpu l40s
expect 0 '10 image files, 1 under minimum_image_size' -- check "$tmp/dsconfig.json" --gpu l40s
expect 0 'judged by the largest bucket, 1536x1024' -- check "$tmp/dsconfig.json" --gpu l40s
expect 0 '"count": 4,' -- check "$tmp/dsconfig.json" --gpu l40s --format json
mkdir -p "$tmp/other"; cp "$ds/sq0.png" "$tmp/other/"
expect 0 'shape +1024x1024, batch 1' -- check "$tmp/dsconfig.json" --gpu l40s --dataset "$tmp/other"
expect 2 "--dataset '.*nowhere': not a directory" -- check "$tmp/dsconfig.json" --gpu l40s --dataset "$tmp/nowhere"
# an ai-toolkit job's --dataset stands for its folder_path: the one image at the resolution [1024] square
expect 0 '^1024x1024 +1 ' -- check "$fixtures/trainers/ai-toolkit/chroma_offload.yaml" --gpu l40s --dataset "$tmp/other"
expect 2 "--dataset '.*': the config names no dataset directory to stand for" -- check "$fixtures/trainers/diffusers/krea2_fp8_captions.sh" --gpu l40s --dataset "$tmp/other"
# a diffusers script's --dataset: every image at the --resolution square (flux_lora.sh: 1024), one sample each
expect 0 '^1024x1024 +1 ' -- check "$fixtures/trainers/diffusers/flux_lora.sh" --gpu h100 --dataset "$tmp/other"
# launch scripts as their shell runs them (docs/check.md "Launch scripts"): a PowerShell SDXL LoRA with backtick
# continuations has every flag read (512 square, batch 1, checkpointing, fp16, 8-bit Adam): single-digit GiB, not
# the script's defaults; a bash musubi script's heredoc dataset TOML; a cmd script's ^ lines and %VAR%
expect 0 'verdict: fits — peak [0-9]\.[0-9] GiB' -- check "$fixtures/trainers/shell/sdxl_lora_6gb.ps1" --gpu 4090
expect 0 'training shape: /workspace/output/dataset.toml \(heredoc at musubi_wan14b_heredoc.sh:16\) datasets\[0\]: resolution \[960, 544\], batch_size 2' \
  -- check "$fixtures/trainers/shell/musubi_wan14b_heredoc.sh" --gpu l40s
expect 0 'lora \(standard, rank 16\), base fp8wo-torchao, optimizer adamw8bit, block swap 16' -- check "$fixtures/trainers/shell/qwen_lora.bat" --gpu l40s
printf 'accelerate launch wan_train_network.py --task t2v-1.3B --sdpa \\\n  --dataset_config "$CFG_DIR/dataset.toml"\n' >"$tmp/unset.sh"
expect 2 "unset.sh:2: --dataset_config '/dataset.toml': \\\$CFG_DIR is not set in the script" -- check "$tmp/unset.sh" --gpu 4090
# a run kept for that config is kept under its largest bucket: check of the config finds it
expect 0 'kept run #1' -- runs add "$fixtures/logs/diffusers.txt" --config "$tmp/dsconfig.json" --gpu l40s
expect 0 '^anchored on your run of ' -- check "$tmp/dsconfig.json" --gpu l40s
expect 0 'removed every run' -- runs remove --all
check_that "no temporary file left behind" eval '[[ -z $(find "$tmp" -name ".segadvise-*") ]]'

# the system a run is on: a .bat or .ps1 launch script is Windows's; drive-letter paths in a GUI JSON are a
# guess, said as one; a bash script says nothing. On Windows a setup over the card spills, not fails (exit 1 kept)
expect 1 '"host_os_from": "the launch script is a Windows script \(.bat\)"' -- check "$fixtures/trainers/sd_scripts/sdxl_lora.bat" --vram-gib 6 --format json
expect 1 '"runs_from_shared_memory": true' -- check "$fixtures/trainers/sd_scripts/sdxl_lora.bat" --vram-gib 6 --format json
expect 3 '"host_os": "windows"' -- check "$fixtures/trainers/sd_scripts/sd15_lora.ps1" --vram-gib 6 --format json
expect 1 '"host_os_from": "a guess: the config names a Windows drive path' -- check "$fixtures/trainers/kohya_ss/presets/dreambooth/sd3_bdsqlsz_v1.json" --vram-gib 6 --format json
expect 3 '"host_os": "linux"' -- check "$fixtures/trainers/sd_scripts/anima_lora.sh" --vram-gib 6 --format json
expect 1 'Prefer No Sysmem Fallback' -- check "$fixtures/trainers/sd_scripts/sdxl_lora.bat" --vram-gib 6
expect 1 '"host_os": "linux"' -- check "$fixtures/trainers/sd_scripts/sdxl_lora.bat" --vram-gib 6 --os linux --format json
# expandable segments: set by the flag, the allocator's slack falls to at most 5% of the activations
expect 3 '"set": true' -- check "$fixtures/trainers/sd_scripts/anima_lora.sh" --vram-gib 6 --expandable-segments --format json
expect 3 'allocator  expandable_segments:True \(--expandable-segments\)' -- check "$fixtures/trainers/sd_scripts/anima_lora.sh" --vram-gib 6 --expandable-segments
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
