// Model families as data (families/FORMAT.md), the registry that finds them by name, and the GPU
// catalog. Loading validates every field and names the file and field of anything wrong.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/block_kind.hpp"

namespace segadvise {

struct BlockListSpec {
  std::string name;
  int count = 0;
  BlockKind kind = BlockKind::DitSelf;
  int hidden = 0;
  int heads = 0;
  int head_dim = 0;
  int kv_heads = 0;            // grouped-query attention: heads of k and v (0: = heads)
  int attention_window = 0;    // keys each query attends to (local / sliding window); 0: the whole sequence
  bool audio_cross_attention = false;  // an extra cross-attention to the family's audio tokens (Wan S2V)
  int ffn_hidden = 0;
  std::string ffn_act = "gelu";
  std::string tokens = "image";  // image | joint | text
  bool cross_attention = false;
  int text_hidden = 0;  // 0: same as hidden
  int moe_experts = 0, moe_active = 0, moe_shared_hidden = 0;
  double token_scale = 1.0;
  std::string skip;  // "", push, pop
  bool checkpointed = true;
  double params_per_block = 0;  // 0: derived
};

struct Geometry {
  int vae_spatial = 8;
  int vae_temporal = 0;  // 0: images
  bool temporal_causal = true;
  int patch_spatial = 2;
  int patch_temporal = 1;
  int alignment = 64;
  std::string frame_rule = "none";  // none | 8k+1 | 17k+5
  int audio_tokens = 0;
  // Clean context latents a packed model runs beside the noisy ones (FramePack's start, history and
  // 2x/4x-compressed history frames), in latent frames at the patch rate of the trained ones: each
  // adds one latent frame's image tokens (0: none).
  double context_latent_frames = 0;
};

// How a family's trainer honours gradient_checkpointing_interval (FORMAT.md "Checkpointing semantics"),
// parsed once by the loader; to_string gives the name the files (and JSON output) use.
enum class IntervalRule { Segmented, PerBlock, Ignored, MicroBlocks };  // segmented | per_block | ignored | micro_blocks
enum class FallbackRule { EveryBlock, PerBlock };                      // every_block | per_block
enum class BlockIndex { PerList, Global };                             // per_list | global
std::string to_string(IntervalRule r);
std::string to_string(FallbackRule r);
std::string to_string(BlockIndex i);

struct CheckpointSemantics {
  IntervalRule interval = IntervalRule::Segmented;
  bool stride = true;
  FallbackRule fallback = FallbackRule::EveryBlock;
  BlockIndex index = BlockIndex::PerList;  // how per-block selection counts blocks
  bool backend_setter = true;
  bool ffn_backend = false;
  bool attention_offload = false;
  int max_swappable_blocks = 0;
  // A segmented family keeps its segmented path where the others fall back to the per-block one
  // (semantics.cpp): with an -ffn backend (its segmented forward does not check for one), with
  // Musubi block swap active (its forward does not switch on it).
  bool segmented_with_ffn_backend = false;
  bool segmented_with_block_swap = false;
  // measured: under dynamo_use_regional_compilation checkpointing changes neither peak nor time
  // (the compiled blocks keep their activations); see semantics.cpp
  bool compiled_blocks_keep_activations = false;
  std::string notes;
};

struct ExampleSetup {
  std::string name;
  int resolution = 1024;
  std::string resolution_type = "pixel_area";
  int width = 1024, height = 1024, frames = 1, batch = 1;
  ModelType model_type = ModelType::Lora;
  LoraType lora_type = LoraType::Standard;
  int lora_rank = 16;
  std::string optimizer = "adamw_bf16";
  std::string base_precision = "no_change";
  bool ramtorch = false;
  // what else `check` reads from the example's config (scripts/sync_example_setups.py writes them)
  bool sdnq_hadamard = false;
  double ramtorch_percent = 100;
  std::string attention = "diffusers";  // attention_mechanism
  std::string mixed_precision = "bf16";
  bool regional_compile = false;        // dynamo_use_regional_compilation (with a dynamo backend)
  // LyCORIS LoKr its lycoris_config gives (TrainingSetup::lokr_*; lokr_read: the keys are present)
  bool lokr_read = false;
  int lokr_attention_factor = 0, lokr_ffn_factor = 0;
  bool lokr_full_matrix = false;
  int lokr_linear_dim = 4;
  int blocks_to_swap = 0;               // musubi_blocks_to_swap
  bool use_ema = false, ema_on_gpu = false;  // use_ema, ema_device accelerator
};

struct Family {
  std::string id, name, trainer_family;
  std::vector<std::string> flavours;
  bool default_for_family = false;
  std::vector<std::string> aliases;
  std::string confidence;
  std::vector<std::string> source;
  std::string notes;
  std::string modality = "image";
  Geometry geometry;
  int text_tokens = 0;
  double params_published = 0;
  std::vector<BlockListSpec> block_lists;
  CheckpointSemantics checkpointing;
  std::vector<std::string> lora_targets;
  // Names inside one block, as the trainer's model class has them, for Quanto's name filter
  // (BlockCost::modulation_kept_by_quanto, ::ffn_kept_by_quanto): the adaLN modulation Linear
  // ("norm1.linear" in diffusers' AdaLayerNormZero) and the FFN's input projection ("ffn.net.0.proj"
  // in Wan's); recorded where the family has an exclude list that could match them. "": not recorded.
  std::string modulation_module, ffn_module;
  // SimpleTuner's Quanto exclude patterns for the family (fnmatch over module names, as quanto's
  // quantize(exclude=...) applies them); empty: the family has no list and Quanto converts every
  // Linear. quanto_excludes_known false ("unrecorded" in the file): a list exists that no source here
  // spells out (mageflow), so the modulation is taken as kept.
  std::vector<std::string> quanto_excludes;
  bool quanto_excludes_known = true;
  // The module classes a LyCORIS apply_preset can name (target_module matches a module's class name
  // exactly; docs/sources/simpletuner.md §2.4): those holding a block's attention Linears, those holding
  // its FFN Linears, and the whole model (every block Linear). recorded false: none recorded, so a
  // LyCORIS config of the family is estimated.
  struct LycorisClasses {
    std::vector<std::string> attention, ffn, model;
    bool recorded = false;
  } lycoris_classes;
  ExampleSetup example;
  std::string origin;  // file it came from
};

// A LyCORIS config as the trainer hands it to the library: its algorithm, the global factor (-1: the
// library's default, the most balanced factorization), full_matrix, linear_dim, and apply_preset's
// target classes, each with its factor (module_algo_map's, else the global one).
struct LycorisPreset {
  std::string algo;
  int factor = -1;
  bool full_matrix = false;
  int linear_dim = 4;
  std::vector<std::pair<std::string, int>> targets;
};
// Sets the setup's LoKr (TrainingSetup::lokr_*) from the preset and the family's module classes: each
// target class's factor on the parts it holds (the whole model: attention and FFN). A target class the
// family does not record holds no block Linear (the library wraps nothing for a class the model lacks)
// and is added to `absent`. Returns what keeps it from being read ("" when read): another algorithm,
// or no class recorded for the family; unread, the setup keeps lokr_read false (the estimate).
std::string resolve_lokr(const Family& fam, const LycorisPreset& preset, TrainingSetup& setup,
                         std::vector<std::string>& absent);

// Parses and validates one family document; `origin` names the file in error messages.
Family parse_family(const nlohmann::json& j, const std::string& origin);

// Every family shipped in families/data (compiled in), sorted by id.
const std::vector<Family>& builtin_families();

// Finds a family by id, alias, `model_family[:model_flavour]`, or a path to a .json file.
// Throws InputError naming the value and the nearest names.
const Family& find_family(const std::string& name);
// For `model_family` + `model_flavour` as a trainer config has them ("" flavour: the default), by the
// families' trainer_family; `registered_as`, where given, is the trainer_family searched in its place (a
// trainer's alias of it: SimpleTuner's find_family_by_trainer), the messages naming `model_family`.
const Family& find_family_by_model_family(const std::string& model_family, const std::string& model_flavour,
                                          const std::string& origin, const std::string& registered_as = "");

// GPU catalog (families/data/gpus.json): by id, alias or name; "--vram-gib" cards via custom_gpu.
const std::vector<GpuSpec>& builtin_gpus();
// families/data/kernels.json: the kernel figures every catalog GPU carries (GpuSpec::kernels)
std::shared_ptr<const KernelTable> builtin_kernel_table();
const GpuSpec& find_gpu(const std::string& name);
GpuSpec custom_gpu(double vram_gib, const GpuSpec* like = nullptr);
// families/data/card-memory.json onto `g` at its total: driver reservation, CUDA context, library
// workspaces, the allocator margin share (GpuSpec's memory fields; card_overhead in costmodel.hpp)
void apply_card_memory(GpuSpec& g);

}  // namespace segadvise
