"""The host-side mechanisms of nn.DataParallel that one process measures (docs/HOST.md,
"DataParallel's host mechanisms, measured"):

- the GIL: N Python threads each running a forward at once, for N in GIL_THREADS, on probes of
  GIL_DEPTH (Linear, ReLU) pairs; the first probe is Python-bound (its ATen work is a few
  microseconds per call) and gives the Python time per call and the cost of handing the GIL to
  another thread, the others are held out to check the simulator's model of the two;
- the calls from Python into ATen in one training forward of a model (each is a point where the
  thread releases the GIL and takes it back);
- torch.nn.parallel.replicate's Python work per replica (module copies and their wiring), with
  its broadcast of the parameters left out: that is a device collective, priced by the
  collective model.
"""

import importlib
import multiprocessing
import statistics
import threading
import time

import torch
import torch.nn as nn

GIL_THREADS = [1, 2, 4]
GIL_DEPTH = 64
# (name, width, batch): Linear(width, width) + ReLU, GIL_DEPTH times, on a batch x width input.
GIL_PROBES = [("linear16", 16, 8), ("linear64", 64, 32), ("linear128", 128, 32)]
# Each timing runs at least this long (forwards per thread chosen from one thread's time).
GIL_MIN_TIMING_S = 0.05
# Timings per figure at least (--repeats when more) for the GIL's rounds.
MIN_REPEATS = 5
# replicate() timed for these replica counts, in this many rounds at least (--repeats when more):
# a round of ResNet-18 takes about 10 ms.
REPLICATE_COUNTS = [2, 8]
MIN_REPLICATE_ROUNDS = 15


def _probe_net(width):
    layers = []
    for _ in range(GIL_DEPTH):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers)


# Tensor methods that read metadata in the binding itself, without entering ATen's dispatcher:
# the thread keeps the GIL through them, so they are not counted as calls.
METADATA_CALLS = {"dim", "size", "numel", "stride", "is_contiguous", "__get__"}


class _CallCounter(torch.overrides.TorchFunctionMode):
    """Counts the calls from Python into torch's functions and Tensor methods while active."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") not in METADATA_CALLS:
            self.calls += 1
        return func(*args, **(kwargs or {}))


def count_calls(net, x):
    """Calls from Python into ATen in one forward of `net` on `x`. Each goes through a generated
    binding that releases the GIL around the ATen call and takes it back (docs/HOST.md)."""
    counter = _CallCounter()
    with counter:
        net(x)
    return counter.calls


def _threads_forward_s(nets, x, forwards):
    """Wall time per forward when len(nets) threads each run `forwards` forwards at once (one
    module each, no autograd)."""
    def work(net):
        torch.set_num_threads(1)  # per thread: OpenMP's thread count is each thread's own setting
        with torch.no_grad():
            for _ in range(forwards):
                net(x)

    threads = [threading.Thread(target=work, args=(n,)) for n in nets]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - t0) / forwards


def measure_gil(repeats):
    """The GIL block of the profile, measured in a fresh interpreter (spawned): the probe's
    threads and their OpenMP teams never exist in the profiling process, whose later forks (the
    DataLoader's workers, the fork measurement) would otherwise inherit them and can hang in
    OpenMP. Returns (block, log lines)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measure_gil, (repeats,))


def _measure_gil(repeats):
    """Per probe its calls per forward and the wall time per forward with 1, 2 and 4 threads at
    once. Intra-op threads are 1 in every thread, so that each Python thread uses one core."""
    torch.set_num_threads(1)
    lines = []
    probes = []
    for name, width, batch in GIL_PROBES:
        torch.manual_seed(0)
        nets = [_probe_net(width) for _ in range(max(GIL_THREADS))]
        x = torch.randn(batch, width)
        with torch.no_grad():
            calls = count_calls(nets[0], x)
            for _ in range(3):
                nets[0](x)
        one = _threads_forward_s(nets[:1], x, 5)
        forwards = max(3, int(GIL_MIN_TIMING_S / one))
        # In rounds, every thread count once per round: a slow spell of the machine falls on a
        # round of each count alike, not on all the timings of one.
        rounds = [[_threads_forward_s(nets[:n], x, forwards) for n in GIL_THREADS]
                  for _ in range(max(repeats, MIN_REPEATS))]
        forward_s = [statistics.median(r[i] for r in rounds) for i in range(len(GIL_THREADS))]
        probes.append({"name": name, "width": width, "batch": batch, "calls": calls,
                       "forward_s": forward_s})
        lines.append("gil: %s (%d calls per forward): %s" % (
            name, calls, ", ".join("%d thread(s) %.1f us" % (n, t * 1e6)
                                   for n, t in zip(GIL_THREADS, forward_s))))
    return {"threads": GIL_THREADS, "depth": GIL_DEPTH, "probes": probes}, lines


def forward_calls(net, device, batch):
    """Calls from Python into ATen in one training-mode forward of `net` at `batch`."""
    net.train()
    x = torch.randn(batch, 3, 32, 32).to(device)
    net(x)  # the first call builds what later ones reuse
    return count_calls(net, x)


def replicate_s(net, repeats):
    """torch.nn.parallel.replicate's own Python work per replica: its time for 2 and 8 replicas
    with the parameter broadcast replaced by a stand-in whose time is taken out; the slope per
    replica (the fixed part, the same with any count, belongs to DataParallel's call). The two
    counts are timed back to back in each round, in alternating order, and the figure is the
    median of the rounds' slopes: a slow spell of the machine lands on both timings of a round,
    not on all the timings of one count (on a busy 2-core machine, 2 and 4 replicas timed apart,
    five of each, gave slopes from 0.25 to 2.3 ms; one slow spell on the smaller count makes the
    slope zero)."""
    module = importlib.import_module("torch.nn.parallel.replicate")
    real = module._broadcast_coalesced_reshape
    stand_in_s = [0.0]

    def stand_in(tensors, devices, detach=False):
        t0 = time.perf_counter()
        out = [[t.detach() if detach else t.view_as(t) for t in tensors] for _ in devices]
        stand_in_s[0] += time.perf_counter() - t0
        return out

    def timed(n):
        stand_in_s[0] = 0.0
        t0 = time.perf_counter()
        module.replicate(net, list(range(n)))
        return time.perf_counter() - t0 - stand_in_s[0]

    few, many = REPLICATE_COUNTS
    module._broadcast_coalesced_reshape = stand_in
    try:
        slopes = []
        for r in range(max(repeats, MIN_REPLICATE_ROUNDS)):
            t = {n: timed(n) for n in ((few, many) if r % 2 == 0 else (many, few))}
            slopes.append((t[many] - t[few]) / (many - few))
    finally:
        module._broadcast_coalesced_reshape = real
    return max(0.0, statistics.median(slopes))
