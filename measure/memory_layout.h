#pragma once
// A model and its inputs in a MemoryFormat, as Python's `model.to(memory_format=...)` and
// `x.contiguous(memory_format=...)` lay them out: under channels_last every 4-D parameter is
// restrided N, H, W, C (its values unchanged) and each 4-D input batch is made so before the
// forward; convolutions then produce channels-last activations, and gradients follow their
// parameters' layout. nchw changes nothing. Header-only so that both the trainers (measure/runs)
// and the profiler use it.

#include <torch/torch.h>

#include "format/memory_format.h"

namespace trainsim::measure {

inline void to_memory_format(torch::nn::Module& module, MemoryFormat format) {
  if (format == MemoryFormat::kNchw) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  for (torch::Tensor& b : module.buffers()) {
    if (b.dim() == 4) b.set_data(b.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

inline torch::Tensor in_memory_format(const torch::Tensor& batch, MemoryFormat format) {
  if (format == MemoryFormat::kNchw || batch.dim() != 4) return batch;
  return batch.contiguous(at::MemoryFormat::ChannelsLast);
}

}  // namespace trainsim::measure
