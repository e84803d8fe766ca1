// The one exception for bad input, at the bottom of the layering so that every library throws it.
#pragma once

#include <stdexcept>

namespace segadvise {

// Bad input (a flag, a file, a field, a value). The message names them; cli/main.cpp catches it
// once, prints `segadvise: error: …` and exits with code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace segadvise
