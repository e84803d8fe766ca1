// The input/output floor (io/): the one checked number reader (ranges, no NaN or infinity, never a
// silent truncation) and the rule that no output of a command is one of its inputs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "scratch_dir.hpp"
#include "test_util.hpp"
#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/io/text.hpp"

using namespace segadvise;
using nlohmann::json;

TEST_CASE("io: an integer field never wraps: 2^32+1 is out of range, not 1") {
  const json j = json::parse(R"({"batch": 4294967297, "big": 18446744073709551615, "neg": -4294967297})");
  const FieldReader r{j, "config.json", ""};
  CHECK(test::input_error_of([&] { r.integer("batch"); }) ==
        "config.json: field 'batch': 4294967297 is not an integer in [-2147483648, 2147483647]");
  CHECK(!test::input_error_of([&] { r.integer("big"); }).empty());
  CHECK(!test::input_error_of([&] { r.integer("neg"); }).empty());
  CHECK(!test::input_error_of([&] { checked_integer(j["batch"], "batch", 0, 1 << 16); }).empty());
  CHECK(checked_integer(j["batch"], "batch", 0, 1LL << 40) == 4294967297LL);
  CHECK(!test::input_error_of([&] { to_int("4294967297", "run.sh:3: --train_batch_size", 1, 1 << 16); }).empty());
}

TEST_CASE("io: NaN, infinities and numbers past double are refused") {
  constexpr double kMax = std::numeric_limits<double>::max();
  for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    CHECK(!test::input_error_of([&] { checked_number(json(bad), "x", -kMax, kMax); }).empty());
    CHECK(!test::input_error_of([&] { checked_integer(json(bad), "x", -(1LL << 40), 1LL << 40); }).empty());
  }
  for (const char* text : {"nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e400", "0x10"}) {
    CAPTURE(text);
    CHECK(!test::input_error_of([&] { parse_number_text(text, "x", -kMax, kMax); }).empty());
    CHECK(test::input_error_of([&] { to_double(text, "run.sh:2: --lr"); }) ==
          std::string("run.sh:2: --lr: '") + text + "' is not a number");
  }
  // a JSON document with 1e400 is refused before it is parsed
  CHECK(test::input_error_of([] { parse_json_text(R"({"lr": 1e400})", "config.json"); }) ==
        "config.json: number 1e400 at line 1, column 8 is beyond the range of a double");
  // a number is not an integer where one is due
  CHECK(!test::input_error_of([] { checked_integer(json(2.5), "x", 0, 10); }).empty());
  CHECK(!test::input_error_of([] { to_int("2.0", "x", 0, 10); }).empty());
}

TEST_CASE("io: \"12\" is read as 12") {
  CHECK(to_int("12", "x", 0, 100) == 12);
  CHECK(to_int("+12", "x", 0, 100) == 12);
  CHECK(parse_integer_text("12", "x", 0, 100) == 12);
  CHECK(checked_integer(json("12"), "x", 0, 100, NumericText::Accept) == 12);
  CHECK(!test::input_error_of([] { checked_integer(json("12"), "x", 0, 100); }).empty());  // text only when asked
  CHECK(to_double("12", "x") == 12.0);
  CHECK(to_double("1.5e-4", "x") == doctest::Approx(1.5e-4));
  CHECK(checked_number(json(12), "x", 0, 100) == 12.0);
}

TEST_CASE("io: no output of a command may be one of its inputs") {
  test::Scratch s("segadvise-io-test-");
  const std::string in = (s.dir / "config.json").string();
  const std::string other = (s.dir / "other.json").string();
  std::ofstream(in) << "{}\n";
  std::ofstream(other) << "{}\n";
  const std::string via_link = (s.dir / "link.json").string();
  const std::string via_hard = (s.dir / "hard.json").string();
  std::filesystem::create_symlink(in, via_link);
  std::filesystem::create_hard_link(in, via_hard);

  // a new path, and another existing file, are fine
  CHECK_NOTHROW(check_output_is_not_input((s.dir / "new.json").string(), {in}, "--write"));
  CHECK_NOTHROW(check_output_is_not_input(other, {in}, "--write"));
  CHECK_NOTHROW(check_output_is_not_input(other, {}, "--write"));
  // the same file: by its name, through `..`, a symlink to it, a hard link to it
  const std::string same = test::input_error_of([&] { check_output_is_not_input(in, {other, in}, "--write"); });
  CHECK(same.find("--write") != std::string::npos);
  CHECK(same.find("config.json") != std::string::npos);
  const std::string dotted = (s.dir / ".." / s.dir.filename() / "config.json").string();
  CHECK(!test::input_error_of([&] { check_output_is_not_input(dotted, {in}, "--write"); }).empty());
  const std::string linked = test::input_error_of([&] { check_output_is_not_input(via_link, {in}, "-o"); });
  CHECK(linked.find("link.json") != std::string::npos);
  CHECK(linked.find("config.json") != std::string::npos);
  CHECK(!test::input_error_of([&] { check_output_is_not_input(in, {via_link}, "-o"); }).empty());
  const std::string hard = test::input_error_of([&] { check_output_is_not_input(via_hard, {in}, "--out"); });
  CHECK(hard.find("--out") != std::string::npos);
  CHECK(hard.find("hard.json") != std::string::npos);
  // an input that is missing is its reader's to report
  CHECK_NOTHROW(check_output_is_not_input(in, {(s.dir / "missing.json").string()}, "--write"));
}
