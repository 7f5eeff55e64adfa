#pragma once
// `measure train --strategy dp`: what PyTorch's Python `nn.DataParallel` does each iteration, not
// LibTorch's `torch::nn::parallel::data_parallel` (whose clone() rebuilds and re-initialises the
// whole model on every device every iteration, 121-194 ms per ResNet-18 replica, and whose
// gradient reduction is one copy per parameter). PyTorch 1.13 and 2.x,
// torch/nn/parallel/data_parallel.py:
//   1. replicate: the module's parameters and buffers are broadcast, coalesced in 10 MiB buffers,
//      from device 0 to every other device (comm.broadcast_coalesced); device 0's replica is the
//      module itself, so its BatchNorm running statistics are the ones that persist;
//   2. scatter: the batch is split with chunk() along dim 0 and each chunk copied to its device
//      (a small batch gives fewer chunks, and as many replicas are used);
//   3. parallel_apply: one thread per replica runs its forward (under autocast where the caller
//      is: PyTorch passes the caller's autocast state into each thread by hand, here the
//      precision given at construction);
//   4. gather: the outputs are copied to device 0 and concatenated (the loss runs there);
//   5. backward: the replicas' gradients are summed onto device 0's parameters, coalesced
//      (Broadcast.backward = ReduceAddCoalesced), after every replica finished its backward.
// Here the replicas are built once (not every iteration: their weights are overwritten by step
// 1 anyway) and step 5 runs after loss.backward() as `reduce_gradients()`. Every operation is a
// device-agnostic LibTorch call (copies, cat, chunk), so the mechanism runs, and is tested, on
// CPU "devices" too; `measure train` itself allows dp on two or more devices only on CUDA, as
// PyTorch does.

#include <torch/torch.h>

#include <vector>

#include "format/precision.h"
#include "models/resnet.h"

namespace trainsim::measure {

class DataParallel {
 public:
  // `module` must live on devices[0] and outlive this; one replica per further device. Every
  // replica's forward runs in `precision` (measure/autocast.h) on its own thread.
  DataParallel(models::ResNet18 module, std::vector<torch::Device> devices, Precision precision = Precision::kFp32);

  // Steps 1-4 for one batch on devices[0]; the output is on devices[0].
  torch::Tensor forward(const torch::Tensor& images);

  // Step 5, after loss.backward(): every replica used by the last forward adds its gradients
  // onto the module's (which must exist: the module's own chunk was part of that forward), and
  // drops its own.
  void reduce_gradients();

  size_t devices() const { return devices_.size(); }

 private:
  // Copies `from` (tensors on devices[0]) into `to` (the same shapes on another device) in
  // flat buffers of up to 10 MiB, as PyTorch's coalesced broadcast.
  static void copy_coalesced(const std::vector<torch::Tensor>& from, const std::vector<torch::Tensor>& to);

  models::ResNet18 module_;
  std::vector<torch::Device> devices_;
  std::vector<models::ResNet18> replicas_;  // devices_[1..]
  size_t used_ = 0;                         // replicas the last forward ran (chunks - 1)
  Precision precision_;
};

}  // namespace trainsim::measure
