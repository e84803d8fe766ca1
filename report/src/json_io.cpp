#include "segadvise/report/json_io.hpp"

namespace segadvise {

using nlohmann::json;

namespace {
double gib(double bytes) { return bytes / kGiB; }
}  // namespace

namespace {

void add_multi_gpu_json(json& j, const MultiGpuSetup& m) {
  j["gpus"] = m.gpus_per_node;
  j["nodes"] = m.nodes;
  j["world"] = m.world();
  j["strategy"] = to_string(m.strategy);
  j["context_parallel"] = m.context_parallel;
  j["context_parallel_comm_strategy"] = to_string(m.cp_comm);
  j["fsdp_cpu_offload"] = m.fsdp_cpu_offload;
  j["fsdp_reshard_after_forward"] = m.reshard_after_forward;
  j["zero_offload_optimizer"] = m.offload_optimizer;
  j["zero_offload_param"] = m.offload_param;
  j["gradient_accumulation_steps"] = m.grad_accumulation;
  j["inter_node_gbps"] = m.inter_node_bytes_per_s / 1e9;
}

// per rank (the busiest): the breakdown gains the multi-GPU memory and the exposed communication
void add_multi_gpu_json(json& j, const Prediction& p) {
  const MemoryBreakdown& m = p.memory;
  const MultiGpuInfo& mg = p.multi_gpu;
  j["per_rank"] = true;
  j["breakdown"]["memory_gib"]["gathered_weights"] = gib(m.gathered_bytes);
  j["breakdown"]["memory_gib"]["buckets"] = gib(m.bucket_bytes);
  j["breakdown"]["memory_gib"]["model_state_on_host"] = gib(m.host_state_bytes);
  j["breakdown"]["time_s"]["communication"] = p.time.communication_s;
  const CommVolume& v = mg.volume;
  j["communication"] = {{"world", mg.world},
                        {"shard_ranks", mg.shard_ranks},
                        {"payload_gib",
                         {{"allgather", gib(v.allgather_bytes)},
                          {"reduce_scatter", gib(v.reduce_scatter_bytes)},
                          {"allreduce", gib(v.allreduce_bytes)},
                          {"alltoall", gib(v.alltoall_bytes)},
                          {"cp_allgather", gib(v.cp_allgather_bytes)},
                          {"host_transfer", gib(v.host_transfer_bytes)}}},
                        {"wire_gib", gib(mg.cost.wire_bytes)},
                        {"link_time_s", {{"data_parallel", mg.cost.dp_time_s}, {"context_parallel", mg.cost.cp_time_s},
                                         {"host_transfer", mg.cost.host_transfer_s}}},
                        {"exposed_s", p.time.communication_s},
                        {"host_optimizer_s", mg.host_optimizer_s},
                        {"samples_per_step", mg.samples_per_step},
                        {"host_ram_per_node_gib", gib(mg.host_ram_per_node_bytes)}};
}

}  // namespace

json to_json(const TrainingSetup& s) {
  json j = {{"model", s.model_id},
            {"width", s.width},
            {"height", s.height},
            {"frames", s.frames},
            {"batch", s.batch},
            {"base_model_precision", s.base_precision},
            {"sdnq_use_hadamard", s.sdnq_hadamard},
            {"mixed_precision", s.mixed_precision},
            {"model_type", to_string(s.model_type)},
            {"lora_type", to_string(s.lora_type)},
            {"lora_rank", s.lora_rank},
            {"optimizer", s.optimizer},
            {"ramtorch", s.ramtorch},
            {"ramtorch_transformer_percent", s.ramtorch_percent},
            {"musubi_blocks_to_swap", s.blocks_to_swap},
            {"group_offload", s.group_offload},
            {"attention_mechanism", s.attention},
            {"regional_compile", s.regional_compile}};
  if (s.text_tokens >= 0) j["text_tokens"] = s.text_tokens;
  // other trainers' memory knobs: present only when a reader set them (SimpleTuner output unchanged)
  if (s.weight_storage_bytes > 0) j["weight_storage_bytes"] = s.weight_storage_bytes;
  if (s.adapter_weight_bytes > 0) j["adapter_weight_bytes"] = s.adapter_weight_bytes;
  if (s.fused_back_pass) j["fused_back_pass"] = true;
  if (s.quantize_all_block_linears) j["quantize_all_block_linears"] = true;
  if (s.layer_offload_fraction > 0) j["layer_offload_fraction"] = s.layer_offload_fraction;
  if (s.embedding_params > 0) j["embedding_params"] = s.embedding_params;
  if (!s.blocks_to_swap_per_list.empty()) j["blocks_to_swap_per_list"] = s.blocks_to_swap_per_list;
  if (s.kept_model_bytes > 0) j["models_kept_on_gpu"] = {{"what", s.kept_models}, {"gib", s.kept_model_bytes / kGiB}};
  if (s.lokr_read) {  // LyCORIS LoKr as read from the lycoris_config
    j["lokr_attention_factor"] = s.lokr_attention_factor;
    j["lokr_ffn_factor"] = s.lokr_ffn_factor;
    j["lokr_full_matrix"] = s.lokr_full_matrix;
    j["lokr_linear_dim"] = s.lokr_linear_dim;
  }
  if (s.multi_gpu.active()) add_multi_gpu_json(j, s.multi_gpu);  // absent on one GPU: output unchanged
  j["notes"] = s.notes;
  if (!s.family_guessed_from.empty()) j["family_guessed_from"] = s.family_guessed_from;  // what the family was guessed from
  if (!s.shape_assumed_from.empty()) j["shape_assumed_from"] = s.shape_assumed_from;    // the dataset file not on this machine
  return j;
}

json to_json(const Schedule& s) {
  return {{"name", s.name()},
          {"gradient_checkpointing", s.checkpointing},
          {"interval", s.interval > 1 ? json(s.interval) : json(nullptr)},
          {"stride", s.stride > 0 ? json(s.stride) : json(nullptr)},
          {"backend", to_string(s.backend)},
          {"offload_attention", s.offload_attention}};
}

json to_json(const Prediction& p) {
  json j = {{"supported", p.supported}, {"reason", p.reason}};
  if (!p.supported) {
    j["fits"] = false;
    j["peak_vram_gib"] = nullptr;
    j["step_time_s"] = nullptr;
    j["breakdown"] = json::object();
    return j;
  }
  const MemoryBreakdown& m = p.memory;
  const TimeBreakdown& t = p.time;
  j["fits"] = p.fits;
  j["peak_vram_gib"] = gib(p.peak_vram_bytes);
  j["peak_vram_quantity"] = "reserved";  // torch.cuda.max_memory_reserved (docs/memory.md)
  j["usable_vram_gib"] = gib(p.usable_vram_bytes);
  j["step_time_s"] = p.step_time_s;
  j["breakdown"] = {{"memory_gib",
                     {{"weights", gib(m.weights_bytes)},
                      {"trainable", gib(m.trainable_bytes)},
                      {"gradients", gib(m.gradient_bytes)},
                      {"optimizer", gib(m.optimizer_bytes)},
                      {"activations_peak", gib(m.activation_peak_bytes)},
                      {"upcast_weight_copies", gib(m.upcast_weight_bytes)},
                      {"fragmentation", gib(m.fragmentation_bytes)},
                      {"streamed_weights_on_host", gib(m.streamed_weights_bytes)},
                      {"activations_on_host", gib(m.host_activation_bytes)}}},
                    {"peak_phase", m.peak_phase},
                    {"time_s",
                     {{"forward", t.forward_s},
                      {"backward", t.backward_s},
                      {"recompute", t.recompute_s},
                      {"transfer", t.transfer_s},
                      {"optimizer", t.optimizer_s},
                      {"overhead", t.overhead_s}}}};
  if (m.other_models_bytes > 0) j["breakdown"]["memory_gib"]["other_models_in_weights"] = gib(m.other_models_bytes);
  if (p.multi_gpu.active) add_multi_gpu_json(j, p);
  j["warnings"] = p.warnings;
  return j;
}

}  // namespace segadvise
