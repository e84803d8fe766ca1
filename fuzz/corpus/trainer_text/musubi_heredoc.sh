s#!/usr/bin/env bash
# Wan 2.1 T2V 14B LoRA with musubi-tuner on a rented 24 GB card: the script writes its own dataset TOML,
# caches latents and text-encoder outputs, then trains (flags: musubi-tuner parser_common.py and
# wan_train_network.py; dataset keys: docs/dataset_config.md)
set -euo pipefail

MUSUBI_DIR=/workspace/musubi-tuner
MODELS="/workspace/models"
DATA_DIR=/workspace/datasets/my_character
OUT=/workspace/output
NAME=my_character_wan14b
RANK=32
export HF_HOME=/workspace/hf

mkdir -p "$OUT"
cat > "$OUT/dataset.toml" <<EOF
[general]
resolution = [960, 544]
caption_extension = ".txt"
batch_size = 2
enable_bucket = true
bucket_no_upscale = false

[[datasets]]
image_directory = "${DATA_DIR}/images"
cache_directory = "${DATA_DIR}/cache"
num_repeats = 1
EOF

cd "$MUSUBI_DIR"
# caching runs first, each in its own process
python src/musubi_tuner/wan_cache_latents.py --dataset_config "$OUT/dataset.toml" --vae "$MODELS/wan_2.1_vae.safetensors"
python src/musubi_tuner/wan_cache_text_encoder_outputs.py --dataset_config "$OUT/dataset.toml" \
  --t5 "$MODELS/models_t5_umt5-xxl-enc-bf16.pth" --batch_size 16

TRAIN_ARGS=(
  --task t2v-14B
  --dit "$MODELS/wan2.1_t2v_14B_bf16.safetensors"
  --dataset_config "$OUT/dataset.toml"
  --sdpa --mixed_precision bf16 --fp8_base
  # memory
  --gradient_checkpointing
  --blocks_to_swap 10
  --optimizer_type adamw8bit --learning_rate 2e-4
)
TRAIN_ARGS+=(--network_module networks.lora_wan --network_dim ${RANK})

accelerate launch --num_cpu_threads_per_process 1 --mixed_precision bf16 src/musubi_tuner/wan_train_network.py \
  "${TRAIN_ARGS[@]}" \
  --timestep_sampling shift --discrete_flow_shift 3.0 \
  --max_train_epochs 16 --save_every_n_epochs 1 --seed 42 \
  --output_dir "$OUT" --output_name "$NAME"
