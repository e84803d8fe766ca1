// Limits of every input file, each with its reason. Also stated in README ("Reliability") and
// families/FORMAT.md.
#pragma once

#include <cstddef>

namespace segadvise {

// ---- input files (every JSON loader goes through load_json_file) ----
// The largest input file read: the biggest real input (the built-in measured runs) is ~200 KiB, a
// SimpleTuner config a few KiB; 64 MiB leaves room for generated files and bounds memory and time.
constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;
// Deepest nesting of arrays/objects. Real inputs nest at most 5 deep (a profile's fit objects);
// the limit keeps every recursive walk of a document (dump, destruction, our readers) shallow.
constexpr int kMaxJsonDepth = 64;
// Keys in one document. The largest real document (measured runs) has ~25,000 keys.
constexpr std::size_t kMaxJsonKeys = 100000;
// Keys in one object. Configs keep their key order (nlohmann::ordered_json), whose insertion looks
// keys up linearly: n keys cost n^2/2 comparisons, so one object is capped (10,000 -> 5e7, ~0.1 s).
constexpr std::size_t kMaxKeysPerObject = 10000;
// ---- launch scripts (shell_script.hpp) ----
// Bytes of one expanded variable, word or command. Real values are paths and flags (under 4 KiB); a
// script that doubles a variable line by line (A="$A$A") would otherwise grow 2^n.
constexpr std::size_t kMaxShellValueBytes = std::size_t{1} << 20;
// Nesting of expansions inside expansions (${A:-${B:-x}}) and of sourced scripts. Real scripts nest
// two or three deep; each level re-reads its text, so the depth bounds the work.
constexpr int kMaxShellNesting = 16;
// Characters of an offending value echoed in an error message (then "…").
constexpr std::size_t kMaxEchoChars = 64;

}  // namespace segadvise
