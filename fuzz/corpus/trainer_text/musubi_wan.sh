s# A musubi-tuner Wan 2.1 14B LoRA run (flags from parser_common.py; written for the segadvise tests)
accelerate launch --num_cpu_threads_per_process 1 --mixed_precision bf16 src/musubi_tuner/wan_train_network.py \
    --task t2v-14B \
    --dit /models/wan2.1_t2v_14B_bf16.safetensors \
    --dataset_config dataset_video.toml --sdpa --mixed_precision bf16 --fp8_base \
    --optimizer_type adamw8bit --learning_rate 2e-4 --gradient_checkpointing \
    --max_data_loader_n_workers 2 --persistent_data_loader_workers \
    --network_module networks.lora_wan --network_dim 32 \
    --blocks_to_swap 20 \
    --output_dir out --output_name wan14b-lora
