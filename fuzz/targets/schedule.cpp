// Schedule names (Schedule::parse): any string is a schedule or an InputError; a schedule's name
// parses back to itself, and realizing it on a family gives a finite prediction.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Family& fam = find_family("wan2.1-1.3b");
  static const TrainingSetup setup = default_setup(fam);
  static const BlockChain chain = analyze(fam, setup);
  const std::string text(reinterpret_cast<const char*>(data), size);
  Schedule s;
  try {
    s = Schedule::parse(text);
  } catch (const InputError&) {
    return 0;
  }
  const std::string name = s.name();
  Schedule again;
  try {
    again = Schedule::parse(name);
  } catch (const InputError&) {
    fuzz::violated("a schedule's own name does not parse");
  }
  fuzz::require(again.name() == name, "name -> parse -> name round-trips");
  fuzz::check_schedule(fam, chain, setup, s);
  return 0;
}
