#!/usr/bin/env python3
"""Takes a PyTorch profiler trace of the reference trainer's training step, as a user does of
their own script, for `measure import-trace` (docs/TRACE.md): the model (a TorchScript file, or
export_models.py's eager model) under DistributedDataParallel on a 1-rank Gloo group, as
train.py runs it under torchrun with one process, SGD (lr 0.1, momentum 0.9, weight decay 5e-4),
cross-entropy on random CIFAR-shaped batches already in memory (no loader: its cost is the
profile's). torch.profiler records 4 steps (wait 1, warm-up 2, active 1): the trace holds the
last one. Then the same step runs TIMED times without the profiler: their median is what the step
costs when nobody records it, for `measure import-trace --step-seconds` (the profiler's own cost
per recorded op is far from negligible on a CPU).

    /usr/bin/python3 measure/pytorch/trace_step.py (--model FILE.pt | --arch NAME) --batch 32
        --out DIR [--threads 1] [--timed 5]

Writes DIR/trace.json (export_chrome_trace), DIR/params.txt (`NAME BYTES` per parameter tensor
in registration order, fp32: what `measure import-trace --params` reads when the trace has no
shapes, as with a PyTorch built without Kineto) and DIR/step_seconds.txt (the median untraced
step, seconds).

Exit codes: 0 done; 2 a bad flag or bad model file (one `error: ...` line); 1 a failure while
running.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule

STEPS = 4  # wait 1, warm-up 2, active 1


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def positive(text):
    try:
        value = int(text)
    except ValueError:
        raise UsageError("'%s' is not an integer" % text)
    if value < 1:
        raise UsageError("%d is below the minimum 1" % value)
    return value


def parse_args(argv):
    p = _Parser(prog="trace_step.py", description="A torch.profiler trace of one DDP training step.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", metavar="FILE.pt", help="a TorchScript module (torch.jit.save)")
    source.add_argument("--arch", metavar="NAME", help="an export_models.py model, built eager")
    p.add_argument("--batch", type=positive, required=True)
    p.add_argument("--threads", type=positive, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timed", type=positive, default=5, help="untraced steps timed after the trace")
    p.add_argument("--out", required=True, metavar="DIR")
    return p.parse_args(argv)


def load_model(a):
    if a.arch:
        import export_models
        try:
            return export_models.build(a.arch, a.seed)
        except KeyError:
            raise UsageError("--arch: unknown model '%s'" % a.arch)
    if not os.path.isfile(a.model):
        raise UsageError("%s: no such file" % a.model)
    try:
        return torch.jit.load(a.model, map_location="cpu")
    except Exception as e:  # noqa: BLE001 (torch raises RuntimeError subclasses of its own)
        raise UsageError("%s: not a TorchScript module (%s)" % (a.model, str(e).strip().splitlines()[0]))


def run(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = load_model(a)
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as store:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(store, "store"), rank=0,
                                world_size=1)
        try:
            net = DistributedDataParallel(model)
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
            x = torch.randn(a.batch, 3, 32, 32)
            y = torch.randint(0, 10, (a.batch,))
            net.train()

            def step():
                optimizer.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                optimizer.step()
                loss.item()  # the trainer's own read of the loss ends its step

            with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                         schedule=schedule(wait=1, warmup=2, active=1)) as prof:
                for _ in range(STEPS):
                    step()
                    prof.step()
            prof.export_chrome_trace(os.path.join(a.out, "trace.json"))
            times = []
            for _ in range(a.timed):
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
            untraced = statistics.median(times)
        finally:
            dist.destroy_process_group()
    with open(os.path.join(a.out, "params.txt"), "w") as f:
        for name, t in model.named_parameters():
            f.write("%s %d\n" % (name, t.numel() * 4))
    with open(os.path.join(a.out, "step_seconds.txt"), "w") as f:
        f.write("%r\n" % untraced)
    print("trace_step: %s, batch %d, %d thread(s): wrote %s, params.txt and step_seconds.txt (untraced "
          "step %.4f s, median of %d)" % (a.model or a.arch, a.batch, a.threads, os.path.join(a.out, "trace.json"),
                                          untraced, a.timed))


def main(argv=None):
    try:
        run(parse_args(sys.argv[1:] if argv is None else argv))
        return 0
    except UsageError as e:
        print("error: %s" % e, file=sys.stderr, flush=True)
        return 2
    except Exception as e:  # noqa: BLE001
        print("error: %s" % (str(e).strip().splitlines() or [type(e).__name__])[0], file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
