#!/usr/bin/python3
"""Which parameters bound a run's lr: the scale-invariant ones or the others (docs/LARGE_BATCH.md, "Which parameters set the bound").

A weight that BatchNorm normalises (a convolution without bias followed by BatchNorm in training
mode) is scale-invariant: the loss is the same at w and c w, so w . dL/dw = 0 (Euler), and a step
too large for it grows |w| until its effective lr, lr / |w|^2, is small enough. The other
parameters (the linear head, BatchNorm's own scale and shift) have no such escape. This script
trains the run as `measure baseline` does (the PyTorch replica in fashion_replica.py, constant lr)
and after --probe-at steps measures, on a fixed set of --probe-images training images (no
augmentation, BatchNorm micro-batches of the run's size), the largest useful lr along the set's
gradient g restricted to each block S, eps_S = |g_S|^2 / g_S^T H g_S, H the exact Hessian
(double backward), as `measure baseline` reads eps_max for the whole network:

  all:   every parameter (what `measure baseline` records as eps_max);
  scale: the scale-invariant weights (checked: |cos(w, g_w)| is printed for each);
  rest:  every other parameter;  head: the linear classifier alone.

It prints lr / eps_S for each (past 2, one plain step along g_S raises the loss), the run's mean
training loss since the last probe, and the scale-invariant weights' norm |w|.

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 experiments/largebatch-fashion/block-stiffness-probe.py [--model fashion-cnn-gap|fashion-cnn] [--batch 128] [--lr 0.1] [--seed 0]
"""
import argparse
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from fashion_replica import add_recipe_arguments, fixed_subset, int_list, new_run, run_steps, training_data


def blocks(model):
    """The parameter blocks by structure: the convolutions' weights (no bias, each followed by
    BatchNorm: scale-invariant), the rest, and the head."""
    scale = [m.weight for m in model.modules() if isinstance(m, nn.Conv2d)]
    ids = {id(p) for p in scale}
    rest = [p for p in model.parameters() if id(p) not in ids]
    return {"all": list(model.parameters()), "scale": scale, "rest": rest, "head": list(model.fc.parameters())}


def probe(model, x, y, micro, parts):
    """eps_S for each block S (nan where g_S^T H g_S <= 0), and |cos(w, g_w)| of each scale-invariant
    weight; the model's state is as before (BatchNorm's running statistics are put back)."""
    saved = {k: v.clone() for k, v in model.state_dict().items() if "running" in k or "num_batches" in k}
    params = parts["all"]
    xs, ys = x.split(micro), y.split(micro)
    loss = sum(F.cross_entropy(model(a), b) for a, b in zip(xs, ys)) / len(xs)
    grads = torch.autograd.grad(loss, params, create_graph=True)
    index = {id(p): i for i, p in enumerate(params)}
    out = {}
    for name, block in parts.items():
        members = {index[id(p)] for p in block}
        v = [g.detach() if i in members else torch.zeros_like(g) for i, g in enumerate(grads)]
        hv = torch.autograd.grad(sum((g * u).sum() for g, u in zip(grads, v)), params, retain_graph=True)
        g_sq = sum((u * u).sum().item() for u in v)
        ghg = sum((u * h).sum().item() for u, h in zip(v, hv))
        out[name] = g_sq / ghg if ghg > 0 else math.nan
    cos = [abs((w * grads[index[id(w)]]).sum().item()) /
           max(w.norm().item() * grads[index[id(w)]].norm().item(), 1e-30) for w in parts["scale"]]
    model.load_state_dict(saved, strict=False)
    return out, cos


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=2)
    parser.add_argument("--model", choices=["fashion-cnn-gap", "fashion-cnn"], default="fashion-cnn-gap")
    parser.add_argument("--probe-at", default="", help="steps after which to probe (default: 1-5, 10, 20, 40, "
                        "then every 10,240 training images)")
    parser.add_argument("--probe-images", type=int, default=1024)
    a = parser.parse_args()
    micro = a.batch // a.micro_batches if a.micro_batches > 0 else 0
    if a.lr <= 0 or a.micro_batches < 1 or a.batch % a.micro_batches or micro < 2 or a.probe_images % micro:
        sys.exit("block-stiffness-probe: need --lr > 0, --batch a multiple of --micro-batches with micro-batches "
                 "of at least 2 images, and --probe-images a multiple of the micro-batch")
    torch.set_num_threads(1)
    x_all, padded, labels = training_data(a.data, "block-stiffness-probe")
    x_fixed, y_fixed = fixed_subset(x_all, labels, a.probe_images)
    steps_per_epoch = math.ceil(labels.numel() / a.batch)
    total = steps_per_epoch * a.epochs
    probe_at = int_list(a.probe_at, "block-stiffness-probe", "--probe-at")
    if not probe_at:
        every = max(1, 10240 // a.batch)
        probe_at = sorted({s for s in [1, 2, 3, 4, 5, 10, 20, 40] + list(range(every, total + 1, every)) if s <= total})
    model, opt, gen = new_run(a)
    parts = blocks(model)
    eps, cos = probe(model, x_fixed, y_fixed, micro, parts)
    print(f"# {a.model} (PyTorch replica), lr {a.lr} (constant), momentum {a.momentum}, batch {a.batch} in "
          f"{a.micro_batches} micro-batches of {micro}, seed {a.seed}; eps_S on {a.probe_images} fixed training "
          f"images; |cos(w, g)| of the scale-invariant weights at the start: "
          + ", ".join(f"{c:.1e}" for c in cos))
    print("#   step  epochs  train_loss  lr/eps_all  lr/eps_scale  lr/eps_rest  lr/eps_head  |w_scale|  max|cos|")

    def line(s, window):
        eps, cos = probe(model, x_fixed, y_fixed, micro, parts)
        w = math.sqrt(sum((p * p).sum().item() for p in parts["scale"]))
        print(f"{s:7d}  {s / steps_per_epoch:6.3f}  {window:10.4f}  "
              + "  ".join(f"{a.lr / eps[k]:10.3f}" if eps[k] > 0 else f"{'-':>10s}"
                          for k in ("all", "scale", "rest", "head"))
              + f"  {w:9.3f}  {max(cos):8.1e}", flush=True)

    line(0, math.nan)
    window, window_n = 0.0, 0
    for s, _, loss, _, _ in run_steps(model, opt, padded, labels, a, gen, "block-stiffness-probe"):
        window += loss
        window_n += 1
        if s in probe_at:
            line(s, window / window_n)
            window, window_n = 0.0, 0


if __name__ == "__main__":
    main()
