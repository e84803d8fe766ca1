// A warning or reason of a report as a value with its kind beside its text, so every front end (the
// terminal's table, JSON, a page) can show it as it needs; the text is what the terminal prints.
#pragma once

#include <string>

namespace segadvise {

enum class DiagnosticKind {
  Warning,     // the trainer ignores or changes a key, or a run needs more than the machine has
  Rejection,   // the trainer stops before training
  Assumption,  // a figure rests on something not measured
  Note,        // how the report was formed (a profile's costs, the schedule the trainer really runs)
};

// "warning", "rejection", "assumption", "note"
const char* to_string(DiagnosticKind k);

struct Diagnostic {
  DiagnosticKind kind = DiagnosticKind::Warning;
  std::string text;
};

}  // namespace segadvise
