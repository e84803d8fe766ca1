// Readers of user text never recurse on it: long values are answered with an InputError naming the
// flag or field and a short prefix of the value (never a stack overflow from a regex engine).
#include <doctest/doctest.h>

#include <string>

#include "common.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "test_util.hpp"

using namespace segadvise;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
const std::string kLongDigits(30000, '7');

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
