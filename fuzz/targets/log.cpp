// Trainer console logs (read-log LOG, --measured-from LOG): any bytes are a report or an
// InputError; the memory and step times read are finite and non-negative.
#include <cmath>
#include <cstdint>
#include <string>

#include "../fuzz_util.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/trainers/log_reader.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("train.log", data, size);
  try {
    const LogReport r = read_log_file(path);
    for (const StepReading& s : r.steps) fuzz::require(fuzz::finite_non_negative(s.sec_per_step), "step time finite and >= 0");
    for (const MemoryReading& m : r.memory)
      for (const auto& b : {m.used_bytes, m.total_bytes, m.allocated_bytes, m.reserved_bytes, m.max_allocated_bytes,
                             m.max_reserved_bytes, m.process_used_bytes})
        fuzz::require(!b || *b >= 0, "memory readings >= 0");
  } catch (const InputError&) {
  }
  return 0;
}
