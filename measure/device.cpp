#include "device.h"

#include <malloc.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "stats.h"
#include "usage_error.h"

#ifdef TRAINSIM_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif
#ifdef TRAINSIM_HAVE_NCCL
#include <nccl.h>
#endif

namespace trainsim::measure {
namespace {

std::string read_status_field(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, key.size(), key) == 0) return line.substr(key.size());
  }
  return "";
}

#ifdef TRAINSIM_HAVE_CUDA
// CUDA encodes versions as 1000 * major + 10 * minor: 13000 -> "13.0".
std::string cuda_version_string(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}
#endif

}  // namespace

torch::Device Device::torch_device() const {
  if (kind == DeviceKind::cuda) return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  return torch::Device(torch::kCPU);
}

std::string Device::kind_name() const { return kind == DeviceKind::cuda ? "cuda" : "cpu"; }

bool cuda_built() {
#ifdef TRAINSIM_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
  if (!cuda_built()) return 0;
  return static_cast<int>(torch::cuda::device_count());
}

Device resolve_device(const std::string& requested) {
  Device device;
  if (requested.empty()) {
    device.kind = cuda_device_count() > 0 ? DeviceKind::cuda : DeviceKind::cpu;
  } else if (requested == "cpu") {
    device.kind = DeviceKind::cpu;
  } else if (requested == "cuda") {
    if (!cuda_built()) {
      throw UsageError("--device cuda: this measure was built against a LibTorch without CUDA");
    }
    if (cuda_device_count() == 0) throw UsageError("--device cuda: no CUDA device is visible");
    device.kind = DeviceKind::cuda;
  } else {
    throw UsageError("--device: '" + requested + "' is not one of cpu, cuda");
  }
  return device;
}

void synchronize(const Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index);
}

namespace {

HostAndDevice time_host_and_device_once(const Device& device, const std::function<void()>& fn) {
#ifdef TRAINSIM_HAVE_CUDA
  if (device.is_cuda()) {
    // cudaEventDefault: CUDAEvent's default flags disable timing.
    at::cuda::CUDAEvent start(cudaEventDefault);
    at::cuda::CUDAEvent end(cudaEventDefault);
    const auto stream = at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device.index));
    start.record(stream);
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    end.record(stream);
    end.synchronize();
    return {static_cast<double>(start.elapsed_time(end)) / 1000.0,  // ms -> s
            std::chrono::duration<double>(t1 - t0).count()};
  }
#endif
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  const auto t1 = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(t1 - t0).count();
  return {s, s};
}

}  // namespace

double time_once(const Device& device, const std::function<void()>& fn) {
  return time_host_and_device_once(device, fn).device_s;
}

HostAndDevice median_host_and_device_seconds(const Device& device, const Repetition& rep,
                                             const std::function<void()>& setup,
                                             const std::function<void()>& timed) {
  const auto prepare = [&] {
    if (setup) setup();
    synchronize(device);
  };
  for (int i = 0; i < rep.warmup; ++i) {
    prepare();
    timed();
  }
  std::vector<double> device_times, host_times;
  for (int i = 0; i < std::max(rep.repeats, 1); ++i) {
    prepare();
    const HostAndDevice t = time_host_and_device_once(device, timed);
    device_times.push_back(t.device_s);
    host_times.push_back(t.host_s);
  }
  return {median(device_times), median(host_times)};
}

double median_seconds(const Device& device, const Repetition& rep,
                      const std::function<void()>& setup, const std::function<void()>& timed) {
  return median_host_and_device_seconds(device, rep, setup, timed).device_s;
}

void ensure_gradients(const std::vector<torch::Tensor>& parameters) {
  for (torch::Tensor p : parameters) {  // a handle: the gradient set is the parameter's
    if (!p.grad().defined()) p.mutable_grad() = torch::randn_like(p);
  }
}

void reset_peak_memory(const Device& device) {
#ifdef TRAINSIM_HAVE_CUDA
  if (device.is_cuda()) {
    synchronize(device);
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device.index));
    return;
  }
#endif
  malloc_trim(0);  // freed heap back to the system, so the reset starts from live memory
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";  // resets VmHWM to the current RSS (Linux >= 4.0)
  clear.flush();
  if (!clear) throw std::runtime_error("cannot reset the peak RSS through /proc/self/clear_refs");
}

double peak_memory_bytes(const Device& device) {
#ifdef TRAINSIM_HAVE_CUDA
  if (device.is_cuda()) {
    synchronize(device);
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device.index));
    // allocated_bytes[0]: StatType::AGGREGATE (both pools); the index is the same in 1.x and 2.x.
    return static_cast<double>(stats.allocated_bytes[0].peak);
  }
#endif
  // "VmHWM:\t  123456 kB"
  std::istringstream in(read_status_field("VmHWM:"));
  double kib = 0;
  if (!(in >> kib)) throw std::runtime_error("cannot read VmHWM from /proc/self/status");
  return kib * 1024.0;
}

std::string memory_method(const Device& device) {
  return device.is_cuda() ? "cuda-allocator-peak" : "process-rss";
}

void release_cached_memory(const Device& device) {
#ifdef TRAINSIM_HAVE_CUDA
  if (device.is_cuda()) {
    synchronize(device);
    c10::cuda::CUDACachingAllocator::emptyCache();
    return;
  }
#endif
  malloc_trim(0);
}

bool is_out_of_memory(const std::exception& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr) return true;
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) return true;
  if (dynamic_cast<const c10::Error*>(&error) != nullptr) {
    const std::string what = error.what();
    return what.find("out of memory") != std::string::npos ||
           what.find("can't allocate memory") != std::string::npos;
  }
  return false;
}

std::string libtorch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

void fill_device_info(MachineInfo& machine, const Device& device, int collective_devices) {
  machine.device_kind = device.kind_name();
  machine.device_count = collective_devices;
  machine.libtorch = libtorch_version();
  machine.driver.clear();
  machine.cuda.clear();
  machine.nccl.clear();
#ifdef TRAINSIM_HAVE_CUDA
  if (device.is_cuda()) {
    const cudaDeviceProp* props = at::cuda::getDeviceProperties(device.index);
    machine.device_name = props->name;
    machine.device_memory_bytes = static_cast<double>(props->totalGlobalMem);
    int driver = 0;
    int runtime = 0;
    if (cudaDriverGetVersion(&driver) == cudaSuccess) machine.driver = cuda_version_string(driver);
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) machine.cuda = cuda_version_string(runtime);
#ifdef TRAINSIM_HAVE_NCCL
    int nccl = 0;
    if (ncclGetVersion(&nccl) == ncclSuccess) {
      // NCCL >= 2.9 encodes 10000 * major + 100 * minor + patch; older 1000 * major + 100 * minor
      // + patch (always < 10000).
      const bool wide = nccl >= 10000;
      const int major = wide ? nccl / 10000 : nccl / 1000;
      const int minor = wide ? (nccl % 10000) / 100 : (nccl % 1000) / 100;
      const int patch = nccl % 100;
      machine.nccl = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    }
#endif
    return;
  }
#endif
  machine.device_name = machine.cpu;
  machine.device_memory_bytes = machine.host_memory_bytes;
}

}  // namespace trainsim::measure
