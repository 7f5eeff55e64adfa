#!/usr/bin/python3
"""How far the test accuracy a run records (eval mode) sits below its weights' (docs/LARGE_BATCH.md, "The accuracy error taken apart").

`measure baseline` records the test accuracy in eval mode: BatchNorm normalises with its running
statistics, a moving average (momentum 0.1) of the micro-batches' own statistics over the last ten
or so micro-batches, taken while the weights moved. Where the weights move fast, those statistics
can be stale for the weights they normalise. This script trains fashion-cnn-gap as `measure
baseline` does (the PyTorch replica in fashion_replica.py) and at --probe-at steps reads the test
accuracy three ways, without changing any weight:

- eval: eval mode with the running statistics, as the trainers record it;
- recomputed: eval mode after BatchNorm's statistics are estimated again on the weights as they
  are, the plain average over --recompute-images training images (drawn once, no augmentation) in
  micro-batches of the run's size;
- train-mode: training mode, each run of 1,000 test images normalised with its own statistics.

The running statistics are put back after each reading, so the run goes on as if it had not been
probed.

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 scripts/bn-eval-probe.py [--batch 128] [--lr 0.1] [--momentum 0.9] [--epochs 5] [--seed 0]
"""
import argparse
import copy
import sys

import torch
import torch.nn as nn

from fashion_mnist import normalise, test_set
from fashion_replica import (add_recipe_arguments, fixed_subset, half_epoch_steps, int_list, new_run, run_steps,
                             training_data)


def accuracy(model, x, y, train_mode=False):
    """The set's accuracy in eval mode, or in training mode with each run of 1,000 images normalised
    by its own statistics; the model's state (running statistics included) is as before."""
    saved = copy.deepcopy(model.state_dict())
    model.train(train_mode)
    with torch.no_grad():
        right = sum((model(xs).argmax(1) == ys).sum().item() for xs, ys in zip(x.split(1000), y.split(1000)))
    model.load_state_dict(saved)
    model.train()
    return right / y.numel()


def recompute_statistics(model, x, micro):
    """BatchNorm's running statistics estimated again on the current weights: the plain average of
    the statistics of x's micro-batches of `micro` images (momentum None)."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        for xs in x.split(micro):
            model(xs)
    for bn in bns:
        bn.momentum = 0.1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=5)
    parser.add_argument("--probe-at", default="", help="steps after which to probe (default: every half epoch)")
    parser.add_argument("--recompute-images", type=int, default=8192)
    a = parser.parse_args()
    probe_at = int_list(a.probe_at, "bn-eval-probe", "--probe-at")
    micro = a.batch // a.micro_batches if a.micro_batches > 0 else 0
    if not (0 <= a.momentum < 1) or a.lr <= 0 or a.micro_batches < 1 or a.batch % a.micro_batches or micro < 2:
        sys.exit("bn-eval-probe: need 0 <= --momentum < 1, --lr > 0, --batch a multiple of --micro-batches "
                 "with micro-batches of at least 2 images")
    if a.recompute_images < micro:
        sys.exit("bn-eval-probe: --recompute-images must be at least one micro-batch")
    torch.set_num_threads(1)

    x_all, padded, labels = training_data(a.data, "bn-eval-probe")
    test_images, test_labels = test_set(a.data, "bn-eval-probe")
    x_test = normalise(test_images)
    x_fixed, _ = fixed_subset(x_all, labels, a.recompute_images)
    steps_per_epoch, probe_at = half_epoch_steps(a, labels.numel(), probe_at, "bn-eval-probe")

    model, opt, gen = new_run(a)
    print(f"# fashion-cnn-gap (PyTorch replica), lr {a.lr}, momentum {a.momentum}, batch {a.batch} in "
          f"{a.micro_batches} micro-batches of {micro}, seed {a.seed}; test accuracy on the 10,000 test images; "
          f"statistics recomputed on {a.recompute_images} training images (no augmentation)")
    print("#   step  epochs  train_loss  test_eval  test_recomputed  recomputed-eval  test_train_mode")
    window, window_n = 0.0, 0
    for s, _, loss, _, _ in run_steps(model, opt, padded, labels, a, gen, "bn-eval-probe"):
        window += loss
        window_n += 1
        if s in probe_at:
            eval_acc = accuracy(model, x_test, test_labels)
            train_mode_acc = accuracy(model, x_test, test_labels, train_mode=True)
            saved = copy.deepcopy(model.state_dict())
            recompute_statistics(model, x_fixed, micro)
            recomputed_acc = accuracy(model, x_test, test_labels)
            model.load_state_dict(saved)
            print(f"{s:7d}  {s / steps_per_epoch:6.3f}  {window / window_n:10.4f}  {eval_acc:9.4f}  "
                  f"{recomputed_acc:15.4f}  {(recomputed_acc - eval_acc) * 100:+14.1f}pt  {train_mode_acc:15.4f}",
                  flush=True)
            window, window_n = 0.0, 0


if __name__ == "__main__":
    main()
