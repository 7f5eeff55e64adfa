#pragma once
// Stand-in for LibTorch's torch/csrc/distributed/autograd/context/context.h, which Debian's
// libtorch-dev (1.13) does not ship although c10d/reducer.hpp includes it. measure/runs/
// CMakeLists.txt puts this folder on the include path ONLY when the real header is missing (the
// PyTorch wheels have it).
//
// reducer.hpp needs exactly two names from it: DistAutogradContext::GradCallback (a static_assert
// that it is std::function<bool(at::Tensor&)>) and ContextPtr (a std::shared_ptr member of the
// reducer's RpcContext, and the element type of a std::atomic pointer). Neither's layout depends
// on the class definition, so c10d::Reducer compiled against this stand-in has the layout of the
// one inside libtorch. measure never uses distributed autograd (RPC); nothing else is declared.

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
