#include "runs/communicator.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <stdexcept>
#include <vector>

namespace trainsim::measure {
namespace {

template <typename Group>
class C10dCommunicator : public AsyncCommunicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group, int rank,
                   int world_size)
      : store_(std::move(store)), group_(std::move(group)), rank_(rank), world_size_(world_size) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  c10::intrusive_ptr<c10d::Work> all_reduce(const torch::Tensor& tensor,
                                            c10d::ReduceOp op) override {
    std::vector<at::Tensor> tensors = {tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = op;
    return group_->allreduce(tensors, options);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(const torch::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors = {tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    return group_->broadcast(tensors, options);
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;  // kept alive as long as the group
  c10::intrusive_ptr<Group> group_;
  int rank_;
  int world_size_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> make_file_store(const std::string& path, int world_size) {
  return c10::make_intrusive<c10d::FileStore>(path, world_size);
}

std::unique_ptr<AsyncCommunicator> make_async_gloo(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                   int world_size,
                                                   std::chrono::milliseconds timeout) {
  store->setTimeout(timeout);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // All ranks run on this machine: loopback needs no hostname lookup or network.
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
  return std::make_unique<C10dCommunicator<c10d::ProcessGroupGloo>>(
      std::move(store), std::move(group), rank, world_size);
}

bool nccl_available() {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}

std::unique_ptr<AsyncCommunicator> make_async_nccl(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                   int world_size) {
#ifdef USE_C10D_NCCL
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size);
  return std::make_unique<C10dCommunicator<c10d::ProcessGroupNCCL>>(
      std::move(store), std::move(group), rank, world_size);
#else
  (void)store;
  throw std::runtime_error(
      "this build of measure has no NCCL (LibTorch without USE_C10D_NCCL): "
      "ddp on cuda is not possible; rank " +
      std::to_string(rank) + " of " + std::to_string(world_size));
#endif
}

}  // namespace trainsim::measure
