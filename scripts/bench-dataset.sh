#!/usr/bin/env bash
# How long `segadvise check` takes to read a dataset of N images (default 100,000) and bucket it: writes N
# header-only PNG, JPEG and WebP files of mixed sizes to a temporary directory, then times check of a
# config pointed at them (twice: the second run reads a warm page cache): a SimpleTuner config by default,
# or an ai-toolkit job (datasets[].folder_path) or a OneTrainer config (a concept with its subdirectories).
# usage: scripts/bench-dataset.sh [BIN] [N] [simpletuner|ai-toolkit|onetrainer]
set -euo pipefail
bin=${1:-build/segadvise}
n=${2:-100000}
trainer=${3:-simpletuner}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/images"
python3 - "$dir/images" "$n" <<'PY'
import struct, sys
d, n = sys.argv[1], int(sys.argv[2])
sizes = [(1024, 1024), (1500, 1000), (768, 1024), (1920, 1080), (640, 480), (2048, 1365)]
for i in range(n):
    w, h = sizes[i % len(sizes)]
    k = i % 3
    if k == 0:
        b = b'\x89PNG\r\n\x1a\n' + struct.pack('>I', 13) + b'IHDR' + struct.pack('>II', w, h) + b'\x08\x02\0\0\0' + b'\0' * 4
        ext = 'png'
    elif k == 1:
        app1 = b'Exif\0\0' + b'x' * 2000
        b = b'\xff\xd8\xff\xe1' + struct.pack('>H', len(app1) + 2) + app1 + b'\xff\xc0' + struct.pack('>HBHHB', 17, 8, h, w, 3) + b'\0' * 9
        ext = 'jpg'
    else:
        v = b'\0\0\0\x9d\x01\x2a' + struct.pack('<HH', w, h)
        b = b'RIFF' + struct.pack('<I', 12 + len(v)) + b'WEBP' + b'VP8 ' + struct.pack('<I', len(v)) + v
        ext = 'webp'
    sub = f'{d}/{i // 1000:03d}'
    if i % 1000 == 0:
        import os; os.makedirs(sub, exist_ok=True)
    open(f'{sub}/{i}.{ext}', 'wb').write(b)
PY
case "$trainer" in
simpletuner)
  cat >"$dir/backend.json" <<EOF
[{"id": "bench", "type": "local", "dataset_type": "image", "instance_data_dir": "$dir/images", "resolution": 1024,
  "resolution_type": "pixel_area", "repeats": 0},
 {"id": "embeds", "type": "local", "dataset_type": "text_embeds", "default": true, "cache_dir": "$dir/cache"}]
EOF
  config="$dir/config.json"
  cat >"$config" <<EOF
{"model_family": "flux", "model_type": "lora", "lora_rank": 16, "train_batch_size": 1,
 "data_backend_config": "$dir/backend.json", "gradient_checkpointing": true}
EOF
  ;;
ai-toolkit)
  config="$dir/job.yaml"
  cat >"$config" <<EOF
job: extension
config:
  name: bench
  process:
    - type: sd_trainer
      network: {type: lora, linear: 16, linear_alpha: 16}
      datasets:
        - folder_path: $dir/images
          resolution: [512, 768, 1024]
      train: {batch_size: 1, gradient_checkpointing: true, optimizer: adamw8bit, dtype: bf16}
      model: {name_or_path: black-forest-labs/FLUX.1-dev, is_flux: true, quantize: true}
EOF
  ;;
onetrainer)
  config="$dir/config.json"
  cat >"$config" <<EOF
{"model_type": "FLUX_DEV_1", "base_model_name": "black-forest-labs/FLUX.1-dev", "training_method": "LORA",
 "batch_size": 1, "resolution": "1024", "transformer": {"train": true, "weight_dtype": "NFLOAT_4"},
 "concepts": [{"path": "$dir/images", "include_subdirectories": true}]}
EOF
  ;;
*) echo "bench-dataset.sh: trainer '$trainer' is not simpletuner, ai-toolkit or onetrainer" >&2; exit 2 ;;
esac
for run in first second; do
  start=$(date +%s.%N)
  "$bin" check "$config" --gpu l40s --format json >"$dir/out.json" || [[ $? -ne 2 ]]
  end=$(date +%s.%N)
  files=$(python3 -c "import json; print(json.load(open('$dir/out.json'))['dataset']['image_files'])")
  printf '%s: %s image files read and bucketed in %.2f s\n' "$run" "$files" "$(echo "$end - $start" | bc)"
done
