#pragma once
// The one communicator of measure: a c10d process group, as torch.distributed builds it, behind a
// small version-independent face. ProcessGroupGloo on CPU (loopback, all ranks on this machine),
// ProcessGroupNCCL on CUDA (rank r on cuda:device_index). What DDP calls is what the profile
// times: `measure train` hands process_group() to c10d::Reducer, the collective benchmark times
// all_reduce / broadcast / reduce through the same group, the host contention case uses its
// barrier.
//
// LibTorch 1.13 derives ProcessGroupGloo/NCCL from c10d::ProcessGroup; LibTorch 2.x derives them
// from c10d::Backend and a c10d::ProcessGroup dispatches to the backends registered with it
// (communicator.cpp builds that wrapper; the only 2.x-only code).

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace trainsim::measure {

// A collective or the rendezvous blocked longer than this fails (c10d's own default, 30 min).
inline constexpr std::chrono::milliseconds kCollectiveTimeout = std::chrono::minutes(30);

struct CommunicatorOptions {
  std::string backend = "gloo";  // "gloo" (CPU tensors) or "nccl" (CUDA tensors)
  int rank = 0;
  int world_size = 1;
  int device_index = 0;  // nccl: this rank's GPU, cuda:device_index
  std::chrono::milliseconds timeout = kCollectiveTimeout;
};

class Communicator {
 public:
  // Joins the group: blocks until all world_size ranks arrived through `store` (or the timeout).
  // Throws std::invalid_argument for a rank outside the world, std::runtime_error for a backend
  // this build lacks (backend_available) or a failed rendezvous.
  Communicator(c10::intrusive_ptr<c10d::Store> store, const CommunicatorOptions& options);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  const std::string& backend() const { return options_.backend; }
  // Where the tensors passed in must live: cpu (gloo) or cuda:device_index (nccl).
  torch::Device device() const;
  // The group c10d::Reducer and c10d::broadcast_coalesced take.
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const { return group_; }

  // Asynchronous, in place; the tensor must stay untouched until wait(work) returned.
  c10::intrusive_ptr<c10d::Work> all_reduce(const torch::Tensor& tensor,
                                            c10d::ReduceOp op = c10d::ReduceOp::SUM);
  c10::intrusive_ptr<c10d::Work> broadcast(const torch::Tensor& tensor, int root);
  c10::intrusive_ptr<c10d::Work> reduce(const torch::Tensor& tensor, int root);  // the sum

  // Returns once `work` completed on this rank: work->wait(), and on CUDA a device synchronize
  // (there wait() only makes the current stream wait for the collective).
  void wait(const c10::intrusive_ptr<c10d::Work>& work);
  // Waits for all work queued on device() (no-op on CPU).
  void synchronize();
  // Returns once every rank called barrier: a one-element all-reduce, waited for.
  void barrier();

 private:
  CommunicatorOptions options_;
  // Declared before the group, so destroyed after it: the group's destructor may still use it.
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
};

// Backends this build can create: "gloo" (LibTorch with c10d Gloo) and/or "nccl" (a CUDA
// LibTorch with c10d NCCL, and nccl.h found at configure time).
bool backend_available(const std::string& backend);

// A c10d::FileStore at `path` shared by `world_size` processes (or threads).
c10::intrusive_ptr<c10d::Store> make_file_store(const std::string& path, int world_size);

// A c10d::TCPStore, what torchrun's ranks rendezvous through: rank 0 serves it on `host`:`port`,
// the others connect (waiting up to `timeout` for the server); every rank checks in and the
// server returns once all `world_size` have. For ranks on many nodes.
c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, int port, int world_size, bool server,
                                               std::chrono::milliseconds timeout = kCollectiveTimeout);

}  // namespace trainsim::measure
