#pragma once
// The flags that set a large-batch comparison's question (--base-batch, --epochs, --target-loss),
// shared by `measure largebatch-compare` and `measure largebatch-plan`.

#include <boost/program_options.hpp>
#include <cstdint>

#include "largebatch/compare.h"

namespace trainsim::measure {

// The flags' values as parsed, before they are checked.
struct QuestionFlags {
  int64_t base_batch = 0;
  int64_t epochs = 0;
  double target_loss = 0;
};

// Adds --base-batch and --epochs (defaults from `defaults`) and --target-loss to `flags`.
void add_question_flags(boost::program_options::options_description& flags, QuestionFlags& raw,
                        const CompareOptions& defaults);
// Checks them into `o`; throws UsageError naming the flag.
void apply_question_flags(const boost::program_options::variables_map& vm, const QuestionFlags& raw, CompareOptions& o);

}  // namespace trainsim::measure
