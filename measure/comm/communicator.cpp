#include "comm/communicator.h"

#include <torch/version.h>

#include <stdexcept>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#ifdef TRAINSIM_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef TRAINSIM_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif
// NCCL: LibTorch's CUDA builds define USE_C10D_NCCL; ProcessGroupNCCL.hpp needs nccl.h, which
// measure/CMakeLists.txt found when it sets TRAINSIM_HAVE_NCCL.
#if defined(USE_C10D_NCCL) && defined(TRAINSIM_HAVE_NCCL)
#define TRAINSIM_C10D_NCCL 1
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace trainsim::measure {
namespace {

// The process group torch.distributed would hand DDP for `backend`.
template <typename Backend>
c10::intrusive_ptr<c10d::ProcessGroup> as_process_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                         const CommunicatorOptions& options,
                                                         c10::intrusive_ptr<Backend> backend) {
#if TORCH_VERSION_MAJOR >= 2
  // LibTorch 2.x only: the backend is a c10d::Backend; wrap it in a c10d::ProcessGroup for its
  // device type, as torch.distributed's _new_process_group_helper does (_register_backend,
  // _set_default_backend), so that Reducer and broadcast_coalesced dispatch to it.
  const bool nccl = options.backend == "nccl";
  const auto type = nccl ? c10d::ProcessGroup::BackendType::NCCL : c10d::ProcessGroup::BackendType::GLOO;
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, options.rank, options.world_size);
  group->setBackend(nccl ? c10::DeviceType::CUDA : c10::DeviceType::CPU, type,
                    c10::intrusive_ptr<c10d::Backend>(std::move(backend)));
  group->setDefaultBackend(type);
  return group;
#else
  (void)store;
  (void)options;
  return backend;  // LibTorch 1.x: the backends are process groups themselves
#endif
}

c10::intrusive_ptr<c10d::ProcessGroup> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                  const CommunicatorOptions& options) {
#ifdef TRAINSIM_HAVE_GLOO
  if (options.backend == "gloo") {
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
    // All ranks run on this machine: loopback needs no hostname lookup or network (the hostname
    // may resolve to an unreachable address inside containers).
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    return as_process_group(store, options,
                            c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank,
                                                                        options.world_size, gloo_options));
  }
#endif
#ifdef TRAINSIM_C10D_NCCL
  if (options.backend == "nccl") {
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = options.timeout;
    return as_process_group(store, options,
                            c10::make_intrusive<c10d::ProcessGroupNCCL>(store, options.rank,
                                                                        options.world_size, nccl_options));
  }
#endif
  throw std::runtime_error("collective backend '" + options.backend +
                           "' is not available in this build of measure (rank " +
                           std::to_string(options.rank) + " of " + std::to_string(options.world_size) + ")");
}

}  // namespace

bool backend_available(const std::string& backend) {
#ifdef TRAINSIM_HAVE_GLOO
  if (backend == "gloo") return true;
#endif
#ifdef TRAINSIM_C10D_NCCL
  if (backend == "nccl") return true;
#endif
  return false;
}

c10::intrusive_ptr<c10d::Store> make_file_store(const std::string& path, int world_size) {
  return c10::make_intrusive<c10d::FileStore>(path, world_size);
}

c10::intrusive_ptr<c10d::Store> make_tcp_store(const std::string& host, int port, int world_size, bool server,
                                               std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = server;
  options.numWorkers = static_cast<std::size_t>(world_size);
  options.waitWorkers = true;  // every rank checks in; the server waits for all of them
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, options);
}

Communicator::Communicator(c10::intrusive_ptr<c10d::Store> store, const CommunicatorOptions& options)
    : options_(options), store_(std::move(store)) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    throw std::invalid_argument("Communicator: rank " + std::to_string(options.rank) +
                                " outside a world of " + std::to_string(options.world_size));
  }
  store_->setTimeout(options.timeout);
#ifdef TRAINSIM_HAVE_CUDA
  // This rank's GPU becomes the current device, as torch.cuda.set_device(local_rank) in a PyTorch
  // script: allocations and streams that name no device land on it, not on cuda:0.
  if (options.backend == "nccl") c10::cuda::set_device(static_cast<c10::DeviceIndex>(options.device_index));
#endif
  group_ = make_group(store_, options_);
}

torch::Device Communicator::device() const {
  if (options_.backend == "nccl") return {torch::kCUDA, static_cast<c10::DeviceIndex>(options_.device_index)};
  return torch::Device(torch::kCPU);
}

c10::intrusive_ptr<c10d::Work> Communicator::all_reduce(const torch::Tensor& tensor, c10d::ReduceOp op) {
  std::vector<at::Tensor> tensors = {tensor};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  return group_->allreduce(tensors, opts);
}

c10::intrusive_ptr<c10d::Work> Communicator::broadcast(const torch::Tensor& tensor, int root) {
  std::vector<at::Tensor> tensors = {tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  return group_->broadcast(tensors, opts);
}

c10::intrusive_ptr<c10d::Work> Communicator::reduce(const torch::Tensor& tensor, int root) {
  std::vector<at::Tensor> tensors = {tensor};
  c10d::ReduceOptions opts;
  opts.rootRank = root;
  opts.reduceOp = c10d::ReduceOp::SUM;
  return group_->reduce(tensors, opts);
}

void Communicator::wait(const c10::intrusive_ptr<c10d::Work>& work) {
  work->wait();
  synchronize();
}

void Communicator::synchronize() {
  if (options_.backend == "nccl") torch::cuda::synchronize(static_cast<int64_t>(options_.device_index));
}

void Communicator::barrier() {
  const auto token = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device()));
  wait(all_reduce(token));
}

}  // namespace trainsim::measure
