// The printers of the CLI's commands (segadvise/report/printer.hpp), with the parts of a report this
// executable prints itself: measurements (measured.hpp), the dataset's buckets (dataset_check.hpp) and
// other trainers' plans (emitters.hpp).
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "segadvise/report/printer.hpp"

namespace segadvise::cli {

const Parts& cli_parts();

// table | markdown | json; InputError naming --format otherwise.
std::unique_ptr<Printer> make_printer(const std::string& format, std::ostream& out);

}  // namespace segadvise::cli
