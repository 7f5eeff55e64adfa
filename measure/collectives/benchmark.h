#pragma once
// The collective benchmark: `measure` (the parent) launches one process per rank running
// `measure worker collective ...`; each rank joins the c10d process group DDP uses (the one
// Communicator, comm/communicator.h: ProcessGroupGloo on CPU, ProcessGroupNCCL on GPUs), checks
// that the collective computes the right values, then times it per message size (barrier,
// warm-up, median of repeats); the time of a size is the maximum over ranks of the per-rank
// medians (a collective is done when the slowest rank is). Rank 0 writes the curve to result.txt
// in the launcher's folder; the parent reads it.

#include <string>
#include <vector>

#include "collectives/collective_op.h"
#include "comm/communicator.h"
#include "format/profile.h"

namespace trainsim::measure::collectives {

struct CollectiveJob {
  std::string backend = "gloo";  // "gloo" (CPU) or "nccl" (GPU; rank r uses cuda:r)
  CollectiveOp op = CollectiveOp::all_reduce;
  std::vector<int64_t> sizes;    // message bytes (float32 elements = bytes / 4), ascending
  int warmup = 2;                // untimed runs per size
  int repeats = 20;              // timed runs per size, reduced for large sizes (repeats_for_size)
  int threads = 1;               // LibTorch intra-op threads in each rank process
  double timeout_s = 300;        // rendezvous or one collective blocked longer fails the rank
};

struct CollectiveResult {
  CollectiveCurve curve;      // op, ranks, one point per size
  double check_expected = 0;  // the correctness check run before timing, seen from rank 0:
  double check_observed = 0;  // every rank r contributes r + 1 (see check_collective)
};

// Fills a tensor with rank + 1 on every rank, runs `op` once and checks the result on every
// rank where it is defined: all_reduce -> n(n+1)/2 everywhere; broadcast from rank 0 -> 1
// everywhere; reduce to rank 0 -> n(n+1)/2 on rank 0. Throws std::runtime_error on a wrong
// value. Returns {expected, observed} of this rank (observed = expected where undefined).
std::pair<double, double> check_collective(Communicator& comm, CollectiveOp op);

// Seconds one `op` (in place on `tensor`, rooted at rank 0) takes on this rank: the device is
// synchronised before the clock starts; the clock stops once the work completed (wait(), and on
// CUDA a device synchronize).
double time_collective(Communicator& comm, CollectiveOp op, const torch::Tensor& tensor);

// Runs the check and the timings of `job` on an existing group.
CollectiveResult run_benchmark(Communicator& comm, const CollectiveJob& job);

// `measure worker collective FLAGS --rank R --world-size N --store DIR`; argv[0] is
// "collective". Returns the process exit status (0 = success; rank 0 wrote DIR/result.txt).
// Throws UsageError for bad flags; any later failure is printed ("error: rank R of N: ...")
// and returns 1.
int collective_worker_main(int argc, char** argv);

// The worker flags for `job` (launch_ranks appends --rank, --world-size, --store).
std::vector<std::string> worker_args(const CollectiveJob& job);

// Parent side: launches `ranks` processes of `exe` (the measure binary) in a fresh temporary
// store folder, waits (killing them after launch_timeout_s), returns rank 0's result.
// Throws std::runtime_error naming the failed rank.
CollectiveResult run_collective(const std::string& exe, const CollectiveJob& job, int ranks,
                                double launch_timeout_s);

// result.txt: a small line-oriented text file, written atomically by rank 0.
void write_result_file(const CollectiveResult& result, const std::string& path);
CollectiveResult read_result_file(const std::string& path);

}  // namespace trainsim::measure::collectives
