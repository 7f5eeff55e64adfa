// Raw NCCL on CUDA GPUs, one process per GPU (rank r drives device r). The ncclUniqueId made
// by rank 0 reaches the other ranks through the c10d FileStore in the launcher's folder.
// Collectives are enqueued on the current CUDA stream of the rank's device, so they order with
// the tensor's producers, and are timed with CUDA events on that stream (as nccl-tests does).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/backends.h"

namespace trainsim::measure::collectives {
namespace {

void check_nccl(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) {
    throw std::runtime_error(std::string("NCCL ") + what + " failed: " + ncclGetErrorString(result));
  }
}

void check_cuda(cudaError_t result, const char* what) {
  if (result != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA ") + what + " failed: " + cudaGetErrorString(result));
  }
}

ncclDataType_t nccl_type(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat32) return ncclFloat32;
  if (t.scalar_type() == torch::kFloat64) return ncclFloat64;
  throw std::invalid_argument("NCCL communicator: only float32 and float64 tensors are supported");
}

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const CommunicatorOptions& options)
      : rank_(options.rank),
        size_(options.world_size),
        device_index_(static_cast<c10::DeviceIndex>(options.device_index)),
        guard_(torch::Device(torch::kCUDA, device_index_)) {
    check_cuda(cudaSetDevice(options.device_index), "cudaSetDevice");
    const auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000.0));
    // Kept open for the communicator's lifetime: the FileStore removes its file when the last
    // rank closes it, and a rank that closed early would race the others' reads.
    store_ = c10::make_intrusive<c10d::FileStore>(options.store_dir + "/filestore",
                                                  options.world_size);
    store_->setTimeout(timeout);
    const std::string key = "trainsim_nccl_unique_id";
    ncclUniqueId id;
    if (rank_ == 0) {
      check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
      store_->set(key, std::vector<uint8_t>(bytes, bytes + sizeof id));
    } else {
      const std::vector<uint8_t> bytes = store_->get(key);  // waits for rank 0, up to timeout
      if (bytes.size() != sizeof id) throw std::runtime_error("NCCL unique id of the wrong size");
      std::memcpy(&id, bytes.data(), sizeof id);
    }
    check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }

  ~NcclCommunicator() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  torch::Device device() const override { return torch::Device(torch::kCUDA, device_index_); }

  void run(CollectiveOp op, torch::Tensor& tensor) override {
    enqueue(op, tensor);
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }

  double time_run(CollectiveOp op, torch::Tensor& tensor) override {
    at::cuda::CUDAEvent start(cudaEventDefault);  // the default flags disable timing
    at::cuda::CUDAEvent end(cudaEventDefault);
    const auto s = at::cuda::getCurrentCUDAStream(device_index_);
    start.record(s);
    enqueue(op, tensor);
    end.record(s);
    end.synchronize();
    return static_cast<double>(start.elapsed_time(end)) / 1000.0;  // ms -> s
  }

  void barrier() override {
    // A one-element all-reduce completes on a rank only after every rank enqueued it.
    torch::Tensor token = torch::ones({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device()));
    run(CollectiveOp::all_reduce, token);
  }

  double max_over_ranks(double value) override {
    torch::Tensor t = torch::full({1}, value, torch::TensorOptions().dtype(torch::kFloat64).device(device()));
    check_nccl(ncclAllReduce(t.data_ptr(), t.data_ptr(), 1, ncclFloat64, ncclMax, comm_, stream()),
               "ncclAllReduce(max)");
    return t.cpu().item<double>();
  }

 private:
  cudaStream_t stream() const { return at::cuda::getCurrentCUDAStream(device_index_).stream(); }

  void enqueue(CollectiveOp op, torch::Tensor& tensor) {
    if (!tensor.is_cuda() || tensor.get_device() != device_index_ || !tensor.is_contiguous()) {
      throw std::invalid_argument("NCCL communicator: tensor must be contiguous on cuda:" +
                                  std::to_string(device_index_));
    }
    void* data = tensor.data_ptr();
    const size_t count = static_cast<size_t>(tensor.numel());
    const ncclDataType_t type = nccl_type(tensor);
    switch (op) {
      case CollectiveOp::all_reduce:
        check_nccl(ncclAllReduce(data, data, count, type, ncclSum, comm_, stream()), "ncclAllReduce");
        return;
      case CollectiveOp::broadcast:
        check_nccl(ncclBroadcast(data, data, count, type, /*root=*/0, comm_, stream()), "ncclBroadcast");
        return;
      case CollectiveOp::reduce:
        check_nccl(ncclReduce(data, data, count, type, ncclSum, /*root=*/0, comm_, stream()), "ncclReduce");
        return;
    }
  }

  int rank_;
  int size_;
  c10::DeviceIndex device_index_;
  c10::cuda::CUDAGuard guard_;  // makes this rank's device current for LibTorch too
  c10::intrusive_ptr<c10d::Store> store_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const CommunicatorOptions& options) {
  return std::make_unique<NcclCommunicator>(options);
}

}  // namespace trainsim::measure::collectives
