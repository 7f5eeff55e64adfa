"""Calibration probe: one fused training iteration of ResNet-18 CIFAR at batch 32.

A fresh model (torch.manual_seed(0)) in train mode, SGD(lr 0.1, momentum 0.9, weight decay
5e-4), one fixed random batch of 32 (torch.randn images 32x3x32x32, torch.randint labels 0..9)
already on the device; the iteration is zero_grad, forward, cross_entropy, backward, step.
1 warm-up iteration, then the median of 3 timed ones (CUDA synchronised before each clock
reading). It runs on the caller's device with the caller's intra-op threads, so its seconds say
how fast this machine is right now, next to the run it precedes.

    /usr/bin/python3 measure/pytorch/probe.py [--device cpu|cuda] [--threads T]
"""

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import resnet

BATCH = 32


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_probe(device, warmup=1, repeats=3, batch=BATCH):
    """Median seconds of one fused iteration. `device`: a torch.device or its name. Leaves the
    global RNG seeded with 0 (callers reseed)."""
    device = torch.device(device)
    torch.manual_seed(0)
    model = resnet.ResNet18().to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    images = torch.randn(batch, 3, 32, 32).to(device)
    labels = torch.randint(0, 10, (batch,)).to(device)

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - t0)
    del model, optimizer, images, labels
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description="Times the calibration probe and prints seconds.")
    p.add_argument("--device", choices=["cpu", "cuda"],
                   default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: leave default)")
    a = p.parse_args(argv)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: no CUDA device is visible", file=sys.stderr)
        return 2
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.device == "cuda":
        torch.backends.cudnn.benchmark = True
    s = run_probe(a.device)
    print("probe_s %.6g (device %s, threads %d)" % (s, a.device, torch.get_num_threads()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
