// SimpleTuner config + data-backend reader (check CONFIG): the input is the config.json text,
// optionally followed by a line "----" and the data-backend file's text (passed as --data-backend).
// Any pair is read or is an InputError; an accepted config gives finite, non-negative predictions,
// and writing it back with another schedule keeps it valid JSON.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string sep = "\n----\n";
  const auto cut = text.find(sep);
  const std::string config = text.substr(0, cut);
  TrainerReadOptions opt;
  opt.cwd = fuzz::scratch_dir();
  if (cut != std::string::npos) {
    const std::string backend = text.substr(cut + sep.size());
    opt.data_backend_override = fuzz::write_scratch(
        "backend.json", reinterpret_cast<const uint8_t*>(backend.data()), backend.size());
  }
  const std::string path =
      fuzz::write_scratch("config.json", reinterpret_cast<const uint8_t*>(config.data()), config.size());
  try {
    const TrainerRead r = read_simpletuner_config(path, opt);
    (void)with_schedule(r.raw, Schedule::parse("interval2")).dump();
    if (!r.family) return 0;
    const BlockChain chain = analyze(*r.family, r.setup);
    fuzz::check_schedule(*r.family, chain, r.setup, r.schedule);
  } catch (const InputError&) {
  }
  return 0;
}
