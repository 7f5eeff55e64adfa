// Gloo through LibTorch's c10d::ProcessGroupGloo over loopback TCP (one process per rank on one
// machine). The API used here is the same in LibTorch 1.13 and 2.x.
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <stdexcept>
#include <vector>

#include "collectives/backends.h"

namespace trainsim::measure::collectives {
namespace {

class GlooCommunicator final : public Communicator {
 public:
  explicit GlooCommunicator(const CommunicatorOptions& options)
      : rank_(options.rank), size_(options.world_size) {
    const auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0));
    store_ = c10::make_intrusive<c10d::FileStore>(options.store_dir + "/filestore",
                                                  options.world_size);
    store_->setTimeout(timeout);
    auto pg_options = c10d::ProcessGroupGloo::Options::create(timeout);
    // All ranks run on this machine: bind to loopback rather than whatever the hostname
    // resolves to (which may be unreachable inside containers).
    pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank_, size_, pg_options);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  torch::Device device() const override { return torch::Device(torch::kCPU); }

  void run(CollectiveOp op, torch::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    c10::intrusive_ptr<c10d::Work> work;
    switch (op) {
      case CollectiveOp::all_reduce:
        work = group_->allreduce(tensors);
        break;
      case CollectiveOp::broadcast: {
        c10d::BroadcastOptions opts;
        opts.rootRank = 0;
        work = group_->broadcast(tensors, opts);
        break;
      }
      case CollectiveOp::reduce: {
        c10d::ReduceOptions opts;
        opts.rootRank = 0;
        work = group_->reduce(tensors, opts);
        break;
      }
    }
    work->wait();
  }

  double time_run(CollectiveOp op, torch::Tensor& tensor) override {
    const auto t0 = std::chrono::steady_clock::now();
    run(op, tensor);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void barrier() override { group_->barrier()->wait(); }

  double max_over_ranks(double value) override {
    std::vector<at::Tensor> tensors{torch::full({1}, value, torch::kFloat64)};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::MAX;
    group_->allreduce(tensors, opts)->wait();
    return tensors[0].item<double>();
  }

 private:
  int rank_;
  int size_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const CommunicatorOptions& options) {
  return std::make_unique<GlooCommunicator>(options);
}

}  // namespace trainsim::measure::collectives
