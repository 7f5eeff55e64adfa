#pragma once
// Multi-process launching on one machine: `measure` starts one child process per rank (itself,
// with a hidden worker subcommand); ranks rendezvous through a c10d FileStore in `store_dir`.
// Or the ranks are started by a launcher people already use (torchrun, Slurm's srun) on one or
// many nodes: external_rank_from_env reads which rank this process is. Torch-free.

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::measure {

// A fresh folder under the system temporary folder (for a FileStore), removed with everything in
// it when this goes out of scope. Throws std::runtime_error if it cannot be created. Its name is
// PREFIX<pid>-XXXXXX; a run that was killed (no destructor ran) leaves its folder behind, and the
// next TempDir of the same prefix removes the folders of this user whose process is gone.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Absolute path of the running executable (/proc/self/exe).
std::string self_executable();

// Runs argv[0] (searched on PATH when it has no '/') with argv[1..] and waits for it: its stdout
// and stderr pass through, or go to /dev/null when `quiet`. Returns its exit status; 127 when it
// could not be started, 128 + N when signal N ended it. Killed after `timeout_s` seconds
// (std::runtime_error).
int run_program(const std::vector<std::string>& argv, double timeout_s, bool quiet = false);

// Seconds without a heartbeat after which launch_ranks calls a rank stalled: 30, or the
// environment's TRAINSIM_STALL_S (a number > 0; the tests shorten it).
double default_stall_seconds();

// Starts `exe args... --rank R --world-size N --store STORE_DIR` for R = 0..N-1, waits for all.
// If a rank fails (non-zero exit or signal) the others are killed after `grace_s` seconds and a
// std::runtime_error names the rank, how it ended and its last step (below): the rank a signal
// ended before the others, else the first to fail (the others fail because it did). A rank that
// gives no sign of life for `stall_s` seconds (its heartbeat file not rewritten: stopped, frozen,
// or never started) is stalled: every rank is killed at once and the error names it. Child
// stderr passes through.
void launch_ranks(const std::string& exe, const std::vector<std::string>& args, int world_size,
                  const std::string& store_dir, double timeout_s = 3600, double grace_s = 10,
                  double stall_s = default_stall_seconds());

// A rank's sign of life for launch_ranks: while it exists, a thread rewrites
// STORE_DIR/progress-RANK every second with the rank's current step (set_rank_step). A rank that
// is killed or stopped stops rewriting it; launch_ranks then names the step it was at.
class RankHeartbeat {
 public:
  RankHeartbeat(const std::string& store_dir, int rank);
  ~RankHeartbeat();
  RankHeartbeat(const RankHeartbeat&) = delete;
  RankHeartbeat& operator=(const RankHeartbeat&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The heartbeat of a rank process launch_ranks started, from the flags it appended (--rank R
// --store DIR in argv); nullptr when argv has none (a rank of an external launcher).
std::unique_ptr<RankHeartbeat> heartbeat_from_args(int argc, const char* const* argv);

// What this rank is doing, for its heartbeat and its launcher's errors, e.g. "epoch 2/2, iteration
// 5/8". Thread-safe; cheap enough for every iteration.
void set_rank_step(const std::string& step);

// This process as one rank of a run an external launcher started, from its environment:
//   torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (optional), MASTER_ADDR, MASTER_PORT;
//   Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE (optional),
//     with MASTER_ADDR (default: the first host of SLURM_JOB_NODELIST) and MASTER_PORT (default
//     29500, torchrun's).
// nullopt when neither RANK nor SLURM_PROCID is set. Throws std::invalid_argument naming the
// variable when a set is incomplete or a value is malformed (a rank outside the world, a port
// outside 1..65535).
struct ExternalRank {
  std::string launcher;  // "torchrun" or "slurm"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;         // this node's GPU index
  int local_world_size = 0;   // ranks on this node; 0: not given
  std::string master_addr;    // rank 0's host: the rendezvous (c10d TCPStore) server
  int master_port = 29500;
};
std::optional<ExternalRank> external_rank_from_env();

// The first host of a Slurm node list: "gpu[01-04,07],login" -> "gpu01", "a,b" -> "a".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace trainsim::measure
