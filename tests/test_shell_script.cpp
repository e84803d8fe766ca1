// Launch scripts as their shells run them (io/shell_script.hpp): bash's variables, arrays, word
// splitting and heredocs, PowerShell's and cmd's continuations and variables, what is warned about,
// and the trainers' readings of users' scripts (tests/fixtures/trainers/shell/).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "scratch_dir.hpp"
#include "segadvise/io/error.hpp"
#include "segadvise/io/shell_script.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/trainers/trainer_writer.hpp"

using namespace segadvise;

namespace {

const std::string kShell = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/shell/";

const test::Scratch& scratch() {
  static const test::Scratch s("segadvise-shell-");
  return s;
}

// the words of the script's last command
std::vector<std::string> last(const std::string& text, const std::string& name = "run.sh") {
  const ShellScript s = read_shell_script(text, name);
  REQUIRE(!s.commands.empty());
  std::vector<std::string> out;
  for (const ShellWord& w : s.commands.back().words) out.push_back(w.text);
  return out;
}

bool warned(const std::vector<std::string>& warnings, const std::string& part) {
  for (const auto& w : warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

using V = std::vector<std::string>;

}  // namespace

TEST_SUITE("shell") {

TEST_CASE("bash: variables assigned earlier, quoted and unquoted, with defaults, concatenated") {
  CHECK(last("OUT=/w/out\nexport N=\"a b\"\nlocal L=1\ndeclare -x D=2\ncmd $OUT/x \"$N\" $N ${L}${D} '$OUT'") ==
        V{"cmd", "/w/out/x", "a b", "a", "b", "12", "$OUT"});
  CHECK(last("cmd ${A:-def} ${A-x} ${B:=set} $B \"${C:-two words}\" ${C:-two words}") ==
        V{"cmd", "def", "x", "set", "set", "two words", "two", "words"});
  CHECK(last("E=\nF=f\ncmd ${E:-d} \"${E-d}\" ${F:+alt} ${#F} x\"\"y \"\"") == V{"cmd", "d", "", "alt", "1", "xy", ""});
  // NAME=value before a command is that command's environment only; += appends
  CHECK(last("A=1\nA=2 cmd $A\nA+=3\ncmd $A") == V{"cmd", "13"});
  // escapes and $'...'
  CHECK(last("cmd \\$HOME \"\\$x \\\"q\\\"\" $'a\\tb'") == V{"cmd", "$HOME", "$x \"q\"", "a\tb"});
}

TEST_CASE("bash: arrays, multi-line with comments, expanded as bash does") {
  const std::string s =
      "ARGS=(\n  --a 1   # first\n  --b \"x y\"\n)\nARGS+=(--c)\nE=()\n"
      "cmd \"${ARGS[@]}\" \"${E[@]}\" end\ncmd ${ARGS[*]}\ncmd \"${ARGS[*]}\"\ncmd \"${ARGS[1]}\" $ARGS";
  const ShellScript r = read_shell_script(s, "a.sh");
  REQUIRE(r.commands.size() == 4);
  auto words = [&](std::size_t i) {
    V v;
    for (const auto& w : r.commands[i].words) v.push_back(w.text);
    return v;
  };
  CHECK(words(0) == V{"cmd", "--a", "1", "--b", "x y", "--c", "end"});
  CHECK(words(1) == V{"cmd", "--a", "1", "--b", "x", "y", "--c"});
  CHECK(words(2) == V{"cmd", "--a 1 --b x y --c"});
  CHECK(words(3) == V{"cmd", "1", "--a"});
  CHECK(r.warnings.empty());
}

TEST_CASE("bash: a heredoc writes the file a later command reads; quoted delimiter, <<-, >> and tee") {
  const ShellScript r = read_shell_script(
      "D=/data\ncat > \"$D/ds.toml\" <<EOF\nx = \"$D\"\nEOF\ncat <<'EOF' > raw.toml\ny = \"$D\"\nEOF\n"
      "cat <<-END >> raw.toml\n\t\tz = 1\n\tEND\ntee ./t.toml <<EOF >/dev/null\nt = \\$D\nEOF\ncmd --c raw.toml\n",
      "w.sh");
  REQUIRE(r.written_files.count("/data/ds.toml"));
  CHECK(r.written_files.at("/data/ds.toml").text == "x = \"/data\"\n");
  CHECK(r.written_files.at("/data/ds.toml").line == 2);
  CHECK(r.written_files.at("raw.toml").text == "y = \"$D\"\nz = 1\n");
  REQUIRE(written_file(r.written_files, "t.toml"));  // ./t.toml and t.toml are one file
  CHECK(written_file(r.written_files, "t.toml")->text == "t = $D\n");
  CHECK(r.commands.back().words.back().text == "raw.toml");
}

TEST_CASE("bash: a variable never set is read as empty and named, with its line; a gone value is marked") {
  const ShellScript r = read_shell_script("X=1\n\ncmd --data \"$DATA_DIR/img\" --cfg $CFG --flag $1\n", "u.sh");
  CHECK(warned(r.warnings, "u.sh:3: $DATA_DIR is not set in the script: read as empty"));
  CHECK(warned(r.warnings, "$1 (an argument of the script) is not set in the script"));
  const auto& w = r.commands.back().words;
  REQUIRE(w.size() == 5);  // $CFG and $1 leave no word at all
  CHECK(w[2].text == "/img");
  CHECK(w[2].unset == V{"$DATA_DIR"});
  CHECK(w[3].unset_after == V{"$CFG"});
  CHECK(w[4].unset_after == V{"$1"});
}

TEST_CASE("bash: a variable referencing itself expands once; doubling past the limit is refused, naming the line") {
  CHECK(last("A=a\nA=\"$A $A\"\nA=${A}x\ncmd $A") == V{"cmd", "a", "ax"});
  CHECK(last("A=${A:-$A}\ncmd \"$A\"") == V{"cmd", ""});
  std::string s = "A=xxxxxxxxxxxxxxxx\n";
  for (int i = 0; i < 40; ++i) s += "A=$A$A\n";
  CHECK_THROWS_WITH_AS(read_shell_script(s, "big.sh"), doctest::Contains("big.sh:"), InputError);
  CHECK_THROWS_WITH_AS(read_shell_script(s, "big.sh"), doctest::Contains("past 1 MiB"), InputError);
  // nested defaults past the limit
  std::string deep = "cmd ";
  for (int i = 0; i < 40; ++i) deep += "${U:-";
  deep += "x" + std::string(40, '}');
  CHECK_THROWS_WITH_AS(read_shell_script(deep, "deep.sh"), doctest::Contains("nested deeper than 16"), InputError);
}

TEST_CASE("bash: what is not followed is named with its line, and the rest is read") {
  const ShellScript r = read_shell_script(
      "N=$(nproc)\nfor lr in 1e-4 2e-4; do\n  run --lr $lr --n $N\ndone\nsource ./nowhere.sh\n"
      "f() {\n  echo hi\n}\ncase $x in\n a) cmd --no ;;\nesac\nif [ -f x ]; then echo y; fi\neval \"$CMD\"\ncmd --ok 1\n",
      "c.sh");
  CHECK(warned(r.warnings, "c.sh:1: '$(nproc)'"));
  CHECK(warned(r.warnings, "c.sh:2: the 'for' loop is not followed: its commands are read once, with $lr = '1e-4'"));
  CHECK(warned(r.warnings, "c.sh:5: 'source ./nowhere.sh' is not followed (the file is not here)"));
  CHECK(warned(r.warnings, "c.sh:6: function 'f' is not followed"));
  CHECK(warned(r.warnings, "c.sh:9: 'case' is not followed"));
  CHECK(warned(r.warnings, "c.sh:12: 'if' is not followed"));
  CHECK(warned(r.warnings, "c.sh:13: 'eval' is not followed"));
  bool lr = false, no = false;
  for (const auto& c : r.commands) {
    lr |= c.words.size() == 5 && c.words[2].text == "1e-4" && c.words[4].text == "$(nproc)";
    for (const auto& w : c.words) no |= w.text == "--no";
  }
  CHECK(lr);   // the loop's body, once, its value kept as written where it came from a substitution
  CHECK(!no);  // inside case: not read
  CHECK(r.commands.back().words[1].text == "--ok");
}

TEST_CASE("bash: a sourced script that is here sets variables; exit ends the script") {
  scratch().write("vars.sh", "export DS=/d/ds.toml\n");
  const std::string main = scratch().write("main.sh", "source vars.sh\ncmd --c $DS\nexit 0\ncmd --after\n");
  const ShellScript r = read_shell_script(read_text_file(main, "x"), main);
  CHECK(r.warnings.empty());
  REQUIRE(r.commands.size() == 1);
  CHECK(r.commands[0].words[2].text == "/d/ds.toml");
}

TEST_CASE("bash: a backslash and a space ending a line end the command, as bash does, and are warned; CRLF is read as LF") {
  const ShellScript r = read_shell_script("python train.py --a 1 \\ \n  --b 2\n", "s.sh");
  CHECK(warned(r.warnings, "s.sh:1: a backslash followed by a space is no line continuation"));
  REQUIRE(r.commands.size() == 2);
  CHECK(r.commands[1].words[0].text == "--b");
  const ShellScript crlf = read_shell_script("A=1\r\npython train.py \\\r\n  --a $A\r\n", "w.sh");
  CHECK(warned(crlf.warnings, "w.sh:1: CRLF line ends: read as if LF"));
  REQUIRE(crlf.commands.size() == 1);
  CHECK(crlf.commands[0].words.back().text == "1");
}

TEST_CASE("bash: unterminated quotes, arrays and heredocs") {
  CHECK_THROWS_WITH_AS(read_shell_script("a\ncmd \"x\n", "q.sh"), doctest::Contains("q.sh:2: unterminated \""), InputError);
  CHECK_THROWS_WITH_AS(read_shell_script("A=(a b\n", "q.sh"), doctest::Contains("unterminated array"), InputError);
  const ShellScript r = read_shell_script("cat > a.toml <<EOF\nx = 1\n", "h.sh");
  CHECK(warned(r.warnings, "h.sh:1: the here-document is ended by the end of the file"));
  CHECK(r.written_files.at("a.toml").text == "x = 1\n");
}

TEST_CASE("a notebook's !command lines and %env are read as the shell command they run") {
  const ShellScript r = read_shell_script("%env DATA=/content/data\n!accelerate launch train_dreambooth_lora_flux.py \\\n  --instance_data_dir=$DATA --resolution=512\n", "cell.txt");
  REQUIRE(r.commands.size() == 1);
  CHECK(r.commands[0].words[0].text == "accelerate");
  CHECK(r.commands[0].words[3].text == "--instance_data_dir=/content/data");
  CHECK(r.warnings.empty());
}

TEST_CASE("a Jupyter notebook: its !lines, %env and the Python string and number assignments they expand") {
  const TrainerRead r = read_trainer_config(kShell + "dreambooth_lora_flux.ipynb", TrainerReadOptions{});
  CHECK(r.trainer == "diffusers");
  REQUIRE(r.family);
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.width == 512);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.lora_rank == 16);  // --rank={RANK}, RANK = 16 in an earlier cell
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.schedule.checkpointing);
  REQUIRE(r.datasets.size() == 1);
  CHECK(r.datasets[0].dir == "/content/dog");  // --instance_data_dir={INSTANCE_DIR}
  CHECK(r.warnings.empty());
  CHECK_THROWS_WITH_AS(read_shell_script("[1, 2]", "x.ipynb"), doctest::Contains("x.ipynb: not a Jupyter notebook"), InputError);
}

TEST_CASE("the dialect: by extension, else by what only PowerShell or cmd writes") {
  CHECK(shell_dialect("a.ps1", "") == ShellDialect::PowerShell);
  CHECK(shell_dialect("a.BAT", "") == ShellDialect::Cmd);
  CHECK(shell_dialect("a.cmd", "") == ShellDialect::Cmd);
  CHECK(shell_dialect("a.sh", "x `\n") == ShellDialect::Bash);
  CHECK(shell_dialect("pasted.txt", "accelerate launch train.py `\n  --x 1 `\n  --y 2\n") == ShellDialect::PowerShell);
  CHECK(shell_dialect("pasted", "$env:HF_HOME = \"x\"\npython train.py\n") == ShellDialect::PowerShell);
  CHECK(shell_dialect("pasted", "@echo off\nset A=1\npython train.py ^\n --x 1\n") == ShellDialect::Cmd);
  CHECK(shell_dialect("pasted", "A=1\npython train.py \\\n --x $A\n") == ShellDialect::Bash);
  CHECK(shell_dialect("pasted", "date +%Y%m%d%H\n") == ShellDialect::Bash);
}

TEST_CASE("PowerShell: backtick continuations, $VAR / $env:VAR / \"$($VAR)\", arrays and splatting, & calls") {
  const std::string s =
      "$Res = 512\n$env:DS = 'C:\\d'\n$Args2 = @(\n  \"--a\", \"1\"\n  '--b'\n)\n$out = $env:DS + \"\\out\"\n"
      "& .\\venv\\Scripts\\python.exe train.py `\n  --resolution=$Res --ds \"$($env:DS)\\x\" `\n  $Args2 --o $out @Args2 --q \"`\"x`\"\" # c\n";
  const ShellScript r = read_shell_script(s, "t.ps1");
  REQUIRE(r.commands.size() == 1);
  V w;
  for (const auto& x : r.commands[0].words) w.push_back(x.text);
  CHECK(w == V{".\\venv\\Scripts\\python.exe", "train.py", "--resolution=512", "--ds", "C:\\d\\x", "--a", "1", "--b", "--o",
               "C:\\d\\out", "--a", "1", "--b", "--q", "\"x\""});
  CHECK(r.commands[0].words.back().line == 10);
  CHECK(r.warnings.empty());
}

TEST_CASE("PowerShell: an unset variable, a backtick followed by a space, a subexpression not run") {
  const ShellScript r = read_shell_script("python train.py --a $DATA --b `  \n  --c 1 --d $(Get-Date)\n", "u.ps1");
  CHECK(warned(r.warnings, "u.ps1:1: $DATA is not set in the script: read as empty"));
  CHECK(warned(r.warnings, "u.ps1:1: a backtick followed by a space is no line continuation"));
  CHECK(warned(r.warnings, "'$(Get-Date)'"));
  REQUIRE(r.commands.size() == 2);
  CHECK(r.commands[0].words[2].unset_after == V{"$DATA"});  // $null passes no argument
}

TEST_CASE("cmd: ^ continuations, set / set \"...\", %VAR%, call, REM and ::") {
  const std::string s =
      "@echo off\r\nREM a comment %X%\r\n:: another\r\nset A=1\r\nset \"B=two words\"\r\nset C=%A%%A%\r\n"
      "call python train.py --a %A% ^\r\n  --b \"%B%\" --c=%C% --p 100%% ^\r\n  --e %NOPE% > log.txt 2>&1\r\n";
  const ShellScript r = read_shell_script(s, "t.bat");
  REQUIRE(r.commands.size() == 2);  // echo off, then python
  V w;
  for (const auto& x : r.commands[1].words) w.push_back(x.text);
  CHECK(w == V{"python", "train.py", "--a", "1", "--b", "two words", "--c=11", "--p", "100%", "--e"});
  CHECK(r.commands[1].words[4].line == 8);  // each word keeps the line it is written on
  CHECK(r.commands[1].words.back().unset_after == V{"%NOPE%"});
  CHECK(warned(r.warnings, "t.bat:9: %NOPE% is not set in the script: read as empty"));
  CHECK(r.warnings.size() == 1);  // not the %X% of a REM line
}

TEST_CASE("cmd: a variable referencing itself expands once; set /a, labels and goto are warned about") {
  const ShellScript r = read_shell_script("set P=x\nset P=%P%;%P%\nset /a N=1+1\n:loop\ngoto loop\npython t.py %P%\n", "s.cmd");
  CHECK(r.commands.back().words.back().text == "x;x");
  CHECK(warned(r.warnings, "s.cmd:3: 'set /a' is not followed"));
  CHECK(warned(r.warnings, "s.cmd:4: label ':loop'"));
  CHECK(warned(r.warnings, "s.cmd:5: 'goto' is not followed"));
}

TEST_CASE("a musubi bash script: variables, an array and the heredoc dataset TOML it writes (the file is not here)") {
  const TrainerRead r = read_trainer_config(kShell + "musubi_wan14b_heredoc.sh", TrainerReadOptions{});
  CHECK(r.trainer == "musubi");
  REQUIRE(r.family);
  CHECK(r.family->id == "wan2.1-14b");
  // the shape from the heredoc's TOML: [general] resolution [960, 544], batch_size 2, images
  CHECK(r.setup.width == 960);
  CHECK(r.setup.height == 544);
  CHECK(r.setup.batch == 2);
  CHECK(r.setup.frames == 1);
  CHECK(r.shape_source.find("/workspace/output/dataset.toml (heredoc at musubi_wan14b_heredoc.sh:16)") == 0);
  REQUIRE(r.datasets.size() == 1);
  CHECK(r.datasets[0].dir == "/workspace/datasets/my_character/images");  // ${DATA_DIR} expanded in the heredoc
  // the flags from the array, += and the command
  CHECK(r.setup.lora_rank == 32);
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.setup.base_precision == "fp8wo-torchao");
  CHECK(r.schedule.checkpointing);
  CHECK(r.setup.blocks_to_swap > 0);
  CHECK(r.rejections.empty());
  for (const auto& w : r.warnings) CHECK_MESSAGE(w.find("not set in the script") == std::string::npos, w);
}

TEST_CASE("a diffusers PowerShell script with backtick continuations: every flag read") {
  const TrainerRead r = read_trainer_config(kShell + "sdxl_lora_6gb.ps1", TrainerReadOptions{});
  CHECK(r.trainer == "diffusers");
  REQUIRE(r.family);
  CHECK(r.family->id == "sdxl");
  CHECK(r.setup.width == 512);
  CHECK(r.setup.height == 512);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.lora_rank == 8);
  CHECK(r.setup.mixed_precision == "fp16");
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.schedule.checkpointing);
  REQUIRE(r.datasets.size() == 1);
  CHECK(r.datasets[0].dir == "C:\\Users\\me\\datasets\\pokemon");
  CHECK(r.warnings.empty());
}

TEST_CASE("a musubi cmd script with ^ continuations, set and %VAR%: the dataset TOML beside it via %~dp0") {
  const TrainerRead r = read_trainer_config(kShell + "qwen_lora.bat", TrainerReadOptions{});
  CHECK(r.trainer == "musubi");
  REQUIRE(r.family);
  CHECK(r.family->id == "qwen-image");
  CHECK(r.setup.width == 1328);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.lora_rank == 16);
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.schedule.checkpointing);
  CHECK(r.setup.blocks_to_swap > 0);
  CHECK(r.inputs.back() == kShell + "dataset_qwen.toml");
}

TEST_CASE("a musubi --config_file the script writes with a heredoc (\".toml\" appended, as musubi does)") {
  const std::string p = scratch().write(
      "cf.sh",
      "W=/w\ncat > $W/ds.toml <<EOF\n[general]\nresolution = [1024, 576]\nbatch_size = 4\n[[datasets]]\nimage_directory = \"$W/img\"\nEOF\n"
      "cat > $W/run.toml <<EOF\n[main]\ntask = \"t2v-1.3B\"\nsdpa = true\nmixed_precision = \"bf16\"\nnetwork_dim = 64\ndataset_config = \"$W/ds.toml\"\nEOF\n"
      "accelerate launch wan_train_network.py --config_file $W/run --gradient_checkpointing\n");
  const TrainerRead r = read_trainer_config(p, TrainerReadOptions{});
  REQUIRE(r.family);
  CHECK(r.family->id == "wan2.1-1.3b");
  CHECK(r.setup.lora_rank == 64);
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.batch == 4);
  CHECK(r.schedule.checkpointing);
  CHECK(r.config_file == "/w/run.toml (heredoc at cf.sh:9)");
}

TEST_CASE("a path from a variable the script never sets is refused, naming the line and the variable") {
  const std::string p = scratch().write(
      "unset.sh", "accelerate launch wan_train_network.py --task t2v-1.3B --sdpa \\\n  --dataset_config \"$CFG_DIR/dataset.toml\" --network_dim 8\n");
  CHECK_THROWS_WITH_AS(read_trainer_config(p, TrainerReadOptions{}),
                       doctest::Contains("unset.sh:2: --dataset_config '/dataset.toml': $CFG_DIR is not set in the script"), InputError);
  const std::string gone = scratch().write("gone.sh", "python wan_train_network.py --task t2v-1.3B --dataset_config $CFG --sdpa\n");
  CHECK_THROWS_WITH_AS(read_trainer_config(gone, TrainerReadOptions{}), doctest::Contains("$CFG is not set in the script"), InputError);
}

TEST_CASE("the script's heredoc is preferred to a file on disk of that name, with a warning") {
  scratch().write("ds.toml", "[general]\nresolution = 256\n[[datasets]]\nimage_directory = \"x\"\n");
  const std::string p = scratch().write(
      "both.sh", "cd \"$(dirname \"$0\")\"\ncat > ds.toml <<'EOF'\n[general]\nresolution = 768\nbatch_size = 3\n[[datasets]]\nimage_directory = \"x\"\nEOF\n"
                 "python wan_train_network.py --task t2v-1.3B --sdpa --dataset_config ./ds.toml\n");
  const TrainerRead r = read_trainer_config(p, TrainerReadOptions{});
  CHECK(r.setup.width == 768);
  CHECK(r.setup.batch == 3);
  CHECK(warned(r.warnings, "the script writes this file at line 2 (a heredoc) before the command runs"));
}

TEST_CASE("a flag a plan adds goes after the training script, not into a caching command before it") {
  const std::string t = "python src/musubi_tuner/wan_cache_latents.py --vae v\naccelerate launch src/musubi_tuner/wan_train_network.py --sdpa\n";
  CHECK(set_command_line_flag(t, "fp8_base", true, "wan_train_network.py") ==
        "python src/musubi_tuner/wan_cache_latents.py --vae v\naccelerate launch src/musubi_tuner/wan_train_network.py --fp8_base --sdpa\n");
  CHECK(set_command_line_flag(t, "fp8_base", true).find("wan_cache_latents.py --fp8_base") != std::string::npos);  // no script named
}

}  // TEST_SUITE
