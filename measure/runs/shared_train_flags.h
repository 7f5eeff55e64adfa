#pragma once
// The flags `measure train` shares with the PyTorch reference trainer (measure/pytorch/train.py):
// one table, measure/runs/train_flags.json, compiled in here and read by train.py at start, gives
// each one's name, kind, range or choices, default and help (docs/RUNS.md). Torch-free.

#include <boost/program_options.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::measure {

struct SharedFlag {
  enum class Kind { kInt, kChoice, kText, kSwitch };
  std::string name;  // without the leading --
  Kind kind = Kind::kText;
  int64_t min = 0;                 // kInt: the smallest value accepted
  std::optional<int64_t> max;      // kInt: the largest, where the table gives one
  std::vector<std::string> choices;  // kChoice
  std::optional<std::string> default_value;  // as text; none: the trainer decides
  std::string metavar;
  std::string help;
};

// The table's flags in its order. Throws std::logic_error when the compiled-in table is not what
// this reader expects (a build of a broken train_flags.json: tests/runs_options_test.cpp).
const std::vector<SharedFlag>& shared_train_flags();

// The table's flags as Boost.Program_options flags (ints read as int64, switches as presence).
void add_shared_train_flags(boost::program_options::options_description& flags);

// A shared int flag's value (the table's default where not given), checked against its range:
// UsageError "--NAME: V is below the minimum M" / "... is too large". nullopt: neither given nor
// defaulted.
std::optional<int64_t> shared_int(const boost::program_options::variables_map& vm, const std::string& name);
// A shared choice or text flag's value: UsageError "--NAME: 'V' is not one of A, B" for a value
// not among a choice flag's choices. nullopt: neither given nor defaulted.
std::optional<std::string> shared_text(const boost::program_options::variables_map& vm, const std::string& name);
// Whether a shared switch was given.
bool shared_switch(const boost::program_options::variables_map& vm, const std::string& name);

}  // namespace trainsim::measure
