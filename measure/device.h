#pragma once
// The device measure runs on (CPU or one CUDA GPU): timing, synchronisation, peak memory,
// out-of-memory detection and the device fields of the machine block. CUDA code is compiled
// only when LibTorch has CUDA (TRAINSIM_HAVE_CUDA, set by measure/CMakeLists.txt).

#include <torch/torch.h>

#include <exception>
#include <functional>
#include <string>

#include "format/profile.h"

namespace trainsim::measure {

enum class DeviceKind { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;  // CUDA device ordinal; 0 on CPU
  // The numeric mode the profiled training steps run in (measure --precision; autocast.h).
  Precision precision = Precision::kFp32;
  // The layout of their 4-D tensors (measure --memory-format; memory_layout.h).
  MemoryFormat memory_format = MemoryFormat::kNchw;

  torch::Device torch_device() const;
  std::string kind_name() const;  // "cpu" or "cuda"
  bool is_cuda() const { return kind == DeviceKind::cuda; }
};

// True when this build can drive CUDA devices (LibTorch with CUDA).
bool cuda_built();
// Visible CUDA devices; 0 without CUDA support or without devices.
int cuda_device_count();

// --device: "" -> cuda when a GPU is visible, else cpu; "cpu"; "cuda" (UsageError without GPU).
Device resolve_device(const std::string& requested);

// Waits for all queued work on the device (no-op on CPU).
void synchronize(const Device& device);

// Seconds that `fn` takes. GPU: CUDA events recorded before and after fn on the current
// stream, then the end event is waited for, so the result is device time of the queued work.
// CPU: steady clock around fn.
double time_once(const Device& device, const std::function<void()>& fn);

struct Repetition {
  int warmup = 1;   // untimed runs first (caches, allocator, lazy initialisation)
  int repeats = 3;  // timed runs; the median is reported
};

// Median over `rep.repeats` timed runs of `timed`, after `rep.warmup` untimed runs. `setup`
// (untimed; may be empty) runs before every run, timed or not, and the device is synchronised
// after it so its work does not leak into the timing.
double median_seconds(const Device& device, const Repetition& rep,
                      const std::function<void()>& setup, const std::function<void()>& timed);

// The same runs timed twice: `device_s` as median_seconds does (CUDA events on GPU), and
// `host_s`, the steady-clock time from the call to its return without synchronising: the host's
// time to issue the work (on CPU, where the host runs it, the two are one time).
struct HostAndDevice {
  double device_s = 0;
  double host_s = 0;
};
HostAndDevice median_host_and_device_seconds(const Device& device, const Repetition& rep,
                                             const std::function<void()>& setup,
                                             const std::function<void()>& timed);

// Gives every parameter a gradient (random, as after a backward) where it has none, so that
// zero_grad and the optimizer step are timed doing their real work whatever zero_grad's
// set_to_none default is in this LibTorch version.
void ensure_gradients(const std::vector<torch::Tensor>& parameters);

// Peak memory. GPU: the caching allocator's peak of allocated bytes since the reset.
// CPU: the process's peak resident set (VmHWM), reset by writing "5" to /proc/self/clear_refs
// after returning free heap to the system.
void reset_peak_memory(const Device& device);
double peak_memory_bytes(const Device& device);
std::string memory_method(const Device& device);  // "cuda-allocator-peak" or "process-rss"
// Returns cached blocks to the driver after an OOM so the next case starts clean (GPU only).
void release_cached_memory(const Device& device);

// An out-of-memory error from LibTorch: c10::OutOfMemoryError, a CUDA "out of memory" c10::Error,
// the CPU allocator's "can't allocate memory", or std::bad_alloc.
bool is_out_of_memory(const std::exception& error);

// "1.13.0": the LibTorch headers measure was compiled against.
std::string libtorch_version();

// Fills device_kind, device_name, device_count (= collective_devices), device_memory_bytes,
// driver, cuda, nccl, libtorch. On CPU: device_name = the CPU model, memory = host memory,
// driver/cuda/nccl empty.
void fill_device_info(MachineInfo& machine, const Device& device, int collective_devices);

}  // namespace trainsim::measure
