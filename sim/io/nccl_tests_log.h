#pragma once
// Reads the output of nccl-tests' all_reduce_perf as the source of the all_reduce curve.
// Torch-free.
//
// Format (nccl-tests src/common.cu): lines starting with '#' are headers. The header
// "#  Rank  R Group G Pid P on HOST device D [BUS] NAME" appears once per rank (how many
// ranks ran), and the column header names the columns:
//   size count type redop root time algbw busbw #wrong time algbw busbw #wrong
// (older versions: no `root`, and an `error` column, the largest difference from the expected
// result, instead of `#wrong`; up to 1e-3 is float32 rounding): out-of-place then in-place. Data lines
// start with the size in bytes. Times are in microseconds. mpirun prefixes such as
// "[1,0]<stdout>:" are stripped; other lines (NCCL INFO, warnings) are ignored.

#include <string>

#include "format/profile.h"

namespace trainsim {

// The all_reduce curve of the log (out-of-place time per size), ranks = the number of distinct
// "# Rank" headers. Throws InputError(path, line, "nccl-tests-log", what) on a data line that
// does not parse, a line with wrong elements (#wrong > 0, or error > 1e-3), no rank header or no
// data line.
CollectiveCurve parse_nccl_tests_log(const std::string& path);
// The same on text already read; `name` is the file name used in errors.
CollectiveCurve parse_nccl_tests_log_text(const std::string& text, const std::string& name);

}  // namespace trainsim
