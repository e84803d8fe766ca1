// Flag parsing: one strict --aspect, and the validators that reject meaningless numbers.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "segadvise/families/gpu_detect.hpp"

#include <algorithm>
#include <cmath>

#include "commands.hpp"
#include "common.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "progress.hpp"
#include "segadvise/report/text_format.hpp"

using namespace segadvise;
using namespace segadvise::cli;

namespace {

// parses `args` as `advise`'s setup flags; the CLI11 error message, "" when they parse
std::string parse_flags(std::vector<std::string> args) {
  CLI::App app;
  SetupFlags f;
  add_setup_flags(&app, f);
  args.insert(args.begin(), {"--model", "flux", "--gpu", "h100"});
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

// parses `args` as a whole command line of calibrate, accuracy or list; the CLI11 error message.
// Only for command lines that fail: a valid one would run the command.
std::string parse_command(std::vector<std::string> args) {
  CLI::App app;
  int rc = 0;
  setup_calibrate(app, rc);
  setup_accuracy(app, rc);
  setup_list(app, rc);
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("--aspect is W:H or a number, both parts above zero") {
  CHECK(parse_aspect("16:9") == doctest::Approx(16.0 / 9.0));
  CHECK(parse_aspect(" 3 / 2 ") == doctest::Approx(1.5));
  CHECK(parse_aspect("1.78") == doctest::Approx(1.78));
  for (const char* bad : {"1:0", "0:1", "0", "-1", "a:b", "16:9:1", "", "1e999:1"})
    CHECK_THROWS_WITH_AS(parse_aspect(bad), doctest::Contains(("--aspect: '" + std::string(bad) + "'").c_str()), InputError);
}

TEST_CASE("numeric flags reject zero, negatives, NaN and overflow where they mean nothing") {
  CHECK(parse_flags({}).empty());
  CHECK(parse_flags({"--batch", "2", "--frames", "1", "--lora-rank", "16", "--blocks-to-swap", "0", "--text-tokens",
                     "0", "--ramtorch-percent", "100", "--vram-gib", "24", "--headroom-gib", "0"})
            .empty());
  CHECK(parse_flags({"--batch", "0"}).find("--batch: must be positive, got 0") != std::string::npos);
  CHECK(parse_flags({"--batch", "-1"}).find("must be positive") != std::string::npos);
  CHECK_FALSE(parse_flags({"--batch", "99999999999"}).empty());  // overflows an int
  CHECK(parse_flags({"--frames", "0"}).find("--frames") != std::string::npos);
  CHECK(parse_flags({"--lora-rank", "-1"}).find("--lora-rank") != std::string::npos);
  CHECK(parse_flags({"--blocks-to-swap", "-1"}).find("must be >= 0") != std::string::npos);
  CHECK(parse_flags({"--text-tokens", "-1"}).find("must be >= 0") != std::string::npos);
  CHECK(parse_flags({"--ramtorch-percent", "nan"}).find("0..100") != std::string::npos);
  CHECK(parse_flags({"--ramtorch-percent", "101"}).find("0..100") != std::string::npos);
  CHECK(parse_flags({"--vram-gib", "0"}).find("--vram-gib") != std::string::npos);
  CHECK(parse_flags({"--vram-gib", "inf"}).find("--vram-gib") != std::string::npos);
  CHECK(parse_flags({"--vram-gib", "4097"}).find("4096") != std::string::npos);
  CHECK(parse_flags({"--headroom-gib", "-1"}).find("--headroom-gib") != std::string::npos);
  CHECK(parse_flags({"--headroom-gib", "nan"}).find("--headroom-gib") != std::string::npos);
  for (const char* empty : {"--precision", "--optimizer", "--resolution", "--gpu"})
    CHECK(parse_flags({empty, ""}).find("must not be empty") != std::string::npos);
  CHECK(parse_flags({"--model-type", "half"}).find("--model-type") != std::string::npos);
  CHECK(parse_flags({"--format", "yaml"}).find("--format") != std::string::npos);
}

TEST_CASE("numeric flags are read by the checked number reader: plain decimal text only") {
  CHECK(parse_flags({"--ramtorch-percent", "1e2"}).empty());  // 100, at the upper bound
  CHECK(parse_flags({"--headroom-gib", "0.5"}).empty());
  for (const char* bad : {"0x10", "inf", "nan", "1e999", "", "5%"})
    CHECK(parse_flags({"--ramtorch-percent", bad}).find("--ramtorch-percent: must be 0..100, got") != std::string::npos);
  CHECK(parse_flags({"--lora-type", "loha"}).find("--lora-type") != std::string::npos);
}

TEST_CASE("calibrate, accuracy and list check their flags with validators, not by hand") {
  CHECK(parse_command({"accuracy", "--headroom-gib", "nan"}).find("--headroom-gib: must be 0..4096 GiB, got nan") !=
        std::string::npos);
  CHECK(parse_command({"calibrate", "--headroom-gib", "-1"}).find("--headroom-gib") != std::string::npos);
  CHECK(parse_command({"calibrate", "--prior-weight", "-1"}).find("--prior-weight: must be >= 0, got -1") !=
        std::string::npos);
  CHECK(parse_command({"accuracy", "--prior-weight", "nan"}).find("--prior-weight") != std::string::npos);
  CHECK(parse_command({"accuracy", "--max-iterations", "-1"}).find("--max-iterations: must be >= 0") !=
        std::string::npos);
  CHECK(parse_command({"calibrate", "--max-iterations", "99999999999"}).find("--max-iterations") != std::string::npos);
  CHECK(parse_command({"calibrate", "--format", "yaml"}).find("--format") != std::string::npos);
  CHECK(parse_command({"accuracy", "--format", "yaml"}).find("--format") != std::string::npos);
  CHECK(parse_command({"accuracy", "--by", "gpu"}).find("--by: gpu not in {family}") != std::string::npos);
  CHECK(parse_command({"accuracy", "--threads", "0"}).find("--threads") != std::string::npos);
  CHECK(parse_command({"list", "modles"}).find("modles") != std::string::npos);
  CHECK(parse_command({"list", "models", "--format", "xml"}).find("--format") != std::string::npos);
}

TEST_CASE("the machine's memory is MemTotal of /proc/meminfo") {
  const std::string path = (std::filesystem::temp_directory_path() / "segadvise-test-meminfo").string();
  std::ofstream(path) << "MemFree:         1000 kB\nMemTotal:       131072 kB\n";
  CHECK(segadvise::detect_host_memory_bytes(path) == doctest::Approx(131072.0 * 1024));  // 128 MiB
  CHECK(segadvise::detect_host_memory_bytes(path + ".missing") == 0);
  std::filesystem::remove(path);
}

TEST_CASE("printed SimpleTuner keys carry no null: the trainer skips a null and an old value would stay") {
  using segadvise::Schedule;
  const Family& wan = find_family("wan2.1-14b");      // segmented path, stride honoured
  const Family& auraflow = find_family("auraflow");   // per-block path, stride honoured
  const Family& hunyuan = find_family("hunyuanvideo-13b");  // per-block, stride not honoured
  const TrainingSetup plain = default_setup(wan);
  const auto keys = [&](const Family& f, const char* name, const TrainingSetup& s) {
    return simpletuner_keys(f, Schedule::parse(name), s);
  };
  const auto remove = [&](const Family& f, const char* name, const TrainingSetup& s) {
    return keys_to_remove(f, Schedule::parse(name), s);
  };
  const nlohmann::json layer = keys(wan, "layer", plain);
  for (auto it = layer.begin(); it != layer.end(); ++it) {  // (no structured binding: doctest captures it)
    const std::string key = it.key();
    CHECK_MESSAGE(!it.value().is_null(), key);
  }
  CHECK(layer["gradient_checkpointing_interval"] == 1);  // 1 = unset to the trainer (semantics §4)
  // the example's RamTorch streaming, which the prediction assumes, goes with the keys
  REQUIRE(plain.ramtorch);
  CHECK(layer["ramtorch"] == true);
  CHECK(!layer.contains("ramtorch_transformer_percent"));  // 100 is the trainer's default
  TrainingSetup part = plain;
  part.ramtorch_percent = 60;
  CHECK(keys(wan, "layer", part)["ramtorch_transformer_percent"] == 60);
  TrainingSetup resident = plain;
  resident.ramtorch = false;
  CHECK(!keys(wan, "layer", resident).contains("ramtorch"));
  resident.blocks_to_swap = 10;
  CHECK(keys(wan, "layer", resident)["musubi_blocks_to_swap"] == 10);
  CHECK(!layer.contains("gradient_checkpointing_segment_stride"));  // ignored without an interval
  // the base precision assumed goes with them, as the trainer spells it
  TrainingSetup quant = plain;
  quant.base_precision = "int8-quanto";
  CHECK(keys(wan, "layer", quant)["base_model_precision"] == "int8-quanto");
  CHECK(!keys(wan, "layer", quant).contains("sdnq_use_hadamard"));
  quant.base_precision = "int8-sdnq-hadamard";
  CHECK(keys(wan, "layer", quant)["base_model_precision"] == "int8-sdnq");
  CHECK(keys(wan, "layer", quant)["sdnq_use_hadamard"] == true);
  quant.base_precision = "bf16";
  CHECK(keys(wan, "layer", quant)["base_model_precision"] == "no_change");
  // what else the reader turns into the setup: Wan 14B's example runs flash-attn-3-hub (the step time's
  // attention kernel); Cosmos 3 edge's compiles its blocks regionally (checkpointing then keeps
  // activations) with an SDNQ Hadamard base; Sana's keeps an EMA on the CPU
  CHECK(layer["attention_mechanism"] == "flash-attn-3-hub");
  const Family& cosmos = find_family("cosmos3-edge");
  const nlohmann::json c3 = keys(cosmos, "layer", default_setup(cosmos));
  CHECK(c3["dynamo_use_regional_compilation"] == true);
  CHECK(c3["dynamo_backend"] == "inductor");
  CHECK(c3["base_model_precision"] == "int8-sdnq");
  CHECK(c3["sdnq_use_hadamard"] == true);
  const Family& sana = find_family("sana-1.6b");
  const nlohmann::json sk = keys(sana, "layer", default_setup(sana));
  CHECK(sk["use_ema"] == true);
  CHECK(sk["ema_device"] == "cpu");
  CHECK(!sk.contains("attention_mechanism"));  // the diffusers default
  CHECK(!sk.contains("mixed_precision"));      // bf16, the default
  // Ideogram's default fp8 flavour is native fp8 at no_change: the config's own value already means it
  const Family& ideogram = find_family("ideogram4");
  TrainingSetup fp8 = default_setup(ideogram);
  fp8.base_precision = "fp8-native";
  CHECK(!keys(ideogram, "layer", fp8).contains("base_model_precision"));
  CHECK(keys(wan, "none", plain)["gradient_checkpointing_interval"] == 1);
  CHECK(remove(wan, "layer", plain).empty());
  // an interval without a stride on the segmented path: stride = interval is the same segments, so the
  // keys set it and nothing is left to delete
  CHECK(keys(wan, "interval3", plain)["gradient_checkpointing_interval"] == 3);
  CHECK(keys(wan, "interval3", plain)["gradient_checkpointing_segment_stride"] == 3);
  CHECK(remove(wan, "interval3", plain).empty());
  // the same family on its per-block fallback (Musubi block swap): no stride means "unset" there
  TrainingSetup swapped = plain;
  swapped.blocks_to_swap = 10;
  CHECK(!keys(wan, "interval3", swapped).contains("gradient_checkpointing_segment_stride"));
  CHECK(remove(wan, "interval3", swapped) == std::vector<std::string>{"gradient_checkpointing_segment_stride"});
  // a per-block family: the stride is named for removal; one that ignores the stride: nothing
  const TrainingSetup aura = default_setup(auraflow);
  CHECK(!keys(auraflow, "interval2", aura).contains("gradient_checkpointing_segment_stride"));
  CHECK(remove(auraflow, "interval2", aura) == std::vector<std::string>{"gradient_checkpointing_segment_stride"});
  CHECK(remove(hunyuan, "interval2", default_setup(hunyuan)).empty());
  CHECK(keys(wan, "seg2-stride4", plain)["gradient_checkpointing_segment_stride"] == 4);
  CHECK(remove(wan, "seg2-stride4", plain).empty());
  // rewriting a whole config still removes unset keys (null = remove)
  CHECK(schedule_keys(Schedule::parse("layer"))["gradient_checkpointing_interval"].is_null());
}

TEST_CASE("every command's exit code is the one verdict's: 0 fits, 3 borderline, 1 does not fit") {
  CHECK(exit_code(FitVerdict::Fits) == 0);
  CHECK(exit_code(FitVerdict::Borderline) == 3);
  CHECK(exit_code(FitVerdict::DoesNotFit) == 1);
  // unmeasured, Flux's example setup on a 24 GB card fits with confidence (exit 0); on a card of
  // 17 GiB it is only borderline (its 90% ranges straddle the card)
  SetupFlags f;
  f.model = "flux";
  f.gpu = "4090";
  CHECK(exit_code(advise_report(make_request(f), AdviceOptions{})) == 0);
  f.vram_gib = 17;
  const AdviceReport advice = advise_report(make_request(f), AdviceOptions{});
  REQUIRE(advice.verdict() == FitVerdict::Borderline);
  CHECK(exit_code(advice) == 3);
  // another trainer's plan, when it is the answer, decides: a confident plan exits 0, none exits 1
  CHECK(exit_code(advice, FitVerdict::Fits) == 0);
  CHECK(exit_code(advice, FitVerdict::DoesNotFit) == 1);
  // predict of the borderline schedule says the same
  const PredictionReport p = predict_report(make_request(f), advice.advice.candidates[advice.advice.borderline].schedule);
  CHECK(p.verdict() == FitVerdict::Borderline);
  CHECK(exit_code(p) == 3);
  // a schedule the trainer rejects does not fit
  const PredictionReport bad = predict_report(make_request(f), Schedule::parse("seg4-stride2"));
  CHECK_FALSE(bad.candidate.prediction.supported);
  CHECK(exit_code(bad) == 1);
}

TEST_CASE("progress is shown on a terminal only: nothing in a pipe, one overwritten line on a terminal") {
  std::ostringstream pipe;
  {
    Progress p(pipe, false);
    p.update("accuracy: fitting without flux (1/26)");
    p.finish();
  }
  CHECK(pipe.str().empty());
  std::ostringstream tty;
  {
    Progress p(tty, true);
    p.update("fitting without flux (1/26)");  // 27 columns
    p.update("fitting without sd3 (2/26)");   // 26: one space clears the longer line's last column
  }  // the destructor clears the line
  CHECK(tty.str() == "\rfitting without flux (1/26)"
                     "\rfitting without sd3 (2/26) \rfitting without sd3 (2/26)"
                     "\r" + std::string(26, ' ') + "\r");
}

TEST_CASE("the table layout and markdown differ only through the TextFormat") {
  const TextFormat& table = table_format();
  const TextFormat& md = markdown_format();
  CHECK(md.section(3, "Setup", "Setup (assumed where you gave no flag):\n") == "### Setup\n\n");
  CHECK(table.section(3, "Setup", "Setup (assumed where you gave no flag):\n") == "Setup (assumed where you gave no flag):\n");
  CHECK(md.item("warning: ") == "- ");
  CHECK(table.item("warning: ") == "warning: ");
  CHECK(md.strong("verdict: fits") == "**verdict: fits**");
  CHECK(table.strong("verdict: fits") == "verdict: fits");
  CHECK(md.code_block("json", "{}\n") == "```json\n{}\n```\n");
  CHECK(table.code_block("json", "{}\n") == "{}\n");
  Table t({"a", "bb"});
  t.add({"ccc", "d"});
  std::ostringstream aligned, pipes;
  table.table(aligned, t);
  md.table(pipes, t);
  CHECK(aligned.str() == "a    bb\n-------\nccc  d\n");  // widths 3 and 2, two spaces between
  CHECK(pipes.str() == "| a   | bb |\n| --- | -- |\n| ccc | d  |\n");
}

TEST_CASE("each format has its own printer: markdown headings only from the markdown one") {
  SetupFlags f;
  f.model = "sd3";
  f.gpu = "h100";
  const PredictionReport r = predict_report(make_request(f), Schedule::parse("layer"));
  std::ostringstream table, md, json;
  TablePrinter(table).prediction(r);
  MarkdownPrinter(md).prediction(r);
  JsonPrinter(json).prediction(r);
  CHECK(table.str().find("### Setup") == std::string::npos);
  CHECK(table.str().rfind("Setup (assumed where you gave no flag):\n", 0) == 0);
  CHECK(md.str().rfind("### Setup\n\n", 0) == 0);
  CHECK(md.str().find("| memory") != std::string::npos);
  CHECK(nlohmann::json::parse(json.str())["prediction"]["fit"] == "fits");
}
