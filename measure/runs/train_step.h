#pragma once
// One training iteration as `measure train` runs it, and as `measure` profiles it
// (ddp_iteration_s): the same code for both, so what is profiled is exactly what runs.
//   zero_grad; DDP's pre-forward (prepare_for_forward, the one-time bucket rebuild, buffer
//   broadcast from rank 0); forward; cross-entropy; DDP's post-forward (prepare_for_backward);
//   backward (c10d::Reducer all-reduces the buckets from its autograd hooks and writes the
//   averaged gradients back); SGD step; the loss sum and the correct count added up on the
//   device (no host synchronisation).
// Without DDP (dp, or one process) the DDP calls are left out; with DataParallel over two or more
// devices the replicas' gradients are summed onto the module's after backward. In bf16-amp the
// forward and the loss run under autocast (measure/autocast.h), the rest as in fp32.

#include <torch/torch.h>

#include <functional>

#include "format/precision.h"
#include "runs/data_parallel.h"
#include "runs/ddp.h"

namespace trainsim::measure {

class TrainStep {
 public:
  // The model's forward (the plain module call, or DataParallel's).
  using Forward = std::function<torch::Tensor(const torch::Tensor& images)>;

  // `optimizer`, `ddp` and `dp` (either may be null) must outlive this. Statistics live on `device`.
  TrainStep(Forward forward, torch::optim::SGD& optimizer, DistributedDataParallel* ddp,
            const torch::Device& device, DataParallel* dp = nullptr, Precision precision = Precision::kFp32);

  // One iteration on a batch already on the device; returns the batch's mean loss (detached).
  torch::Tensor run(const torch::Tensor& images, const torch::Tensor& labels);

  // Sums since the last reset, on the device: loss x batch size (float64) and correct argmax
  // predictions (int64).
  const torch::Tensor& loss_sum() const { return loss_sum_; }
  const torch::Tensor& correct() const { return correct_; }
  void reset_statistics();

 private:
  Forward forward_;
  torch::optim::SGD& optimizer_;
  DistributedDataParallel* ddp_;
  torch::Device device_;
  DataParallel* dp_;
  Precision precision_;
  torch::Tensor loss_sum_;
  torch::Tensor correct_;
};

}  // namespace trainsim::measure
