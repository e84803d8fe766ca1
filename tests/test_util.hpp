// Helpers shared by the doctest suites.
#pragma once

#include <string>
#include <utility>

#include "segadvise/costmodel/types.hpp"

namespace segadvise::test {

// The message of the InputError `f` throws, "" when it throws none.
template <class F>
std::string input_error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace segadvise::test
