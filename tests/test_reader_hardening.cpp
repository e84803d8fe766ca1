// Readers of user text never recurse on it: long values are answered with an InputError naming the
// flag or field and a short prefix of the value (never a stack overflow from a regex engine).
#include "scratch_dir.hpp"
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/planner/measured_text.hpp"
#include "test_util.hpp"

using namespace segadvise;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
const std::string kLongDigits(30000, '7');
namespace fs = std::filesystem;

using test::Scratch;
const Scratch& scratch() {
  static const Scratch s("segadvise-harden-");
  return s;
}
std::string read_error(const std::string& path) {
  return test::input_error_of([&] { read_trainer_config(path, TrainerReadOptions{}); });
}

}  // namespace

TEST_CASE("a 30,000-digit resolution is out of range, not a crash") {
  const Family& flux = find_family("flux");
  const std::string edge = test::input_error_of([&] { parse_resolution(kLongDigits, "pixel", flux, 1.0); });
  CHECK(has(edge, "--resolution '7777"));
  CHECK(edge.size() < 400);  // the value is cut, not echoed whole
  const std::string wxh = test::input_error_of([&] { parse_resolution("1024x" + kLongDigits, "pixel", flux, 1.0); });
  CHECK(has(wxh, "height"));
  CHECK(has(test::input_error_of([&] { parse_resolution("1024x", "pixel", flux, 1.0); }), "neither WxH"));
  CHECK(has(test::input_error_of([&] { parse_resolution("5.", "pixel", flux, 1.0); }), "neither WxH"));
}

TEST_CASE("resolutions with spaces and fractions read as before") {
  const Family& flux = find_family("flux");
  CHECK(parse_resolution(" 832 x 480 ", "pixel", flux, 1.0).width == 832);
  CHECK(parse_resolution("1024", "pixel", flux, 1.0).width == 1024);
  CHECK(parse_resolution("1.0", "area", flux, 1.0).width == 1024);
}

TEST_CASE("a 30,000-digit aspect is an error naming the flag") {
  const std::string e = test::input_error_of([&] { cli::parse_aspect(kLongDigits + ":9"); });
  CHECK(has(e, "--aspect: '7777"));
  CHECK(e.size() < 400);
  CHECK(has(test::input_error_of([&] { cli::parse_aspect("16:"); }), "--aspect"));
  CHECK(cli::parse_aspect(" 16 : 9 ") == doctest::Approx(16.0 / 9.0));
  CHECK(cli::parse_aspect(".5") == doctest::Approx(0.5));
  CHECK(cli::parse_aspect("3/2") == doctest::Approx(1.5));
}

TEST_CASE("a 30,000-digit schedule interval is out of range, not a crash") {
  CHECK(has(test::input_error_of([&] { Schedule::parse("interval" + kLongDigits); }), "interval"));
  CHECK(has(test::input_error_of([&] { Schedule::parse("seg2-stride" + kLongDigits + "-offload"); }), "stride"));
  CHECK(has(test::input_error_of([&] { Schedule::parse("seg" + kLongDigits); }), "interval"));
  CHECK(has(test::input_error_of([&] { Schedule::parse("interval" + std::string(30000, '0')); }), "at least 1"));
  CHECK(has(test::input_error_of([&] { Schedule::parse("seg2-stride"); }), "unknown schedule"));
  CHECK(has(test::input_error_of([&] { Schedule::parse("interval3-offloadx"); }), "unknown schedule"));
  const Schedule s = Schedule::parse("seg4-stride2-offload");
  CHECK(s.interval == 4);
  CHECK(s.stride == 2);
  CHECK(s.offload_attention);
  CHECK(Schedule::parse("interval3").interval == 3);
  CHECK(!Schedule::parse("seg5").offload_attention);
}

TEST_CASE("a 30,000-digit measurement is an error, not a crash") {
  CHECK(!test::input_error_of([&] { parse_measurement("interval" + kLongDigits + ":1:16"); }).empty());
  CHECK(!test::input_error_of([&] { parse_measurement("layer:" + kLongDigits + ":16"); }).empty());
}

TEST_CASE("a YAML, TOML or command-line FIFO is refused, not waited on") {
  for (const std::string name : {"p.yaml", "p.toml", "p.sh"}) {
    const std::string e = read_error(scratch().fifo(name));
    CHECK(has(e, name + "': is not a regular file"));
  }
}

TEST_CASE("a device and a /proc file are refused as trainer configs") {
  CHECK(has(read_error("/dev/zero"), "'/dev/zero': is not a regular file"));
  CHECK(has(test::input_error_of([&] { read_text_input("/proc/self/mem", "config"); }), "'/proc/self/mem': cannot be read"));
}

TEST_CASE("a text input over 64 MiB is refused before it is read") {
  const std::string big = scratch().write("big.toml", "");
  REQUIRE(::truncate(big.c_str(), (std::size_t{64} << 20) + 1) == 0);  // sparse: no 64 MiB written
  CHECK(has(read_error(big), "big.toml': larger than the limit of 64 MiB"));
  ::unlink(big.c_str());
}

TEST_CASE("a NUL byte or invalid UTF-8 in a YAML file is an error naming the line") {
  const std::string nul = scratch().write("nul.yaml", std::string("config:\n  name: \"a") + '\0' + "b\"\n");
  CHECK(has(read_error(nul), "nul.yaml': a NUL byte at line 2, column 11"));
  const std::string latin1 = scratch().write("latin1.yaml", "config:\n  name: caf\xe9\n");
  CHECK(has(read_error(latin1), "latin1.yaml': invalid UTF-8 at line 2, column 12"));
}

TEST_CASE("an accelerate config that is a FIFO is refused") {
  std::vector<std::string> warnings;
  const std::string fifo = scratch().fifo("accelerate.yaml");
  CHECK(has(test::input_error_of([&] { read_accelerate_yaml(fifo, MultiGpuSetup{}, warnings); }),
            "accelerate config '" + fifo + "': is not a regular file"));
}

TEST_CASE("a musubi dataset_config or config_file that is a FIFO, or missing, is named as such") {
  scratch().fifo("ds.toml");
  const std::string cmd = scratch().write(
      "musubi_fifo.sh", "python flux_kontext_train_network.py --dataset_config " + (scratch().dir / "ds.toml").string() + " --sdpa\n");
  CHECK(has(read_error(cmd), "ds.toml': is not a regular file"));
  const std::string missing = scratch().write("musubi_missing.sh", "python flux_kontext_train_network.py --config_file absent.toml --sdpa\n");
  const std::string e = read_error(missing);
  CHECK(has(e, "config_file 'absent.toml': no such file"));
  CHECK(!has(e, "dataset_config"));
}

TEST_CASE("a musubi TOML of the wrong shape names the file, line, key and the value's type") {
  // the dataset TOML with `datasets` written as a table ([datasets]) rather than [[datasets]] entries
  auto dataset = [](const std::string& name, const std::string& toml) {
    const std::string ds = scratch().write(name + ".toml", toml);
    return read_error(scratch().write(
        name + ".sh", "python wan_train_network.py --task t2v-14B --sdpa --dataset_config " + ds + "\n"));
  };
  const std::string table = dataset("ds_table", "[general]\nresolution = 512\n\n[datasets]\nimage_directory = \"/d\"\n");
  CHECK(has(table, "ds_table.toml:4: datasets: is a table; expected an array of tables ([[datasets]] entries)"));
  CHECK(has(dataset("ds_general", "general = [1, 2]\n[[datasets]]\nimage_directory = \"/d\"\n"),
            "ds_general.toml:1: general: is an array; expected a table ([general])"));
  CHECK(has(dataset("ds_entry", "datasets = [1]\n"), "ds_entry.toml:1: datasets[0]: is the integer 1; expected a table"));
  // one [[datasets]] entry (an image or a video directory) with one bad key: the error each names
  struct Bad {
    const char* name;
    const char* entry;  // the entry's first line
    const char* key;    // the bad key's line
    const char* expected;
  };
  const Bad bad[] = {
      {"ds_res", "image_directory = \"/d\"", "resolution = [960, \"544\"]",
       "ds_res.toml:3: datasets[0].resolution[1]: is the string \"544\"; expected an integer in [1, 65536]"},
      {"ds_res_table", "image_directory = \"/d\"", "resolution = {w = 960}", "datasets[0].resolution: is a table; expected an integer or [W, H]"},
      // an integer past int's range is refused, not wrapped (4294967808 would wrap to 512)
      {"ds_wrap", "image_directory = \"/d\"", "batch_size = 4294967297",
       "datasets[0].batch_size: is the integer 4294967297; expected an integer in [1, 65536]"},
      {"ds_edge", "image_directory = \"/d\"", "resolution = 4294967808", "is the integer 4294967808; expected an integer in [1, 65536]"},
      {"ds_frames", "video_directory = \"/v\"", "frame_extraction = 3",
       "ds_frames.toml:3: datasets[0].frame_extraction: is the integer 3; expected a string"},
      {"ds_target", "video_directory = \"/v\"", "target_frames = [1, true]",
       "datasets[0].target_frames: is the boolean true; expected an integer in [1, 65536]"},
  };
  for (const Bad& b : bad)
    CHECK_MESSAGE(has(dataset(b.name, std::string("[[datasets]]\n") + b.entry + "\n" + b.key + "\n"), b.expected), b.name);
  // a --config_file section holding a table, where flags are scalars or lists
  const std::string cfg = scratch().write("cfg_nested.toml", "[model]\ntask = \"t2v-14B\"\nsdpa = true\n[model.extra]\nx = 1\n");
  CHECK(has(read_error(scratch().write("cfg_nested.sh", "python wan_train_network.py --config_file " + cfg + "\n")),
            "cfg_nested.toml:4: extra: is a table; expected a boolean, number, string or list"));
  // a list flag (network_args) is read as argparse reads it, not refused
  const std::string ds = scratch().write("ds_ok.toml", "[[datasets]]\nimage_directory = \"/d\"\nresolution = 512\n");
  const std::string lists = scratch().write(
      "cfg_list.toml", "[model]\ntask = \"t2v-14B\"\nsdpa = true\nnetwork_args = [\"loraplus_lr_ratio=4\"]\ndataset_config = \"" + ds + "\"\n");
  CHECK(read_error(scratch().write("cfg_list.sh", "python wan_train_network.py --config_file " + lists + "\n")).empty());
}

TEST_CASE("a newline ends a command: the issue's two-line script takes the training line's flags") {
  const std::string sh = scratch().write(
      "two_lines.sh",
      "accelerate launch train_dreambooth_lora_flux.py --resolution=1024 --train_batch_size=1 --gradient_checkpointing --rank 16\n"
      "python upload.py --resolution 4096 --train_batch_size 64\n");
  const TrainerRead r = read_trainer_config(sh, TrainerReadOptions{});
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.lora_rank == 16);
}

TEST_CASE("the training command is found past `&&`, `;` and comments, and continues over backslash-newline") {
  const std::string sh = scratch().write(
      "chained.sh",
      "# setup\n"
      "cd /data && export X=1; python prepare.py --resolution 4096 --train_batch_size 64\n"
      "accelerate launch train_dreambooth_lora_flux.py \\\n"
      "  --resolution=512 --train_batch_size=2 --rank 8 # the run\n"
      "echo done --train_batch_size 99 | tee log\n");
  const TrainerRead r = read_trainer_config(sh, TrainerReadOptions{});
  CHECK(r.setup.width == 512);
  CHECK(r.setup.batch == 2);
  CHECK(r.setup.lora_rank == 8);
}

TEST_CASE("quoted operators and newlines stay inside their token") {
  const std::vector<Token> t = shell_tokens("a 'b;c\nd' \"e&&f\" g\nh", "x.sh");
  REQUIRE(t.size() == 6);
  CHECK(t[1].text == "b;c\nd");
  CHECK(t[2].text == "e&&f");
  CHECK(t[4].ends_command);  // the newline after g
  CHECK(t[4].line == 2);
  CHECK(t[5].text == "h");
}

TEST_CASE("a TOML value nested 10,000 deep is refused before toml11 parses it, naming the line") {
  const std::string deep = scratch().write("deep.toml", "# a musubi config\na = " + std::string(10000, '[') + "\n");
  CHECK(has(read_error(deep), "deep.toml:2:69: arrays and tables nested deeper than 64 levels"));
  // brackets inside strings and comments are not nesting
  const std::string quoted = scratch().write(
      "quoted.toml", "x = \"" + std::string(100, '[') + "\"\n# " + std::string(100, '[') + "\ny = '''\n" +
                         std::string(100, '{') + "\n'''\nz = [[1, 2], [3]]\nw = " + std::string(70, '[') + "\n");
  CHECK(has(read_error(quoted), "quoted.toml:7:69: arrays and tables nested deeper"));
}

namespace {

std::string fixture_text(const std::string& rel) {
  std::ifstream in(std::string(SEGADVISE_FIXTURES_DIR) + "/" + rel, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a YAML job with gradient_checkpointing true then false is read as PyYAML reads it: without") {
  const std::string job = fixture_text("trainers/ai-toolkit/train_lora_flux_24gb.yaml");
  const std::string line = "        gradient_checkpointing: true  # need the on unless you have a ton of vram\n";
  CHECK(read_trainer_config(scratch().write("once.yaml", job), TrainerReadOptions{}).schedule.checkpointing);
  const std::string dup = scratch().write("dup.yaml", replace_once(job, line, line + "        gradient_checkpointing: false\n"));
  CHECK(!read_trainer_config(dup, TrainerReadOptions{}).schedule.checkpointing);
}

TEST_CASE("YAML merge keys are followed: explicit keys override merged ones, earlier maps of a list win") {
  const std::string job = replace_once(fixture_text("trainers/ai-toolkit/train_lora_flux_24gb.yaml"), "---\n", "");
  const std::string train = "      train:\n        batch_size: 1\n";
  // the train map takes batch_size and gradient_checkpointing from an anchored map
  const std::string merged = scratch().write(
      "merged.yaml", "defaults: &d {batch_size: 3, gradient_checkpointing: false}\nother: &o {batch_size: 5}\n" +
                         replace_once(replace_once(job, train, "      train:\n        <<: [*d, *o]\n"),
                                      "        gradient_checkpointing: true  # need the on unless you have a ton of vram\n", ""));
  const TrainerRead r = read_trainer_config(merged, TrainerReadOptions{});
  CHECK(r.setup.batch == 3);
  CHECK(!r.schedule.checkpointing);
  const std::string overridden = scratch().write(
      "overridden.yaml", "defaults: &d {batch_size: 3}\n" + replace_once(job, train, "      train:\n        <<: *d\n        batch_size: 2\n"));
  CHECK(read_trainer_config(overridden, TrainerReadOptions{}).setup.batch == 2);
}

TEST_CASE("an accelerate YAML with num_processes twice is read with the last") {
  std::vector<std::string> warnings;
  const std::string acc = scratch().write(
      "acc.yaml", "distributed_type: MULTI_GPU\nnum_machines: 1\nnum_processes: 2\nnum_processes: 8\n");
  CHECK(read_accelerate_yaml(acc, MultiGpuSetup{}, warnings).gpus_per_node == 8);
}

TEST_CASE("YAML aliases that expand past a million nodes are refused") {
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c)
    laughs += std::string(1, c) + ": &" + c + " [" + std::string("*") + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) +
              ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) +
              ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
  CHECK(has(read_error(scratch().write("laughs.yaml", laughs + "config: {process: [{}]}\n")), "nodes once aliases are expanded"));
}

TEST_CASE("command-line numbers go through the checked reader: no wrap, no zero batch, resolution or rank") {
  auto diffusers = [](const std::string& extra) {
    return read_error(scratch().write(
        "numbers.sh", "accelerate launch train_dreambooth_lora_flux.py --resolution=1024 --train_batch_size=1 --rank 16 " +
                          extra + "\n"));
  };
  CHECK(diffusers("").empty());
  CHECK(has(diffusers("--train_batch_size=4294967297"), "--train_batch_size: \"4294967297\" is not an integer in [1, 65536]"));
  CHECK(has(diffusers("--resolution=0"), "--resolution: \"0\" is not an integer in [1, 65536]"));
  CHECK(has(diffusers("--rank 0"), "--rank: \"0\" is not an integer in [1, 65536]"));
  const std::string long_edge = diffusers("--resolution=" + kLongDigits);
  CHECK(has(long_edge, "is not an integer in [1, 65536]"));
  CHECK(long_edge.size() < 400);
  const std::string musubi = read_error(scratch().write(
      "musubi_dim.sh", "python flux_kontext_train_network.py --network_dim 4294967297 --dataset_config ds.toml\n"));
  CHECK(has(musubi, "network_dim: \"4294967297\" is not an integer in [1, 65536]"));
}

TEST_CASE("OneTrainer's numbers go through the checked reader: a batch of 2^32+1 is out of range, not 1") {
  std::string cfg = test::slurp(std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/onetrainer/flux_lora.json");
  const std::string from = "\"batch_size\": 4,";
  REQUIRE(cfg.find(from) != std::string::npos);
  cfg.replace(cfg.find(from), from.size(), "\"batch_size\": 4294967297,");
  CHECK(has(read_error(scratch().write("onetrainer_batch.json", cfg)),
            "batch_size: 4294967297 is not an integer in [-2147483648, 2147483647]"));
}

TEST_CASE("YAML and TOML hold the JSON loader's key limits, naming line and column") {
  // 10,001 keys in one mapping / one table (the limit is 10,000 per object, as for JSON)
  std::string yaml = "config:\n  process:\n    - train: {}\n  extra:\n", toml;
  for (int i = 0; i <= 10000; ++i) {
    yaml += "    k" + std::to_string(i) + ": 1\n";
    toml += "k" + std::to_string(i) + " = 1\n";
  }
  // the 10,001st key of `extra` is on line 4 + 10,001, column 5
  CHECK(has(read_error(scratch().write("many.yaml", yaml)), "many.yaml':10005:5: more than 10000 keys in one mapping"));
  CHECK(has(read_error(scratch().write("many.toml", toml)), "many.toml:10001:8: more than 10000 keys in one table"));
  // tables of 10,000 keys each are fine until the document's 100,000
  std::string tables;
  for (int t = 0; t < 11; ++t) {
    tables += "[t" + std::to_string(t) + "]\n";
    for (int i = 0; i < 10000; ++i) tables += "k" + std::to_string(i) + " = 1\n";
  }
  CHECK(has(read_error(scratch().write("tables.toml", tables)), "more than 100000 keys"));
}

TEST_CASE("accelerate keys of the wrong type name the file, line, key, value and the type expected") {
  std::vector<std::string> warnings;
  auto error = [&](const std::string& text) {
    return test::input_error_of([&] { read_accelerate_yaml(scratch().write("typed.yaml", text), MultiGpuSetup{}, warnings); });
  };
  CHECK(has(error("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_offload_params: maybe\n"),
            "typed.yaml':4: fsdp_offload_params: expected true or false, got 'maybe'"));
  CHECK(has(error("num_processes: [1, 2]\n"), "typed.yaml':1: num_processes: expected an integer, got a list"));
  CHECK(has(error("num_processes: eight\n"), "num_processes: expected an integer, got 'eight'"));
  CHECK(has(error("distributed_type: DEEPSPEED\ndeepspeed_config: 3\n"), "deepspeed_config: expected a mapping, got '3'"));
  CHECK(has(error("5\n"), "expected a mapping of keys at the top, got '5'"));
  const std::string long_value = error("num_processes: " + std::string(200000, 'x') + "\n");
  CHECK(long_value.size() < 400);  // the 200 KB value is cut
  // the fields left out keep their defaults; yes/no are YAML booleans (PyYAML)
  const MultiGpuSetup m = read_accelerate_yaml(
      scratch().write("fsdp.yaml", "distributed_type: FSDP\nnum_processes: 4\nfsdp_config:\n  fsdp_offload_params: yes\n"),
      MultiGpuSetup{}, warnings);
  CHECK(m.gpus_per_node == 4);
  CHECK(m.fsdp_cpu_offload);
  CHECK(m.reshard_after_forward);
}

TEST_CASE("GPUs per node x nodes past 2^20 is an error, not a wrapped one-GPU world") {
  TrainerRead r;
  r.config_path = "st.json";
  r.raw = nlohmann::ordered_json{{"num_processes", 65536}, {"num_machines", 65536}};
  CHECK(has(test::input_error_of([&] { read_multi_gpu_keys(r, "", "."); }),
            "st.json: num_processes 65536 x num_machines 65536 is more than the 1048576 GPUs"));
}

TEST_CASE("ai-toolkit datasets: 65,536 px is read without overflow; batch 0 and 65,537 px are errors") {
  const std::string job = fixture_text("trainers/ai-toolkit/train_lora_flux_24gb.yaml");
  const std::string res = "resolution: [ 512, 768, 1024 ]";
  REQUIRE(has(job, res));
  // 65,536^2 / 64 x batch is past an int: the largest size must still win
  const TrainerRead big = read_trainer_config(scratch().write("big.yaml", replace_once(job, res, "resolution: [ 512, 65536 ]")),
                                              TrainerReadOptions{});
  CHECK(big.setup.width == 65536);
  CHECK(has(read_error(scratch().write("huge.yaml", replace_once(job, res, "resolution: [ 65537 ]"))),
            "datasets[0].resolution: 65537 is not in [1, 65536]"));
  CHECK(has(read_error(scratch().write("batch0.yaml", replace_once(job, res, res + "\n          batch_size: 0"))),
            "datasets[0].batch_size: 0 is not in [1, 65536]"));
}
