#pragma once
// The profile: the contract between `measure` (writes it) and `simulate` (reads it).
// Plain structs only; parsing, validation and writing live in profile_io.h.
// The on-disk format (YAML, schema_version 1) is documented in docs/PROFILE.md.
// Units everywhere: seconds, bytes, samples.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "format/memory_format.h"
#include "format/precision.h"

namespace trainsim {

inline constexpr int kProfileSchemaVersion = 1;

// Where and with what the profile was measured.
struct MachineInfo {
  std::string name;               // directory name under reports/, e.g. "debian12-cpu-2core"
  std::string host;               // hostname
  std::string cpu;                // CPU model string
  int cpu_cores = 0;              // logical cores visible to measure
  double host_memory_bytes = 0;   // physical memory
  std::string device_kind;        // "cpu" or "cuda"
  std::string device_name;        // e.g. "NVIDIA H200" or the CPU model
  int device_count = 0;           // devices used for collectives (ranks on CPU)
  double device_memory_bytes = 0; // capacity used for the OOM boundary (host RAM on CPU)
  std::string driver;             // CUDA driver version, "" on CPU
  std::string cuda;               // CUDA runtime version, "" on CPU
  std::string nccl;               // NCCL version, "" when not used
  std::string libtorch;           // LibTorch version measured with
  std::string date;               // ISO 8601 UTC time the measurement started
  int threads = 0;                // intra-op threads used for compute timings
  // One minor page fault's cost on this host (touching fresh anonymous pages; seconds per fault
  // the kernel counted); 0: not measured.
  double page_fault_s = 0;
};

// How the measurement was taken (for humans and for --resume).
// A later `measure --resume` run that added cases to a profile: its command line, when it ended,
// and the calibration probe timed then. The profile's `calibration` stays the first run's (the
// reference its cases were measured at); this probe says how fast the machine was for the added
// cases.
struct ResumedRun {
  std::string command;
  std::string date;      // ISO 8601 UTC, when the run ended
  double probe_s = 0;    // the calibration probe after its last case, > 0
};

struct MeasurementInfo {
  std::string command;  // the command line that produced the profile (its first run)
  std::string data;     // "synthetic" or "cifar10" (real files)
  int warmup = 0;       // warm-up iterations before timing
  int repeats = 0;      // timed repeats; the median is recorded
  bool quick = false;   // measure --quick
  // CUDA only (absent on CPU profiles): torch.backends.cudnn.benchmark as measured (true: cuDNN
  // times the candidate algorithms per shape and keeps the fastest, as the course's script sets
  // it; false: PyTorch's default heuristics) and whether fp32 convolutions / matmuls ran on TF32
  // tensor cores (PyTorch's defaults: convolutions yes, matmuls no).
  std::optional<bool> cudnn_benchmark;
  std::optional<bool> tf32_convolutions;
  std::optional<bool> tf32_matmul;
  // The numeric mode every compute timing ran in (`measure --precision`); absent in the file: fp32.
  Precision precision = Precision::kFp32;
  // The layout of every compute timing's 4-D tensors (`measure --memory-format`); absent: nchw.
  MemoryFormat memory_format = MemoryFormat::kNchw;
  std::vector<ResumedRun> resumed;  // later runs that added cases, in order; empty: none
};

// One parameter tensor, in the model's registration (parameters()) order.
struct ParamTensor {
  std::string name;   // e.g. "layer1.0.conv1.weight"
  int64_t bytes = 0;  // fp32 bytes
};

// One profiled layer: a leaf module or a block (ResNet: stem, layerX.Y blocks, head).
// Torch-free description plus, aligned with ModelProfile::batches, the measured times.
struct LayerProfile {
  std::string name;                   // e.g. "layer2.0"
  std::string kind;                   // e.g. "stem", "basic-block", "head"
  std::vector<ParamTensor> params;    // registration order
  int64_t buffer_bytes = 0;           // BatchNorm running stats etc. (broadcast by DDP/DP)
  std::vector<int64_t> output_shape;  // per sample, e.g. {64, 32, 32}
  double forward_flops = 0;           // per sample (multiply-add = 2 FLOPs)
  std::vector<double> forward_s;      // per batch in ModelProfile::batches
  std::vector<double> backward_s;     // per batch in ModelProfile::batches
  // The host's time to issue the layer's forward and backward (the call returns, no
  // synchronisation) per batch; empty = not measured (a CPU device, where host and device are
  // one, or an older profile). Present for every layer or for none (ModelProfile::has_host_issue).
  std::vector<double> host_forward_s;
  std::vector<double> host_backward_s;

  int64_t param_bytes() const {
    int64_t total = 0;
    for (const auto& p : params) total += p.bytes;
    return total;
  }
};

// Host contention (CPU profiles): the median fused-iteration time of ONE rank while `ranks`
// processes each run the same fused iteration at `batch` at once on the host (ranks = 1: the solo
// reference, measured the same way). GPU ranks own their device; CPU ranks share caches and
// memory bandwidth, so the simulator slows DDP compute by iteration_s(N) / iteration_s(1), per
// measured batch.
struct ContentionPoint {
  int ranks = 0;
  int64_t batch = 0;
  double iteration_s = 0;
};

// One gradient bucket of DistributedDataParallel's reducer after it rebuilt its buckets (every
// iteration after the first), in launch order: the parameter tensors it holds (indices into the
// model's parameters in registration order, i.e. the layers' params in order) and its size.
struct DdpBucket {
  int64_t bytes = 0;
  std::vector<int> params;
};

// One model's description and compute measurements on one device.
struct ModelProfile {
  std::string name;                   // "resnet18-cifar" or "resnet18-imagenet"
  // Where this entry came from: "measure", "torchscript:FILE" or "trace:FILE" (measure
  // import-trace); "" when not said (written only when set).
  std::string source;
  // What the source could not measure, each named once from kKnownMissing (e.g.
  // "peak_memory_bytes", "layer forward split", "oom_batch"); empty: nothing is missing. A
  // per-batch array named here is empty, a count named here is 0 (docs/PROFILE.md).
  std::vector<std::string> missing;
  int64_t parameters = 0;             // number of scalar parameters
  int64_t input_bytes_per_sample = 0; // fp32 input tensor bytes per sample (H2D copy size)
  int num_classes = 0;
  std::vector<LayerProfile> layers;   // forward order

  std::vector<int64_t> batches;       // ascending batch sizes that ran
  std::vector<double> loss_s;         // loss forward + backward, per batch
  std::vector<double> zero_grad_s;    // optimizer.zero_grad(), per batch
  std::vector<double> optimizer_s;    // SGD step (lr 0.1, momentum 0.9, wd 5e-4), per batch
  std::vector<double> iteration_s;    // whole fused iteration, for cross-checking the sum
  // The host's time to issue the loss, zero_grad and the optimizer step (no synchronisation), per
  // batch; empty = not measured (see LayerProfile::host_forward_s).
  std::vector<double> host_loss_s;
  std::vector<double> host_zero_grad_s;
  std::vector<double> host_optimizer_s;
  // The C++ trainer's DDP loop body on ONE rank (c10d::Reducer over a 1-rank process group:
  // hooks, bucket copies, buffer broadcast, the 1-rank all-reduce), no loader and no copy, per
  // batch; empty = not measured.
  std::vector<double> ddp_iteration_s;
  // The reducer's steady-state buckets as measure recorded them; empty = not recorded (the
  // simulator then derives PyTorch's assignment from the layers' params).
  std::vector<DdpBucket> ddp_buckets;
  std::vector<double> peak_memory_bytes;  // per batch: the first iteration's (autotuning included)
  // The peak of a steady-state iteration (after the warm-up and timed repeats), per batch; empty =
  // not measured (older profiles). cuDNN's autotuning workspaces make the first iteration's peak
  // several times the steady one on a GPU; OOM verdicts use this one when it is there.
  std::vector<double> steady_peak_memory_bytes;
  // The minor page faults of one timed fused iteration (iteration_s's runs), per batch; empty = not
  // measured. Times MachineInfo::page_fault_s, the share of the timing spent mapping fresh memory:
  // on a host with costly faults a timing whose tensors glibc maps afresh every iteration measures
  // the allocator's state as much as the compute (docs/MEASURE.md "Page faults").
  std::vector<double> minor_faults;
  std::string memory_method;          // "cuda-allocator-peak" or "process-rss"
  std::optional<int64_t> oom_batch;   // smallest batch that ran out of memory, if any
  std::optional<int64_t> max_batch_tried;  // largest batch attempted (grid cap), if any
  // Grouped by batch (ascending), each group ascending in ranks from 1; empty = not measured.
  std::vector<ContentionPoint> host_contention;

  int64_t param_bytes() const {
    int64_t total = 0;
    for (const auto& l : layers) total += l.param_bytes();
    return total;
  }
  // Whether the host's issue times were measured (every layer's and the loss's, zero_grad's and
  // the optimizer's); the reader accepts all of them or none.
  bool has_host_issue() const { return !host_optimizer_s.empty(); }
  bool is_missing(const std::string& what) const {
    for (const auto& m : missing) {
      if (m == what) return true;
    }
    return false;
  }
};

// The entries ModelProfile::missing may hold. The per-batch arrays (loss_s, zero_grad_s,
// optimizer_s, iteration_s, peak_memory_bytes) are then empty, the counts (input_bytes_per_sample,
// num_classes) 0; the others only say what the numbers do not hold: "layer forward split" (the
// forward is one unsplit layer), "oom_batch" (never run to out-of-memory), "buffer_bytes",
// "output_shape", "forward_flops" (the layers' are not known).
inline constexpr const char* kKnownMissing[] = {
    "loss_s", "zero_grad_s", "optimizer_s", "iteration_s", "peak_memory_bytes",
    "input_bytes_per_sample", "num_classes", "layer forward split", "oom_batch",
    "buffer_bytes", "output_shape", "forward_flops"};

// A measured time-vs-bytes curve (collective or copy), points ascending in bytes.
struct CurvePoint {
  double bytes = 0;
  double time_s = 0;
};

// A collective's curve for one rank count. op: "all_reduce", "broadcast", "reduce".
struct CollectiveCurve {
  std::string op;
  int ranks = 0;
  std::vector<CurvePoint> points;
  // An nccl-tests log's GPUs launched by one thread per call (its header's `nGpus`); 0: not
  // known (a measured curve: not written to or read from profiles).
  int gpus_per_thread = 0;
};

struct CollectivesProfile {
  std::string backend;  // "nccl" or "gloo"
  std::string source;   // "measured" or "nccl-tests:<file>" (all-reduce from a log)
  std::vector<CollectiveCurve> curves;
};

// Host-to-device copies. On a CPU device there is no copy: applicable = false.
struct CopyProfile {
  bool applicable = false;
  std::vector<CurvePoint> pinned;
  std::vector<CurvePoint> pageable;
};

// Data-loader throughput (augmentation + collation) per worker count on this machine.
struct LoaderPoint {
  int workers = 0;            // 0 = loaded inline by the training thread
  double samples_per_s = 0;   // measured throughput with that many workers (steady state)
  // What the first batch of an epoch costs beyond building one batch: starting the workers
  // (non-persistent workers start again every epoch). Not measured: nullopt.
  std::optional<double> startup_s;
};

// The same worker counts measured at another batch size (the rate per sample depends on the
// batch: its collation and its hand-over from the worker weigh less per sample in a bigger one).
struct LoaderAtBatch {
  int64_t batch = 0;
  std::vector<LoaderPoint> points;   // ascending in workers; startup_s not used
};

struct LoaderProfile {
  std::string data;                  // "synthetic" or "cifar10"
  int64_t batch = 0;                 // batch size used for the measurement
  std::vector<LoaderPoint> points;   // ascending in workers
  std::vector<LoaderAtBatch> at_batches;  // optional: other batches, ascending, none equal to `batch`
};

// Large-batch statistics (issue 5): a baseline training curve and the gradient noise scale
// B_simple = tr(Sigma) / |G|^2 measured along it (two-batch estimator, docs/LARGE_BATCH.md).
struct EpochPoint {
  int epoch = 0;                   // 1-based: the state after this many epochs
  double examples = 0;             // training examples processed so far (epoch * train_samples)
  double train_loss = 0;           // mean training loss over the epoch
  double train_accuracy = 0;       // fraction in [0, 1]
  double test_accuracy = -1;       // fraction in [0, 1]; -1 when no test set was evaluated
  double grad_sq_norm = 0;         // EMA estimate of |G|^2 at the end of the epoch
  double trace_sigma = 0;          // EMA estimate of tr(Sigma) at the end of the epoch
  double noise_scale = 0;          // B_simple = trace_sigma / grad_sq_norm
  // eps_max = |G|^2 / G^T H G of the moving averages at the end of the epoch (CurvatureEstimator):
  // the largest useful plain-SGD lr; 0 when not measured (optional on disk).
  double max_lr = 0;
  // McCandlish's B_noise = tr(H Sigma) / G^T H G of the curvature's moving averages at the end of
  // the epoch (noise_scale is B_simple, which assumes H a multiple of the identity); 0 when not
  // measured or not measurable (optional on disk).
  double curvature_noise_scale = 0;
  // Its standard error (CurvatureEstimator::noise_scale_standard_error), in examples; 0: none (no
  // more than two measurements' worth of weight, or a curve recorded before it was; optional on disk).
  double curvature_noise_scale_se = 0;
  // The BatchNorm probe at the end of the epoch: the training-mode mean loss of the probe set at
  // each of the curve's probe_batches, in their order; empty: not measured (optional on disk).
  std::vector<double> probe_loss;
  // The scale-invariant parameters (those BatchNorm normalises, found after the first step) at the
  // end of the epoch: their |w|^2, their steps' |delta w|^2 / lr^2 (the momentum buffer's |v|^2)
  // per step over the epoch, and tr(Sigma) of their gradients (the moving average); 0: not
  // measured (optional on disk; docs/LARGE_BATCH.md, "The scale-invariant weights' norm").
  double si_weight_sq = 0;
  double si_update_sq = 0;
  double si_trace_sigma = 0;
  // The test accuracy with BatchNorm's statistics recomputed on the weights (the curve's
  // recompute_bn_images); -1: not measured (optional on disk).
  double test_accuracy_recomputed = -1;
};

// A point inside the baseline run (measure baseline --evals-per-epoch K): the training loss and
// accuracy averaged over the last window_examples examples, and the test accuracy evaluated at
// `examples`. Finer than the epochs where early training moves fast.
struct CurveSample {
  double examples = 0;             // training examples processed so far (the window's end)
  double window_examples = 0;      // the examples the means below average over (> 0)
  double train_loss = 0;           // mean training loss over the window
  double train_accuracy = 0;       // fraction in [0, 1], over the window
  double test_accuracy = -1;       // fraction in [0, 1] at `examples`; -1 when not evaluated
  double noise_scale = 0;          // B_simple of the moving averages at `examples`; 0: not measurable
  double max_lr = 0;               // eps_max of the moving averages at `examples`; 0: not measured
  double curvature_noise_scale = 0;  // B_noise = tr(H Sigma) / G^T H G at `examples`; 0: none
  double curvature_noise_scale_se = 0;  // its standard error; 0: none
  std::vector<double> probe_loss;        // the BatchNorm probe at `examples` (EpochPoint's); empty: none
  double si_weight_sq = 0;    // EpochPoint's, at `examples` (si_update_sq: the window's mean per step)
  double si_update_sq = 0;
  double si_trace_sigma = 0;
  double test_accuracy_recomputed = -1;  // EpochPoint's, at `examples`; -1: not measured
};

// The curvature at the baseline's start (measure baseline on one device): before its first step,
// along the first batch's gradient g, H on the same batch, x = lr g^T H g / |g|^2, the lr against
// eps_max (past 2 one plain step along g raises the loss), for every parameter and for the part of
// g on the parameters that are not scale-invariant (those BatchNorm does not normalise: a step too
// large for them cannot be escaped by growing their norm; docs/LARGE_BATCH.md, "Which parameters
// set the bound"). x <= 0: no positive curvature along that direction.
struct StartCurvature {
  double lr_over_eps_max = 0;
  std::optional<double> rest_lr_over_eps_max;  // none: no such parameter with a non-zero gradient
  int64_t scale_invariant = 0;                 // parameter tensors found scale-invariant
  int64_t parameters = 0;                      // parameter tensors with a gradient
};

// The pace probe (measure baseline --pace-probe-at, docs/LARGE_BATCH.md "The pace probe"): from the
// baseline's state after `examples`, `steps` steps at `ratio` x its batch and `lr_ratio` x its lr,
// against the baseline's batch and lr continued, each cooled `cool_steps` steps at `cool` x the lr
// and read in training mode on a fixed set; the gain is the baseline's steps the branch's are worth,
// per branch step. One reading per (state, pair); `draws` independent draws of the probe's batches,
// `gains` those whose branch fell within the continued baseline's readings (the rest are left out).
struct PaceProbeReading {
  double examples = 0;
  int64_t ratio = 0;
  double lr_ratio = 1;
  int64_t steps = 0;
  int64_t cool_steps = 0;
  double cool = 0;
  int64_t draws = 0;
  std::vector<double> gains;
};

struct TrainingCurve {
  std::string model;               // e.g. "resnet18-cifar"
  std::string data;                // "synthetic", "cifar10" or "fashion-mnist"
  int64_t batch = 0;               // global batch of the baseline run
  int64_t small_batch = 0;         // B_small of the two-batch estimator (per rank or micro-batch)
  int64_t train_samples = 0;       // samples per epoch
  double lr = 0;                   // base learning rate
  double momentum = 0;
  double weight_decay = 0;
  std::string lr_rule;             // "constant", "linear", "linear-warmup", "sqrt"
  double warmup_epochs = 0;        // linear-warmup: epochs of the ramp (> 0); 0 for the other rules
  // "sgd" (momentum SGD), or "lars": layer-wise adaptive rate scaling (You et al. 2017), each
  // weight tensor's step scaled by lars_eta ||w|| / (||g|| + weight_decay ||w||).
  std::string optimizer = "sgd";
  double lars_eta = 0;             // lars: the trust coefficient (> 0); 0 for sgd
  // The BatchNorm probe (measure baseline --bn-probe-images): the BatchNorm batches at which each
  // point's probe_loss was measured, strictly ascending, the first the run's own (small_batch), the
  // last the whole probe set; empty: no probe (optional on disk).
  std::vector<int64_t> probe_batches;
  // measure baseline --recompute-bn: the training images (the first ones, unaugmented, in whole
  // BatchNorm batches of small_batch) on which BatchNorm's statistics were estimated again for each
  // point's test_accuracy_recomputed; 0: not measured (optional on disk).
  int64_t recompute_bn_images = 0;
  std::optional<StartCurvature> start_curvature;  // none: not measured (optional on disk)
  std::vector<PaceProbeReading> pace_probe;  // ascending in examples; empty: not probed (optional on disk)
  std::vector<EpochPoint> epochs;  // ascending in epoch
  std::vector<CurveSample> samples;  // optional, ascending in examples; empty: the epochs only
};

// The calibration probe (docs/PROFILE.md "Calibration"): one fixed training iteration of
// `model` at `batch` (fused zero_grad, forward, loss, backward, SGD step; 1 warm-up, median of 3)
// timed with `threads` intra-op threads at the start and at the end of the profile. Every measured
// run times the same probe, so simulate --compare can tell machine drift from model error.
struct Calibration {
  std::string model;
  int64_t batch = 0;
  int threads = 0;
  double start_s = 0;
  double end_s = 0;
  double probe_s() const { return 0.5 * (start_s + end_s); }
};

// Starting a DataLoader's worker processes, as it costs the training process (PyTorch forks them
// at every epoch's iter(loader) unless they are persistent), with `ranks` training processes
// doing it at once. Arrays aligned with PytorchLoop::batches.
struct ForkPoint {
  int ranks = 0;
  std::vector<double> iter_s;         // iter(loader): forking the workers
  std::vector<double> first_batch_s;  // the first next(): the workers start and build a batch
  std::vector<double> cow_s;          // the first iteration's excess: copy-on-write faults
};

struct ForkCost {
  int workers = 0;                 // workers per loader when measured
  std::vector<ForkPoint> points;   // strictly ascending in ranks, from 1
};

// The PyTorch (Python) training loop measured by measure/pytorch/profile_torch.py on this machine.
struct PytorchLoop {
  std::vector<int64_t> batches;          // ascending: the batches that ran
  std::vector<double> iteration_s;       // plain module, the reference trainer's loop body
  std::vector<double> ddp_iteration_s;   // the same under DistributedDataParallel on 1 rank
  std::optional<int64_t> oom_batch;      // smallest batch that ran out of memory, if any
  std::optional<ForkCost> fork;          // absent: not measured (no worker count >= 1)
  // DataParallel's host mechanisms of this model (measure/pytorch/dataparallel_host.py); absent:
  // not measured (profiles before them, or a model replicate cannot copy).
  std::optional<int64_t> forward_calls;  // calls from Python into ATen in one training forward
  std::optional<double> replicate_s;     // torch.nn.parallel.replicate's Python work per replica
  // The minor page faults of one timed plain loop body, per batch (ModelProfile::minor_faults);
  // empty: not counted.
  std::vector<double> minor_faults;
};

// N Python threads each running forwards of one probe module at once (the GIL's cost;
// dataparallel_host.py, docs/HOST.md). The first probe is Python-bound: it gives the Python time
// per call and the cost of handing the GIL over (sim/train/gil_model.h); the others check it.
struct GilProbe {
  std::string name;
  int64_t width = 0;              // the probe: `depth` x (Linear(width, width), ReLU) ...
  int64_t batch = 0;              // ... on a batch x width input, without autograd
  int64_t calls = 0;              // calls from Python into ATen per forward
  std::vector<double> forward_s;  // per GilProfile::threads: wall time per forward, all at once
};
inline constexpr int kMaxGilThreads = 256;
inline constexpr int64_t kMaxForwardCalls = 10'000'000;  // calls from Python into ATen in one forward
struct GilProfile {
  std::vector<int> threads;  // ascending, the first two 1 and 2, at most kMaxGilThreads
  int depth = 0;
  std::vector<GilProbe> probes;
};

// What the reference PyTorch trainer's own pipeline costs: its DataLoader (PIL images,
// torchvision transforms, collate, worker processes) and its loop.
struct PytorchProfile {
  std::string torch;        // torch.__version__
  std::string torchvision;  // torchvision.__version__
  std::string python;       // Python version
  int threads = 0;          // intra-op threads of the measurement
  double probe_s = 0;       // the calibration probe, timed from Python
  LoaderProfile loader;
  std::map<std::string, PytorchLoop> models;
  std::optional<GilProfile> gil;  // absent: not measured
};

struct Profile {
  int schema_version = kProfileSchemaVersion;
  MachineInfo machine;
  MeasurementInfo measurement;
  std::map<std::string, ModelProfile> models;  // keyed by ModelProfile::name
  CopyProfile h2d;
  CollectivesProfile collectives;
  LoaderProfile loader;
  std::vector<TrainingCurve> training;  // baseline curves; empty when none was measured
  std::optional<Calibration> calibration;   // absent: no probe was timed
  std::optional<PytorchProfile> pytorch;    // absent: the Python pipeline was not measured
};

}  // namespace trainsim
