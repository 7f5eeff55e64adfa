#pragma once
// A bad command-line flag or combination of flags of any `measure` subcommand: main prints
// `error: <what>` and exits 2. Torch-free.

#include <stdexcept>

namespace trainsim::measure {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainsim::measure
