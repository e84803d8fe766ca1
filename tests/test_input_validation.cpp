// Bad input is an InputError naming the file, the field and a short prefix of the value: never a
// crash, a hang, a wrapped-around number or a silent fallback (one reproducer per class).
#include "scratch_dir.hpp"
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "segadvise/trainers/simpletuner_reader.hpp"
#include "test_util.hpp"
#include "segadvise/calibration/dataset.hpp"
#include "segadvise/calibration/ranges.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/families/profile.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/trainer.hpp"

using namespace segadvise;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using test::Scratch;
const Scratch& scratch() {
  static const Scratch s("segadvise-input-");
  return s;
}

template <class F>
std::string error_of(F&& f) {
  return test::input_error_of(std::forward<F>(f));
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A flux config with `extra` config keys and a one-entry data backend with `backend` keys.
std::string config_error(const std::string& extra, const std::string& backend = R"("resolution": 512)") {
  const std::string db = scratch().write("db.json", R"([{"id": "photos", "resolution_type": "pixel_area", )" + backend + "}]");
  const std::string cfg = scratch().write(
      "config.json", R"({"model_family": "flux", "model_type": "lora", "data_backend_config": ")" + db + "\"" +
                         (extra.empty() ? "" : ", " + extra) + "}");
  TrainerReadOptions o;
  o.cwd = scratch().dir.string();
  return error_of([&] { read_simpletuner_config(cfg, o); });
}

// The smallest valid family file; `block` and `extra` splice fields into the block list and the top.
std::string family_text(const std::string& block, const std::string& extra = "") {
  return R"({"id": "tiny", "modality": "image", "text_tokens": 77, "geometry": {}, "checkpointing": {"interval": "segmented"}, )" + extra +
         R"("block_lists": [{"name": "b", "count": 2, "kind": "dit_self", "hidden": 64, "heads": 4, "head_dim": 16, "ffn_hidden": 256)" +
         (block.empty() ? "" : ", " + block) + "}]}";
}
std::string family_error(const std::string& block, const std::string& extra = "") {
  return error_of([&] { parse_family(json::parse(family_text(block, extra)), "tiny.json"); });
}

}  // namespace

TEST_CASE("the config reader: sanity, a valid config reads") {
  CHECK(config_error(R"("train_batch_size": "3")").empty());  // no InputError
}

TEST_CASE("model_type and lora_type are enums read once: an unknown value names file, field and value") {
  CHECK(has(config_error(R"("lora_type": "loha")"), "config.json: lora_type is 'loha'; expected one of standard, lycoris"));
  const std::string db = scratch().write("db-types.json", R"([{"id": "photos", "resolution": 512}])");
  const std::string cfg = scratch().write(
      "config-types.json", R"({"model_family": "flux", "model_type": "half", "data_backend_config": ")" + db + "\"}");
  CHECK(has(error_of([&] { read_simpletuner_config(cfg, TrainerReadOptions{}); }),
            "config-types.json: model_type is 'half'; expected one of lora, full"));
  // read once as enums, written back with the trainer's words (JSON output unchanged)
  for (const ModelType t : {ModelType::Lora, ModelType::Full}) CHECK(parse_model_type(to_string(t), "x") == t);
  for (const LoraType t : {LoraType::Standard, LoraType::Lycoris}) CHECK(parse_lora_type(to_string(t), "x") == t);
  CHECK(to_string(ModelType::Full) == "full");
  CHECK(to_string(LoraType::Lycoris) == "lycoris");
  CHECK(to_json(TrainingSetup{})["model_type"] == "lora");
}

TEST_CASE("the config's indentation is read from the text the loader read, to write it back alike") {
  const std::string db = scratch().write("db-indent.json", R"([{"id": "photos", "resolution": 512}])");
  // two spaces before the first indented key: 2; a one-line file: the default 4
  const std::string two = scratch().write(
      "config-indent.json", "{\n  \"model_family\": \"flux\",\n  \"data_backend_config\": \"" + db + "\"\n}\n");
  CHECK(read_simpletuner_config(two, TrainerReadOptions{}).indent == 2);
  const std::string flat =
      scratch().write("config-flat.json", R"({"model_family": "flux", "data_backend_config": ")" + db + "\"}");
  CHECK(read_simpletuner_config(flat, TrainerReadOptions{}).indent == 4);
}

TEST_CASE("a digit string past 64 bits names file, field and value") {
  for (const std::string key : {"train_batch_size", "lora_rank", "musubi_blocks_to_swap",
                                "gradient_checkpointing_interval", "gradient_checkpointing_segment_stride"}) {
    CAPTURE(key);
    const std::string e = config_error("\"" + key + R"(": "99999999999999999999")");
    CHECK(has(e, "config.json: " + key));
    CHECK(has(e, "99999999999999999999"));
  }
  // in a backend
  CHECK(has(config_error("", R"("resolution": 512, "train_batch_size": "99999999999999999999")"), "train_batch_size"));
}

TEST_CASE("values past int are rejected, never wrapped") {
  // 2^32+1 would wrap to batch 1, 2^40 to rank 0, 2^32+2 to interval 2
  CHECK(has(config_error(R"("train_batch_size": 4294967297)"), "4294967297 is not an integer in [-65536, 65536]"));
  CHECK(has(config_error(R"("lora_rank": 1099511627776)"), "lora_rank"));
  CHECK(has(config_error(R"("gradient_checkpointing_interval": 4294967298)"), "gradient_checkpointing_interval"));
}

TEST_CASE("a backend resolution of NaN, inf, 1e308 or 2^63 is an error") {
  CHECK(has(config_error("", R"("resolution": "NaN")"), "resolution"));
  CHECK(has(config_error("", R"("resolution": "inf", "resolution_type": "pixel")"), "expected a number, got \"inf\""));
  CHECK(has(config_error("", R"("resolution": 1e308, "resolution_type": "pixel")"), "1e+308 is not a finite number"));
  CHECK(has(config_error("", R"("resolution": 9223372036854775808)"), "9223372036854775808 is not an integer"));
}

TEST_CASE("video frames and framerate past the limits are errors") {
  const std::string db = R"("resolution": 480, "dataset_type": "video", "video": {"num_frames": 2147483648})";
  const std::string dbw = scratch().write("dbv.json", "[{\"id\": \"clips\", " + db + "}]");
  const std::string cfg = scratch().write("wan.json", R"({"model_family": "wan", "model_flavour": "t2v-480p-1.3b-2.1",
      "model_type": "lora", "data_backend_config": ")" + dbw + "\"}");
  CHECK(has(error_of([&] { read_simpletuner_config(cfg, {}); }), "num_frames: 2147483648 is not an integer in [1, 65536]"));
  // framerate 1e9 x 5 would be 705,032,704 frames after wrap-around
  const std::string dbf = scratch().write("dbf.json", R"([{"id": "clips", "resolution": 480, "dataset_type": "video"}])");
  const std::string cfgf = scratch().write("wanf.json", R"({"model_family": "wan", "model_flavour": "t2v-480p-1.3b-2.1",
      "model_type": "lora", "framerate": 1000000000, "data_backend_config": ")" + dbf + "\"}");
  CHECK(has(error_of([&] { read_simpletuner_config(cfgf, {}); }), "framerate: 1000000000 is not an integer in [-1000, 1000]"));
}

TEST_CASE("a NaN string in a config number is an error") {
  CHECK(has(config_error(R"("ramtorch": true, "ramtorch_transformer_percent": "NaN")"), "ramtorch_transformer_percent"));
}

TEST_CASE("a 1 MB value is echoed as a short prefix") {
  const std::string e = config_error("\"train_batch_size\": \"" + std::string(1 << 20, 'x') + "\"");
  CHECK(has(e, "train_batch_size"));
  CHECK(e.size() < 400);  // file path + key + 64 characters + "…"
}

TEST_CASE("JSON nested 100,000 deep is refused before parsing") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string e = error_of([&] { parse_json_text("{\"train_batch_size\": " + deep + "}", "deep.json"); });
  // the '{' is level 1; after its 21 characters the 64th '[' (column 21 + 64 = 85) opens level 65
  CHECK(has(e, "deep.json: nested deeper than 64 levels at line 1, column 85"));
  // 64 levels are fine
  CHECK_NOTHROW(parse_json_text(std::string(64, '[') + std::string(64, ']'), "ok.json"));
}

TEST_CASE("brief() of a deeply nested value does not recurse past 4 levels") {
  json v = 1;
  for (int i = 0; i < 10000; ++i) v = json::array({v});  // built directly, not through the loader
  CHECK(brief(v) == "[[[[[…]]]]]");
}

TEST_CASE("key-count limits: in one object and in total") {
  std::string many = "{";
  for (std::size_t i = 0; i <= kMaxKeysPerObject; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  many += "}";
  CHECK(has(error_of([&] { parse_ordered_json_text(many, "keys.json"); }), "keys.json: more than 10000 keys in one object"));
  std::string total = "[";
  for (std::size_t i = 0; i * 2 <= kMaxJsonKeys; ++i) total += (i ? ",{\"a\":0,\"b\":0}" : "{\"a\":0,\"b\":0}");
  total += "]";
  CHECK(has(error_of([&] { parse_json_text(total, "total.json"); }), "total.json: more than 100000 keys"));
}

TEST_CASE("1e400 names the file, line and column") {
  const std::string e = error_of([&] { parse_json_text("{\n  \"a\": 1e400\n}", "big.json"); });
  CHECK(e == "big.json: number 1e400 at line 2, column 8 is beyond the range of a double");
}

TEST_CASE("a parse error gives file, line and column") {
  // line 2 is `  "a": 1,,`: 2 spaces, "a" in 3-5, ':' 6, ' ' 7, '1' 8, ',' 9: the second comma is column 10
  CHECK(has(error_of([&] { parse_json_text("{\n  \"a\": 1,,\n}", "bad.json"); }), "bad.json: malformed JSON at line 2, column 10"));
}

TEST_CASE("only regular files are read") {
  const std::string dir = scratch().dir.string();
  CHECK(has(error_of([&] { load_json_file(dir, "--profile"); }), "is not a regular file (a directory)"));
  CHECK(has(error_of([&] { load_json_file("/dev/zero", "--calibration"); }), "--calibration '/dev/zero': is not a regular file"));
  const std::string fifo = (scratch().dir / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(has(error_of([&] { load_json_file(fifo, "config"); }), "is not a regular file"));
  CHECK(has(error_of([&] { load_json_file(dir + "/absent.json", "--plan"); }), "no such file"));
  CHECK(has(error_of([&] { load_profile(dir); }), "--profile"));
  CHECK(has(error_of([&] { load_coefficients(dir); }), "--calibration"));
  // --ranges went through its own ifstream: a FIFO there blocked the process
  CHECK(has(error_of([&] { ranges_for(fifo); }), "--ranges"));
  CHECK(has(error_of([&] { ranges_for(fifo); }), "is not a regular file"));
}

TEST_CASE("checked numbers: overflow, NaN, range") {
  CHECK(parse_integer_text("65536", "x", 1, 65536) == 65536);
  CHECK(has(error_of([] { parse_integer_text("99999999999999999999", "f: n", 1, 10); }), "f: n: \"99999999999999999999\" is not an integer in [1, 10]"));
  CHECK(has(error_of([] { parse_integer_text("12a", "f: n", 1, 100); }), "expected an integer"));
  CHECK(parse_number_text("2.5e1", "x", 0, 100) == 25);
  for (const std::string bad : {"NaN", "nan", "inf", "-inf", "0x10", "1e400", ""})
    CHECK_THROWS_AS(parse_number_text(bad, "x", -1e300, 1e300), InputError);
  CHECK_THROWS_AS(checked_integer(json(2.5), "x", 0, 10), InputError);
  CHECK(checked_integer(json(4.0), "x", 0, 10) == 4);
  CHECK_THROWS_AS(checked_integer(json(18446744073709551615ULL), "x", 0, 10), InputError);
  CHECK_THROWS_AS(checked_number(json(std::nan("")), "x", 0, 10), InputError);
}

TEST_CASE("schedule names: overflow and seg2-stride0 are errors") {
  CHECK(has(error_of([] { Schedule::parse("interval99999999999999999999"); }), "interval"));
  CHECK(has(error_of([] { Schedule::parse("seg2-stride99999999999"); }), "stride"));
  // stride 0 is an error, not interval2
  CHECK(has(error_of([] { Schedule::parse("seg2-stride0"); }), "stride: \"0\" is not an integer in [1, 65536]"));
  CHECK(Schedule::parse("seg2-stride4").stride == 4);
}

TEST_CASE("family files are validated against FORMAT.md") {
  CHECK(family_error("").empty());  // no InputError
  CHECK(has(family_error(R"("heads": 0)"), "tiny.json: field 'block_lists[0].heads'"));
  CHECK(has(family_error(R"("head_dim": -1)"), "block_lists[0].head_dim"));
  CHECK(has(family_error(R"("ffn_hidden": -1)"), "block_lists[0].ffn_hidden"));
  // every family file writes these keys (null where they do not apply); a zero width is no width
  CHECK(has(family_error(R"("ffn_hidden": 0)"), "field 'block_lists[0].ffn_hidden' is 0; a width is at least 1"));
  CHECK(has(family_error(R"("text_hidden": 0)"), "field 'block_lists[0].text_hidden' is 0"));
  CHECK(has(family_error(R"("head_dim": 0)"), "block_lists[0].head_dim"));
  CHECK(family_error(R"("ffn_hidden": null)").empty());
  for (const std::string key : {"ffn_hidden", "head_dim"}) {
    std::string text = family_text("");
    const std::string field = key == "ffn_hidden" ? ", \"ffn_hidden\": 256" : ", \"head_dim\": 16";
    text.erase(text.find(field), field.size());
    CHECK(has(error_of([&] { parse_family(json::parse(text), "tiny.json"); }), "field 'block_lists[0]." + key + "' is missing"));
  }
  for (const std::string key : {"modality", "text_tokens"}) {
    std::string text = family_text("");
    const auto at = text.find("\"" + key + "\"");
    text.erase(at, text.find(',', at) + 2 - at);
    CHECK(has(error_of([&] { parse_family(json::parse(text), "tiny.json"); }), "field '" + key + "' is missing"));
  }
  CHECK(has(family_error(R"("moe": {"experts": -1})"), "block_lists[0].moe.experts"));
  CHECK(has(family_error(R"("moe": {"experts": 4, "active": 5})"), "block_lists[0].moe.active"));
  CHECK(has(family_error(R"("token_scale": 1e308)"), "block_lists[0].token_scale"));
  CHECK(has(family_error(R"("count": 1e9)"), "block_lists[0].count': 1000000000.0 is not an integer in [1, 1024]"));
  CHECK(has(family_error("", R"("params_published": -5, )"), "params_published"));
  CHECK(has(family_error("", R"("example": {"model_type": "bogus"}, )"), "example.model_type' is 'bogus'; expected one of lora, full"));
  CHECK(has(family_error("", R"("example": {"lora_type": "loha"}, )"),
            "tiny.json: field 'example.lora_type' is 'loha'; expected one of standard, lycoris"));
  const std::string geo = R"({"id": "tiny", "modality": "image", "text_tokens": 77, "geometry": {"alignment": 0}, "checkpointing": {"interval": "segmented"},
      "block_lists": [{"name": "b", "count": 2, "kind": "dit_self", "hidden": 64, "heads": 4, "head_dim": 16, "ffn_hidden": 256}]})";
  CHECK(has(error_of([&] { parse_family(json::parse(geo), "g.json"); }), "geometry.alignment"));
  // 5 lists of 1000 blocks: each list is within 1024, the total of 5000 is past 4096
  std::string lists;
  for (int i = 0; i < 5; ++i)
    lists += std::string(i ? "," : "") + R"({"name": "b)" + std::to_string(i) + R"(", "count": 1000, "kind": "dit_self", "hidden": 64, "heads": 4, "head_dim": 16, "ffn_hidden": null})";
  const std::string big = R"({"id": "big", "modality": "image", "text_tokens": 77, "geometry": {}, "checkpointing": {"interval": "segmented"}, "block_lists": [)" + lists + "]}";
  CHECK(has(error_of([&] { parse_family(json::parse(big), "big.json"); }), "holds 5000 blocks; at most 4096"));
}

namespace {
json profile_json(const std::string& list, const std::string& kind, double saved_bytes) {
  return json{{"format", "segadvise-profile/1"}, {"family", "tiny"}, {"precision", "bf16"}, {"device", "cpu"},
              {"tokens_image", 256},
              {"block_kinds", json::array({json{{"list", list}, {"kind", kind}, {"tokens", 256},
                                                 {"saved_attention_bytes", saved_bytes}, {"saved_ffn_bytes", 0},
                                                 {"saved_rest_bytes", 0}, {"boundary_bytes", 0}}})}};
}
}  // namespace

TEST_CASE("profiles: byte counts finite and >= 0, tokens bounded, kinds must match the family") {
  CHECK_NOTHROW(parse_profile(profile_json("b", "dit_self", 1024), "p.json"));
  CHECK(has(error_of([] { parse_profile(profile_json("b", "dit_self", -1), "p.json"); }),
            "p.json: field 'block_kinds[0].saved_attention_bytes': -1"));
  CHECK(has(error_of([] { parse_profile(profile_json("b", "dit_self", 1e308), "p.json"); }), "saved_attention_bytes"));
  // fits are never negative (the profiler refits without the quadratic term rather than write one)
  json neg = profile_json("b", "dit_self", 0);
  neg["block_kinds"][0]["forward_fit"] = {{"linear_s", 1e-6}, {"quadratic_s", -1e-12}};
  CHECK(has(error_of([&] { parse_profile(neg, "p.json"); }), "p.json: field 'block_kinds[0].forward_fit.quadratic_s': -1e-12"));
  json j = profile_json("b", "dit_self", 0);
  j["block_kinds"][0]["tokens"] = 1e308;
  CHECK(has(error_of([&] { parse_profile(j, "p.json"); }), "block_kinds[0].tokens"));
  const Family fam = parse_family(json::parse(family_text("")), "tiny.json");
  CHECK_NOTHROW(check_profile_kinds(parse_profile(profile_json("b", "dit_self", 0), "p.json"), fam));
  CHECK(has(error_of([&] { check_profile_kinds(parse_profile(profile_json("other", "dit_self", 0), "p.json"), fam); }),
            "list 'other' is no block list of tiny"));
  CHECK(has(error_of([&] { check_profile_kinds(parse_profile(profile_json("b", "unet_res", 0), "p.json"), fam); }),
            "kind 'unet_res' does not match list b (dit_self)"));
}

namespace {
std::string run_error(const std::string& fields) {
  const std::string text = R"({"runs": [{"model": "flux", "gpu": "h100", "mode": "layer", "status": "ok", "sec_per_step": 1.5, "peak_gib": 20)" +
                           (fields.empty() ? "" : ", " + fields) + "}]}";
  return error_of([&] { parse_dataset_json(json::parse(text), "runs.json"); });
}
}  // namespace

TEST_CASE("measured runs: known mixed precision, finite positive times, a non-empty list, checked modes") {
  CHECK(run_error("").empty());  // no InputError
  CHECK(has(run_error(R"("mixed_precision": "bogus")"), "runs.json: run 1: field 'mixed_precision' is 'bogus'"));
  CHECK(has(run_error(R"("sec_per_step": "inf")"), "sec_per_step"));
  CHECK(has(run_error(R"("mode": "interval99999999999999999999")"), "field 'mode' is not a schedule"));
  CHECK(has(run_error(R"("batch": 4294967297)"), "field 'batch'"));
  // sizes as run are at least 1 when given (null: the family example's); the GPU must be one segadvise knows
  for (const std::string f : {"width", "height", "frames", "batch", "lora_rank"})
    CHECK(has(run_error("\"" + f + "\": 0"), "runs.json: run 1: field '" + f + "': 0 is not an integer in [1, 65536]"));
  CHECK(run_error(R"("width": null)").empty());
  CHECK(has(error_of([] {
              parse_dataset_json(json::parse(R"({"runs": [{"model": "flux", "gpu": "h900", "mode": "layer", "status": "oom"}]})"),
                                 "runs.json");
            }),
            "runs.json: run 1: field 'gpu' unknown GPU 'h900'"));
  // and the model too: an unknown one is an error naming the field, not a run scored as "not modelled"
  CHECK(has(error_of([] {
              parse_dataset_json(json::parse(R"({"runs": [{"model": "fluxx:dev", "gpu": "h100", "mode": "layer", "status": "oom"}]})"),
                                 "runs.json");
            }),
            "runs.json: run 1: field 'model' is 'fluxx:dev': model_family 'fluxx' is not modelled; nearest: flux"));
  CHECK(has(run_error(R"("family_id": "flux-nine")"), "runs.json: run 1: field 'family_id' names an unknown model 'flux-nine'"));
  CHECK(run_error(R"("family_id": "flux1")").empty());
  CHECK(has(run_error(R"("lora_type": "loha")"), "runs.json: run 1: field 'lora_type' is 'loha'; expected one of standard, lycoris"));
  CHECK(has(error_of([] { parse_dataset_json(json::parse(R"({"runs": []})"), "empty.json"); }), "empty.json: field 'runs' is empty"));
}

TEST_CASE("block kinds are parsed once: an unknown kind names file, field and value") {
  const std::string text = R"({"id": "k", "modality": "image", "text_tokens": 0, "geometry": {}, "checkpointing": {"interval": "segmented"},
      "block_lists": [{"name": "b", "count": 1, "kind": "dit_crosss", "hidden": 64, "heads": 4}]})";
  CHECK(has(error_of([&] { parse_family(json::parse(text), "k.json"); }),
            "k.json: field 'block_lists[0].kind' is 'dit_crosss'; expected one of dit_cross, dit_self"));
  // to_string gives back the name files use (and JSON output prints)
  for (const auto& t : block_kind_table()) CHECK(parse_block_kind(to_string(t.kind), "x") == t.kind);
  CHECK(!traits(BlockKind::UnetRes).attention);
  CHECK(traits(BlockKind::MmditDouble).joint_tokens);
}

TEST_CASE("trainer facts come from each trainer's folder (trainers/simpletuner: SimpleTuner's names; trainers/<trainer>/<id>.json)") {
  // SimpleTuner data_backend/config/image.py _validate_video_settings: Wan's framerate 15 (num_frames defaults to 15 x 5 = 75)
  CHECK(simpletuner_facts().default_framerates.at("wan") == 15);
  CHECK(simpletuner_facts().default_flavours.at("flux") == "krea");
  CHECK(simpletuner_facts().optimizer_aliases.at("bnb-adam").as == "adamw");
  CHECK(simpletuner_facts().family_aliases.at("sd2x") == "sd1x");
  // --model's model_family:flavour takes SimpleTuner's aliases as a config's model_family does
  CHECK(&find_model("pixart_sigma:") == &find_family_by_trainer("pixart", "", "test"));
  CHECK(model_name("PixArt_Sigma:900M") == "pixart:900m");
  CHECK(model_name("sdxl") == "sdxl");
  std::vector<std::string> with_facts;
  for (const Trainer* t : all_trainers())
    if (t->facts()) with_facts.push_back(t->facts()->id);
  REQUIRE(with_facts.size() == 6);
  CHECK(with_facts[0] == "diffusion-pipe");
  CHECK(with_facts[1] == "sd-scripts");
  CHECK(with_facts[2] == "musubi");
  CHECK(trainer_facts("onetrainer").find(find_family("cascade"))->part == "prior");
}

TEST_CASE("a LyCORIS factor past 64 bits is an error naming the LyCORIS file") {
  const std::string ly = scratch().write("lycoris.json", R"({"algo": "lokr", "factor": "99999999999999999999"})");
  const std::string e = config_error(R"("lora_type": "lycoris", "lycoris_config": ")" + ly + "\"");
  CHECK(has(e, "lycoris.json: factor"));
  CHECK(has(e, "99999999999999999999"));
}

TEST_CASE("a LyCORIS LoKr config is read as the library sizes it, on the classes the family records") {
  const std::string db = scratch().write("db-ly.json", R"([{"id": "photos", "resolution_type": "pixel_area", "resolution": 512}])");
  auto read = [&](const std::string& family, const std::string& lycoris) {
    const std::string ly = scratch().write("lycoris-" + family + ".json", lycoris);
    const std::string cfg = scratch().write(
        "config-ly.json", R"({"model_family": ")" + family + R"(", "model_type": "lora", "lora_type": "lycoris", )"
                          R"("lycoris_config": ")" + ly + R"(", "data_backend_config": ")" + db + "\"}");
    TrainerReadOptions o;
    o.cwd = scratch().dir.string();
    return read_simpletuner_config(cfg, o);
  };
  const std::string preset =
      R"({"algo": "lokr", "factor": 8, "full_matrix": true, "apply_preset": {"target_module": ["Attention", "FeedForward"],
          "module_algo_map": {"Attention": {"factor": 2}}}})";
  // OmniGen: Attention takes its own factor 2; OmniGen has no FeedForward class (nothing adapted there)
  const TrainerRead omnigen = read("omnigen", preset);
  CHECK(omnigen.setup.lokr_read);
  CHECK(omnigen.setup.lokr_attention_factor == 2);
  CHECK(omnigen.setup.lokr_ffn_factor == 0);
  CHECK(omnigen.setup.lokr_full_matrix);
  bool noted = false;
  for (const auto& n : omnigen.setup.notes) noted = noted || has(n, "target_module 'FeedForward' is no module class of omnigen");
  CHECK(noted);
  // PixArt's blocks hold both: FeedForward takes the global factor 8
  const TrainerRead pixart = read("pixart_sigma", preset);
  CHECK(pixart.setup.lokr_attention_factor == 2);
  CHECK(pixart.setup.lokr_ffn_factor == 8);
  // a whole-model class gives its factor to every part
  const TrainerRead bria = read("bria", R"({"algo": "lokr", "linear_dim": 64, "apply_preset": {"target_module": ["BriaTransformer2DModel"]}})");
  CHECK(bria.setup.lokr_attention_factor == -1);  // the library's default factor: the most balanced pair
  CHECK(bria.setup.lokr_ffn_factor == -1);
  CHECK_FALSE(bria.setup.lokr_full_matrix);
  CHECK(bria.setup.lokr_linear_dim == 64);
  // a family whose classes are not recorded keeps the estimate and says so
  const TrainerRead flux = read("flux", preset);
  CHECK_FALSE(flux.setup.lokr_read);
  bool warned = false;
  for (const auto& w : flux.warnings) warned = warned || has(w, "the module classes of flux1 are not recorded");
  CHECK(warned);
  // the trainer's own rule: linear_dim is required unless full_matrix; a factor of 0 is no factorization
  CHECK(has(error_of([&] { read("omnigen", R"({"algo": "lokr", "factor": 4})"); }), "linear_dim: missing"));
  CHECK(has(error_of([&] { read("omnigen", R"({"algo": "lokr", "full_matrix": true, "factor": 0})"); }), "factor"));
}
