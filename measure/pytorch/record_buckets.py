#!/usr/bin/env python3
"""Records the gradient buckets PyTorch's DistributedDataParallel really launches for ResNet-18
CIFAR: 2 Gloo ranks on the CPU, DDP with its defaults, 3 training iterations, and a comm hook
that notes, per iteration and in launch order, each bucket's index, its flat buffer's bytes and
its parameters (positions in list(model.parameters())), then does what the default hook does
(divide by the world size, all-reduce).

    /usr/bin/python3 measure/pytorch/record_buckets.py [--out tests/fixtures/runs/pytorch_ddp_buckets.json]

measure train's DDP (LibTorch's c10d::Reducer, measure/runs/ddp.h) is checked against the file this
writes (tests/runs_buckets_test.cpp).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import resnet  # noqa: E402

WORLD = 2
ITERATIONS = 3
BATCH = 4
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "tests", "fixtures", "runs",
                           "pytorch_ddp_buckets.json")


def _bucket_parameters(bucket):
    # GradBucket.parameters() (1.13 and 2.x); older releases called it get_per_parameter_tensors.
    if hasattr(bucket, "parameters"):
        return bucket.parameters()
    return bucket.get_per_parameter_tensors()


class Recorder:
    def __init__(self, model, world):
        self.world = world
        # Parameters are matched by the address of their storage: the bucket hands back the
        # module's own parameter tensors (not copies).
        self.position = {p.data_ptr(): i for i, p in enumerate(model.parameters())}
        self.iterations = []
        self.current = []

    def hook(self, state, bucket):
        buffer = bucket.buffer()
        params = [self.position[p.data_ptr()] for p in _bucket_parameters(bucket)]
        self.current.append({"index": int(bucket.index()),
                             "bytes": int(buffer.numel() * buffer.element_size()),
                             "params": params})
        buffer.div_(self.world)
        fut = dist.all_reduce(buffer, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    def end_iteration(self):
        self.iterations.append(self.current)
        self.current = []


def _rank(rank, store, result_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = resnet.ResNet18()
    ddp = DistributedDataParallel(model)  # defaults: bucket_cap_mb 25, broadcast_buffers True
    recorder = Recorder(model, WORLD)
    ddp.register_comm_hook(None, recorder.hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    g = torch.Generator()
    g.manual_seed(rank)
    for _ in range(ITERATIONS):
        inputs = torch.randn(BATCH, 3, 32, 32, generator=g)
        targets = torch.randint(0, 10, (BATCH,), generator=g)
        optimizer.zero_grad()
        loss = criterion(ddp(inputs), targets)
        loss.backward()
        optimizer.step()
        recorder.end_iteration()
    with open(os.path.join(result_dir, "rank%d.json" % rank), "w") as f:
        json.dump(recorder.iterations, f)
    last = torch.zeros(1)
    dist.all_reduce(last)
    del ddp, optimizer
    dist.destroy_process_group()


def record():
    """Runs the 2 ranks; returns rank 0's iterations (the ranks must agree)."""
    folder = tempfile.mkdtemp(prefix="trainsim-buckets-")
    try:
        mp.spawn(_rank, args=(os.path.join(folder, "store"), folder), nprocs=WORLD, join=True)
        ranks = []
        for r in range(WORLD):
            with open(os.path.join(folder, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if any(r != ranks[0] for r in ranks[1:]):
        raise RuntimeError("the ranks launched different buckets")
    return ranks[0]


def main(argv=None):
    p = argparse.ArgumentParser(description="Records DDP's gradient buckets for ResNet-18 CIFAR.")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="FILE.json")
    a = p.parse_args(argv)
    iterations = record()
    doc = {
        "source": "PyTorch %s DistributedDataParallel, %d Gloo ranks, defaults (bucket_cap_mb 25, "
                  "first bucket 1 MiB)" % (torch.__version__, WORLD),
        "model": resnet.MODEL_NAME,
        "iterations": iterations,
    }
    parent = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(parent, exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("{\"source\": %s,\n \"model\": %s,\n \"iterations\": [\n" % (
            json.dumps(doc["source"]), json.dumps(doc["model"])))
        for i, it in enumerate(iterations):
            f.write("  [\n")
            for j, b in enumerate(it):
                f.write("   " + json.dumps(b) + ("," if j + 1 < len(it) else "") + "\n")
            f.write("  ]" + ("," if i + 1 < len(iterations) else "") + "\n")
        f.write(" ]}\n")
    os.replace(tmp, a.out)
    with open(a.out) as f:
        assert json.load(f) == doc
    for i, it in enumerate(iterations):
        print("iteration %d: %s" % (i, ", ".join(
            "bucket %d %d B (%d tensors)" % (b["index"], b["bytes"], len(b["params"]))
            for b in it)))
    print("wrote %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
