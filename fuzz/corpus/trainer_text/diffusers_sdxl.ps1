p# SDXL LoRA on a 6 GB card, Windows PowerShell (flags: diffusers examples/text_to_image/train_text_to_image_lora_sdxl.py)
$env:PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"
$MODEL_NAME = "stabilityai/stable-diffusion-xl-base-1.0"
$VAE_NAME = "madebyollin/sdxl-vae-fp16-fix"
$DATA = "C:\Users\me\datasets\pokemon"
$OUTPUT_DIR = "$PSScriptRoot\output\sdxl-lora"

.\venv\Scripts\Activate.ps1

accelerate launch --mixed_precision="fp16" train_text_to_image_lora_sdxl.py `
  --pretrained_model_name_or_path=$MODEL_NAME `
  --pretrained_vae_model_name_or_path=$VAE_NAME `
  --train_data_dir="$DATA" --caption_column="text" `
  --resolution=512 --random_flip `
  --train_batch_size=1 `
  --gradient_accumulation_steps=4 --gradient_checkpointing `
  --use_8bit_adam `
  --max_train_steps=2000 --learning_rate=1e-04 --lr_scheduler="constant" --lr_warmup_steps=0 `
  --mixed_precision="fp16" `
  --rank=8 `
  --seed=42 `
  --output_dir="$OUTPUT_DIR" `
  --validation_prompt="a cute pokemon" --report_to="tensorboard"
