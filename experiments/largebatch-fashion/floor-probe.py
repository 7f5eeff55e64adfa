#!/usr/bin/python3
"""How far above its noise floor SGD with momentum trains fashion-cnn-gap (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The floor, measured").

Trains the Fashion-MNIST CNN with the pooled head (models/fashion_cnn.h, fashion-cnn-gap) as
`measure baseline` does (batch 128 in 4 micro-batches of 32, each normalised by BatchNorm on its
own; random crop with padding 2 and horizontal flip; SGD with momentum and weight decay 5e-4), and
at a few points of the run probes the noise floor: from a copy of the model and optimiser state it
trains --probe-steps more steps at --cool times the lr and measures how far the loss on a fixed set
of training images (the first --probe-images, no augmentation, BatchNorm in eval mode) drops (a list
such as 50,200,800 reads the drop at each of those cumulative depths: the deeper ones reach the
flatter directions, which a short cooling leaves at the run's floor); then
it restores the copy, so the run goes on as if it had not been probed. A quadratic's stationary
excess loss is proportional to the lr, so the drop is (1 - cool) of the floor at the run's lr,
plus the little progress the cooled steps make (the run's own loss over the same number of steps
as the shallowest depth, at its full lr, is printed beside it, from the same set). Beside it the
floor the large-batch model computes, lr tr(Sigma) / (4 B (1 - m)), with tr(Sigma) from the two-batch estimator over the
micro-batches (moving average over the steps since the previous probe).

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 experiments/largebatch-fashion/floor-probe.py [--momentum 0.9] [--epochs 2] [--seed 0]
It is a replica in PyTorch of the C++ trainer's recipe, not `measure` itself: the layers, their
default initialisation and the transforms are the C++ module's, the random draws are PyTorch's.
"""
import argparse
import math
import sys

import torch

from fashion_replica import add_recipe_arguments, cooled_losses, int_list, new_run, probe_loss, run_steps, training_data

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=2)
    parser.add_argument("--probe-at", default="30,60,120,235,469,703,938",
                        help="the steps after which to probe (comma-separated)")
    parser.add_argument("--probe-steps", default="50",
                        help="cooled steps; a comma list reads the drop at each cumulative depth")
    parser.add_argument("--cool", type=float, default=0.1, help="the probe's lr as a fraction of the run's")
    parser.add_argument("--probe-images", type=int, default=5000)
    parser.add_argument("--probe-mode", choices=["eval", "train"], default="eval",
                        help="read the fixed set's loss in eval mode (running statistics) or in training mode, "
                             "BatchNorm over each micro-batch of the run's size (the loss the trainers record)")
    a = parser.parse_args()
    depths = int_list(a.probe_steps, "floor-probe", "--probe-steps")
    if not (0 <= a.momentum < 1) or a.lr <= 0 or not (0 < a.cool < 1) or not depths or depths[0] < 1:
        sys.exit("floor-probe: need 0 <= --momentum < 1, --lr > 0, 0 < --cool < 1, --probe-steps >= 1")
    if a.batch % a.micro_batches:
        sys.exit("floor-probe: --batch must be a multiple of --micro-batches")
    torch.set_num_threads(1)
    probes = set(int_list(a.probe_at, "floor-probe", "--probe-at"))

    x_all, padded, labels = training_data(a.data, "floor-probe")
    x_probe, y_probe = x_all[:a.probe_images], labels[:a.probe_images]
    n = labels.numel()

    model, opt, gen = new_run(a)
    probe_gen = torch.Generator().manual_seed(a.seed + 1_000_003)
    small = a.batch // a.micro_batches
    train_micro = small if a.probe_mode == "train" else None
    steps_per_epoch = math.ceil(n / a.batch)
    total_steps = steps_per_epoch * a.epochs
    if not probes or min(probes) < 1 or max(probes) > total_steps:
        sys.exit(f"floor-probe: --probe-at needs steps in [1, {total_steps}] ({a.epochs} epochs of {steps_per_epoch})")
    print(f"# fashion-cnn-gap (PyTorch replica), lr {a.lr}, momentum {a.momentum}, batch {a.batch} in "
          f"{a.micro_batches} micro-batches, seed {a.seed}; probe: {','.join(map(str, depths))} steps at {a.cool} x lr, "
          f"loss on the first {a.probe_images} training images ({a.probe_mode} mode)")
    deep = "" if len(depths) == 1 else "".join(f"  cooled@{d}  floor@{d}" for d in depths[1:])
    print("# step  epochs  run_loss  probe_loss  cooled  drop   continued  floor_measured  tr_sigma  floor_model" + deep)
    trace_sum, trace_n, window_loss, window_n = 0.0, 0, 0.0, 0
    pending = {}  # step at which to read the run's own probe-set loss -> the probe's row
    for s, images, loss, small_sq, big_sq in run_steps(model, opt, padded, labels, a, gen, "floor-probe"):
        window_loss += loss
        window_n += 1
        if images == a.batch:
            # tr(Sigma) from the two batch sizes: E|g_b|^2 = |G|^2 + tr(Sigma) / b.
            trace_sum += (small_sq - big_sq) / (1 / small - 1 / a.batch)
            trace_n += 1
        if s in pending:
            row = pending.pop(s)
            row["continued"] = probe_loss(model, x_probe, y_probe, train_micro)
            print_row(row)
        if s in probes:
            before = probe_loss(model, x_probe, y_probe, train_micro)
            cooled = cooled_losses(model, opt, padded, labels, depths, a.batch, a.lr * a.cool, a.micro_batches,
                                   probe_gen, x_probe, y_probe, "floor-probe", train_micro)
            trace = trace_sum / max(trace_n, 1)
            row = {"step": s, "epochs": s / steps_per_epoch, "run_loss": window_loss / window_n,
                   "before": before, "cooled": cooled, "floors": [(before - c) / (1 - a.cool) for c in cooled],
                   "depths": depths,
                   "trace": trace, "floor_model": a.lr * trace / (4 * a.batch * (1 - a.momentum))}
            trace_sum, trace_n, window_loss, window_n = 0.0, 0, 0.0, 0
            if s + depths[0] <= total_steps:
                pending[s + depths[0]] = row
            else:
                row["continued"] = float("nan")
                print_row(row)


def print_row(r):
    deep = "".join(f"  {c:{len(str(d)) + 8}.4f}  {f:{len(str(d)) + 7}.4f}"
                   for d, c, f in zip(r["depths"][1:], r["cooled"][1:], r["floors"][1:]))
    print(f"{r['step']:6d}  {r['epochs']:6.3f}  {r['run_loss']:8.4f}  {r['before']:10.4f}  {r['cooled'][0]:6.4f}  "
          f"{r['before'] - r['cooled'][0]:+.4f}  {r['continued']:9.4f}  {r['floors'][0]:14.4f}  {r['trace']:8.2f}  "
          f"{r['floor_model']:11.4f}" + deep, flush=True)


if __name__ == "__main__":
    main()
