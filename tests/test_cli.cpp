// Flag parsing: one strict --aspect, and the validators that reject meaningless numbers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "common.hpp"

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
