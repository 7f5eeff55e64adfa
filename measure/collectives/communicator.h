#pragma once
// One rank's view of a group of processes running collectives: Gloo through LibTorch's c10d on
// CPU, raw NCCL on CUDA GPUs. Ranks rendezvous through a c10d FileStore in a shared folder.
// A backend is compiled only when this LibTorch has it (TRAINSIM_HAVE_GLOO / TRAINSIM_HAVE_NCCL).

#include <torch/torch.h>

#include <memory>
#include <string>

#include "collectives/collective_op.h"

namespace trainsim::measure::collectives {

struct CommunicatorOptions {
  std::string backend;     // "gloo" or "nccl"
  int rank = 0;
  int world_size = 1;
  std::string store_dir;   // FileStore folder shared by the ranks (from launch_ranks)
  int device_index = 0;    // CUDA device of this rank (nccl)
  double timeout_s = 300;  // a collective or the rendezvous blocked longer than this fails
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual torch::Device device() const = 0;  // where the tensors passed in must live

  // One collective, in place on `tensor` (contiguous float32 or float64 on device()), rooted at
  // rank 0 for broadcast and reduce (reduce: the sum). Returns once it completed on this rank.
  virtual void run(CollectiveOp op, torch::Tensor& tensor) = 0;
  // Seconds one `run` takes on this rank: CUDA events around it on the communication stream on
  // a GPU, the steady clock around the blocking call on CPU.
  virtual double time_run(CollectiveOp op, torch::Tensor& tensor) = 0;
  // Returns once every rank called barrier (and its earlier collectives completed).
  virtual void barrier() = 0;
  // The maximum of `value` over all ranks (a collective: every rank must call it).
  virtual double max_over_ranks(double value) = 0;
};

// Backends this build can run: "gloo" and/or "nccl".
bool backend_available(const std::string& backend);

// Joins the group (blocks until all world_size ranks arrived or timeout_s passed).
// Throws std::runtime_error for a backend this build lacks or a failed rendezvous.
std::unique_ptr<Communicator> make_communicator(const CommunicatorOptions& options);

}  // namespace trainsim::measure::collectives
