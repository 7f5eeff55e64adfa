#pragma once
// Reads the output of an nccl-tests collective benchmark (all_reduce_perf, all_gather_perf,
// reduce_scatter_perf, broadcast_perf, reduce_perf) as that collective's curve. Torch-free.
//
// Format (nccl-tests src/common.cu): lines starting with '#' are headers. The header
// "#  Rank  R Group G Pid P on HOST device D [BUS] NAME" appears once per rank (how many
// ranks ran), and the column header names the columns:
//   size count type redop root time algbw busbw #wrong time algbw busbw #wrong
// (older versions: no `root`, and an `error` column, the largest difference from the expected
// result, instead of `#wrong`; up to 1e-3 is float32 rounding): out-of-place then in-place. Data lines
// start with the size in bytes. Times are in microseconds. mpirun prefixes such as
// "[1,0]<stdout>:" are stripped; other lines (NCCL INFO, warnings) are ignored. Some releases
// print no root (-1) as blanks. Rows of size 0 (below one element per rank) are skipped.
//
// The collective: the binary the text names as a word ("# Collective test starting:
// all_gather_perf", a command line), checked against what the columns say (src/<op>.cu: rooted
// without a reduction a broadcast, with one a reduce; unrooted, size = count x type bytes an
// all-reduce, size = count x type bytes x ranks an all-gather without a reduction or a
// reduce-scatter with one). A log whose text names no binary must be told apart by its columns
// (all_gather_perf and alltoall_perf print the same ones).

#include <string>

#include "format/profile.h"

namespace trainsim {

// The log's curve (op as above, out-of-place time per size), ranks = the number of distinct
// "# Rank" headers, gpus_per_thread = the "# nThread T nGpus G" header's G (0 without it).
// Throws InputError(path, line, "nccl-tests-log", what) on a data line that does not parse, a
// line with wrong elements (#wrong > 0, or error > 1e-3), no rank header, no data line, a
// collective trainsim does not model, or one the text and the columns disagree on.
CollectiveCurve parse_nccl_tests_log(const std::string& path);
// The same on text already read; `name` is the file name used in errors.
CollectiveCurve parse_nccl_tests_log_text(const std::string& text, const std::string& name);

}  // namespace trainsim
