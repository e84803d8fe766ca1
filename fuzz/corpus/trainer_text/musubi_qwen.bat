b@echo off
REM Qwen-Image LoRA with musubi-tuner on Windows (flags: musubi-tuner parser_common.py, qwen_image_train_network.py)
setlocal
set MUSUBI=C:\AI\musubi-tuner
set "MODELS=C:\AI\models"
set DATASET_CONFIG=%~dp0dataset_qwen.toml
set RANK=16

call %MUSUBI%\venv\Scripts\activate.bat
:: train
accelerate launch --num_cpu_threads_per_process 1 --mixed_precision bf16 ^
  %MUSUBI%\src\musubi_tuner\qwen_image_train_network.py ^
  --dit "%MODELS%\qwen_image_bf16.safetensors" ^
  --vae "%MODELS%\qwen_image_vae.safetensors" ^
  --text_encoder "%MODELS%\qwen_2.5_vl_7b.safetensors" ^
  --dataset_config "%DATASET_CONFIG%" ^
  --sdpa --mixed_precision bf16 --fp8_base --fp8_scaled ^
  --timestep_sampling shift --discrete_flow_shift 2.2 ^
  --optimizer_type adamw8bit --learning_rate 5e-5 --gradient_checkpointing ^
  --blocks_to_swap 16 ^
  --network_module networks.lora_qwen_image --network_dim %RANK% ^
  --max_train_epochs 16 --save_every_n_epochs 1 --seed 42 ^
  --output_dir "%~dp0output" --output_name qwen-lora
pause
