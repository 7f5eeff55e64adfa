#!/usr/bin/python3
"""What BatchNorm's micro-batch size adds to the training loss (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The bias at momentum 0.9 taken apart").

The training loss `measure baseline` records is each step's loss in training mode: BatchNorm
normalises every micro-batch (--batch / --micro-batches images) with that micro-batch's own mean
and variance. Those statistics are noisy, and the smaller the micro-batch the noisier, so the same
weights give a higher loss in training mode at a small micro-batch than at a large one. A run at
16x the batch normalises over 16x the images per micro-batch, so its training loss is read with
less of that noise than the baseline's at the same weights.

This script trains fashion-cnn-gap as `measure baseline` does (the PyTorch replica in
fashion_replica.py) and at --probe-at steps reads, on a fixed set of training images (--probe-images
of them drawn once with a fixed seed, no augmentation), the loss in eval mode (BatchNorm's
running statistics) and in training mode with the set cut into micro-batches of each size in
--bn-batches. No weight changes; BatchNorm's running statistics are restored after each reading,
so the run goes on as if it had not been probed.

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 experiments/largebatch-fashion/bn-noise-probe.py [--momentum 0.9] [--batch 128] [--epochs 5] [--seed 0]
"""
import argparse
import copy
import sys

import torch
import torch.nn.functional as F

from fashion_replica import (add_recipe_arguments, fixed_subset, half_epoch_steps, int_list, new_run, probe_loss, run_steps,
                             training_data)


def train_mode_loss(model, x, y, micro):
    """The set's mean loss in training mode, BatchNorm normalising each run of `micro` images on its own;
    the model's state (running statistics included) is as before."""
    saved = copy.deepcopy(model.state_dict())
    model.train()
    with torch.no_grad():
        loss = sum(F.cross_entropy(model(xs), ys, reduction="sum").item()
                   for xs, ys in zip(x.split(micro), y.split(micro))) / y.numel()
    model.load_state_dict(saved)
    return loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=5)
    parser.add_argument("--probe-at", default="", help="steps after which to probe (default: every half epoch)")
    parser.add_argument("--bn-batches", default="32,128,512", help="micro-batch sizes to read the training-mode loss at")
    parser.add_argument("--probe-images", type=int, default=4096)
    a = parser.parse_args()
    bn_batches = int_list(a.bn_batches, "bn-noise-probe", "--bn-batches")
    probe_at = int_list(a.probe_at, "bn-noise-probe", "--probe-at")
    if not (0 <= a.momentum < 1) or a.lr <= 0 or a.batch % a.micro_batches or not bn_batches or bn_batches[0] < 2:
        sys.exit("bn-noise-probe: need 0 <= --momentum < 1, --lr > 0, --batch a multiple of --micro-batches, "
                 "--bn-batches of at least 2")
    if a.probe_images % bn_batches[-1]:
        sys.exit("bn-noise-probe: --probe-images must be a multiple of every --bn-batches size")
    torch.set_num_threads(1)

    x_all, padded, labels = training_data(a.data, "bn-noise-probe")
    x_probe, y_probe = fixed_subset(x_all, labels, a.probe_images)
    steps_per_epoch, probe_at = half_epoch_steps(a, labels.numel(), probe_at, "bn-noise-probe")

    model, opt, gen = new_run(a)
    print(f"# fashion-cnn-gap (PyTorch replica), lr {a.lr}, momentum {a.momentum}, batch {a.batch} in "
          f"{a.micro_batches} micro-batches of {a.batch // a.micro_batches}, seed {a.seed}; loss on {a.probe_images} "
          f"training images (no augmentation)")
    print("#   step  epochs  train_loss  eval    " + "  ".join(f"bn{b:<5d}" for b in bn_batches)
          + "  " + "  ".join(f"bn{b}-bn{bn_batches[-1]}" for b in bn_batches[:-1]))
    window, window_n = 0.0, 0
    for s, _, loss, _, _ in run_steps(model, opt, padded, labels, a, gen, "bn-noise-probe"):
        window += loss
        window_n += 1
        if s in probe_at:
            bn = [train_mode_loss(model, x_probe, y_probe, m) for m in bn_batches]
            print(f"{s:7d}  {s / steps_per_epoch:6.3f}  {window / window_n:10.4f}  "
                  f"{probe_loss(model, x_probe, y_probe):6.4f}  " + "  ".join(f"{v:7.4f}" for v in bn) + "  "
                  + "  ".join(f"{v - bn[-1]:+{len(f'bn{m}-bn{bn_batches[-1]}')}.4f}" for m, v in zip(bn_batches, bn[:-1])),
                  flush=True)
            window, window_n = 0.0, 0


if __name__ == "__main__":
    main()
