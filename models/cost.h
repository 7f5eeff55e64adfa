#pragma once
// Torch-free per-op cost of a training step at a batch size: FLOPs and DRAM bytes of every
// kernel-level op of every layer, forward and backward, fp32, priced from the ops the description
// (models/describe.h) builds, so the architecture exists once.
//
// N = batch; E = elements of a tensor at batch N; Ein, Eout = an op's input and output; W = its
// weight elements, P = all its parameter elements; bytes are 4 per element except int64 (8).
// Every tensor is assumed read or written once per kernel (no cache reuse across kernels, no
// re-reads inside one); FLOPs count a multiply-add as 2.
//   conv fwd         2*N*Cout*Hout*Wout*Cin*k*k FLOPs; bytes 4*(Ein + W + Eout)
//   conv dgrad       same FLOPs; read dy and W, write dx: 4*(Eout + W + Ein); none for the first
//                    conv (its input, the data batch, does not require grad)
//   conv wgrad       same FLOPs; read x and dy, write dW: 4*(Ein + Eout + W)
//   BatchNorm fwd    2 FLOPs/element (as describe_model: statistics not counted); read x twice
//                    (statistics, normalise), write y, read scale and shift: 4*(3*E + 2C)
//   BatchNorm bwd    9 FLOPs/element (PyTorch's two kernels: the reduction sums dy and
//                    dy*(x-mean), 4; dx = (dy - mean_dy - (x-mean)*k1)*k2, 5); read dy and x for
//                    the reductions, read them again and write dx, write the 2C parameter
//                    gradients: 4*(5*E + 2C)
//   ReLU fwd         1 FLOP/element; read x, write y: 4*2*E
//   ReLU bwd         1 FLOP/element; read dy and the saved output (the mask), write dx: 4*3*E
//   residual add     fwd 1 FLOP/element, read 2, write 1: 4*3*E; bwd: no kernel (the same dy goes
//                    to both operands)
//   gradient sum     a tensor read by k > 1 ops gets k gradients, summed by autograd with k - 1
//                    add kernels of its size, (k-1)*E FLOPs, 4*3*(k-1)*E bytes; one op
//                    "<first reader>.grad_sum" in the layer of the first reader, after its backward
//                    (ResNet: a block's input, read by conv1 and by the shortcut or the add)
//   max-pool fwd     k*k compares per output; read x, write y and the int64 argmax: 4*Ein + 12*Eout
//   max-pool bwd     1 FLOP per output (the scatter-add); read dy and the argmax, write dx:
//                    12*Eout + 4*Ein
//   avg-pool         fwd 1 FLOP per input element, read x, write y: 4*(Ein + Eout); bwd 1 FLOP per
//                    input element (dy / area), read dy, write dx: 4*(Eout + Ein)
//   linear fwd       N*(2*in*out + out) FLOPs (with the bias add); bytes 4*(Ein + P + Eout)
//   linear dgrad     2*N*in*out FLOPs; read dy and W, write dx: 4*(Eout + W + Ein)
//   linear wgrad     2*N*in*out + N*out FLOPs (bias gradient: sum of dy over the batch); read x and
//                    dy, write dW and db: 4*(Ein + Eout + P)
//   saved_bytes      each tensor autograd saves, once, in the layer of the first op saving it:
//                    conv and linear their input, BatchNorm its input and fp32 mean and invstd
//                    (2C), ReLU its output, max-pool its input and the argmax, avg-pool its input
//                    (the add nothing). A ReLU output read by the next conv counts once.
//   parallel_tiles   conv/linear as an (implicit) GEMM with 128x128 output tiles per CTA:
//                    ceil(M/128)*ceil(Nn/128); conv fwd M = N*Hout*Wout, Nn = Cout, dgrad
//                    M = N*Hin*Win, Nn = Cin, wgrad M = Cout, Nn = Cin*k*k; linear fwd M = N,
//                    Nn = out, dgrad M = N, Nn = in, wgrad M = out, Nn = in. All other ops
//                    ceil(E/1024) over the largest tensor they touch (256 threads x 4 elements)
//   reduction_splits conv/linear: the parts the GEMM's reduction of depth K may be split into
//                    when its output tiles do not fill the GPU (split-K, as cuBLAS and cuDNN do,
//                    e.g. for wgrad, whose output is small and whose K = N*Hout*Wout is long):
//                    max(1, floor(K/128)), one 128-deep slice each; conv fwd K = Cin*k*k, dgrad
//                    K = Cout*k*k, wgrad K = N*Hout*Wout; linear fwd K = in, dgrad K = out,
//                    wgrad K = N. 1 for every other op
// Step ops (step_cost):
//   loss fwd         log-softmax over C = num_classes: 5 FLOPs per logit (max, subtract, exp, sum,
//                    subtract the log-sum) + the log per row, NLL 1 per row: N*(5C + 2); read the
//                    logits, write the log-probabilities, read the int64 targets and N of the
//                    log-probabilities, write the scalar: 8*N*C + 12*N + 4
//   loss bwd         NLL: read the targets, write the one-hot gradient (N FLOPs); log-softmax:
//                    dx = dy - exp(y)*sum(dy), 4 FLOPs per logit, read dy and y, write dx:
//                    N*(4C + 1) FLOPs, 16*N*C + 8*N bytes
//   optimizer        SGD with momentum and weight decay as one fused pass per parameter
//                    (d = g + wd*p; buf = m*buf + d; p -= lr*buf): 6 FLOPs; read p, g, buf, write
//                    p, buf: 5*4*P for P parameters. PyTorch's foreach and LibTorch's per-tensor
//                    loops run several kernels and move more; this is the floor.
//   zero_grad        writes zeros to every gradient: 4*P bytes, no FLOPs. PyTorch >= 2.0 defaults
//                    to set_to_none=True, which writes nothing; the simulator uses measured times.
//   input_bytes      the fp32 image batch copied host-to-device: N * input_bytes_per_sample (the
//                    int64 targets, 8 bytes per sample, are a separate, latency-bound copy)

#include <cstdint>
#include <string>
#include <vector>

#include "models/describe.h"

namespace trainsim::models {

// One kernel-level op of a layer at a batch size, fp32.
struct OpCost {
  std::string name;           // "layer2.0.conv1", "layer2.0.conv1.dgrad", "layer2.0.bn1", ...
  OpKind kind = OpKind::kConv;
  double flops = 0;           // FLOPs (multiply-add = 2)
  double bytes = 0;           // DRAM bytes read + written by this op's kernel(s)
  double parallel_tiles = 0;  // independent output tiles a GPU spreads over its SMs (see above)
  double reduction_splits = 1;  // split-K parts the tiles may each be cut into (see above)
};

struct LayerCost {
  std::string layer;             // the LayerProfile name
  std::vector<OpCost> forward;   // in execution order
  std::vector<OpCost> backward;  // in execution order (reverse: "<conv>.dgrad", "<conv>.wgrad")
  double saved_bytes = 0;        // activations autograd keeps from forward for backward

  double forward_flops() const;
  double backward_flops() const;
  double forward_bytes() const;
  double backward_bytes() const;
};

// Every layer of describe_model(model_name) in forward order, at `batch` samples.
// Throws std::invalid_argument for an unknown model or batch < 1.
std::vector<LayerCost> layer_costs(const std::string& model_name, int64_t batch);

// Whole-step extras at `batch`: the loss (forward, backward), the SGD step, zero_grad, the
// host-to-device bytes of the input batch and the parameters' fp32 bytes.
struct StepCost {
  OpCost loss_forward;
  OpCost loss_backward;
  OpCost optimizer;
  OpCost zero_grad;
  double input_bytes = 0;
  double param_bytes = 0;
};

// Throws std::invalid_argument for an unknown model or batch < 1.
StepCost step_cost(const std::string& model_name, int64_t batch);

}  // namespace trainsim::models
