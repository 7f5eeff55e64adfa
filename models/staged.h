#pragma once
// A LibTorch model the profiler can run stage by stage: its stages are the layers of its
// description (models/describe.h), in forward order, with the same names. measure's compute
// profile, DDP loop and baseline training take any model through this interface (make_model).

#include <torch/torch.h>

#include <cstddef>
#include <memory>
#include <string>

namespace trainsim::models {

class StagedModel {
 public:
  virtual ~StagedModel() = default;
  virtual size_t num_stages() const = 0;
  virtual const std::string& stage_name(size_t i) const = 0;
  // forward_stage(0 .. n-1) chained is forward().
  virtual torch::Tensor forward_stage(size_t i, torch::Tensor x) = 0;
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // The module itself: parameters, buffers, to(), train()/eval(), DDP.
  virtual torch::nn::Module& module() = 0;
};

// A freshly initialised model (from the current torch::manual_seed) of a name describe_model
// knows, with `num_classes` outputs. Throws std::invalid_argument for an unknown name.
std::shared_ptr<StagedModel> make_model(const std::string& name, int64_t num_classes = 10);

}  // namespace trainsim::models
