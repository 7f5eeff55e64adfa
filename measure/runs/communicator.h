#pragma once
// Asynchronous collectives for DDP (measure/collectives has blocking, timed ones for the
// profile). A thin, version-independent face over a c10d process group (Gloo on CPU, NCCL on CUDA):
// LibTorch 1.13 derives them from c10d::ProcessGroup, 2.x from c10d::Backend; both have the same
// allreduce/broadcast calls, which is all DDP needs.

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace trainsim::measure {

class AsyncCommunicator {
 public:
  virtual ~AsyncCommunicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Asynchronous in place; the tensor must stay untouched until the work's wait() returns.
  virtual c10::intrusive_ptr<c10d::Work> all_reduce(const torch::Tensor& tensor,
                                                    c10d::ReduceOp op = c10d::ReduceOp::SUM) = 0;
  virtual c10::intrusive_ptr<c10d::Work> broadcast(const torch::Tensor& tensor, int root) = 0;
};

// A collective or the rendezvous blocked longer than this fails (c10d's own default, 30 min).
inline constexpr std::chrono::milliseconds kCollectiveTimeout = std::chrono::minutes(30);

// Gloo over the loopback interface (all ranks on this machine), rendezvous through `store`.
std::unique_ptr<AsyncCommunicator> make_async_gloo(
    c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
    std::chrono::milliseconds timeout = kCollectiveTimeout);
// NCCL on the current CUDA device. Throws std::runtime_error in builds without c10d NCCL.
std::unique_ptr<AsyncCommunicator> make_async_nccl(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                   int world_size);
// A c10d::FileStore at `path` shared by `world_size` processes.
c10::intrusive_ptr<c10d::Store> make_file_store(const std::string& path, int world_size);

// True when this build can create NCCL communicators.
bool nccl_available();

}  // namespace trainsim::measure
