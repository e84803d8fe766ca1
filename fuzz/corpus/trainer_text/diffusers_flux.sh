s# diffusers examples/dreambooth/train_dreambooth_lora_flux.py (flags from the script; written for the segadvise tests)
accelerate launch train_dreambooth_lora_flux.py \
  --pretrained_model_name_or_path="black-forest-labs/FLUX.1-dev" \
  --instance_data_dir=dog --output_dir=out \
  --mixed_precision="bf16" --resolution=1024 --train_batch_size=1 \
  --gradient_checkpointing --rank 16 --use_8bit_adam
