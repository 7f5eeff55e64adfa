#!/usr/bin/python3
"""How far the test accuracy a run records (eval mode) sits below its weights' (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The accuracy error taken apart").

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
- train-mode: training mode, each run of 1,000 test images normalised with its own statistics;
- with --lag-factors R,...: the statistics' drift per step (drift_mean, drift_var: below), and eval mode with the running statistics' lag behind the weights made R
  times the run's own (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The eval-mode lag, read from the baseline: refuted"). The lag
  is the statistics' drift per step, d = (recomputed now - recomputed --lag-steps steps before) /
  --lag-steps, times the moving average's mean age in steps, T = 1 / (1 - 0.9^micro_batches); the
  statistics read are running - (R - 1) T d (the variance kept positive): what a run whose weights
  drift R times as far per step would carry, on this run's weights.

The running statistics are put back after each reading, so the run goes on as if it had not been
probed.

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 experiments/largebatch-fashion/bn-eval-probe.py [--batch 128] [--lr 0.1] [--momentum 0.9] [--epochs 5] [--seed 0]
"""
import argparse
import copy
import math
import sys

import torch

from fashion_mnist import normalise, test_set
from fashion_replica import (accuracy, add_recipe_arguments, fixed_subset, half_epoch_steps, int_list, new_run,
                             recompute_statistics, run_steps, training_data)


def lagged_accuracy(model, fresh, earlier, lag_steps, age, r, x, y):
    """The test accuracy in eval mode with every BatchNorm's running mean and variance moved back by
    (r - 1) age d, d = (fresh - earlier) / lag_steps their drift per step (the variance at least 1e-5
    of the fresh one); the model's state is put back."""
    saved = copy.deepcopy(model.state_dict())
    state = model.state_dict()
    for key in fresh:
        if key.endswith("running_mean") or key.endswith("running_var"):
            drift = (fresh[key] - earlier[key]) / lag_steps
            moved = saved[key] - (r - 1) * age * drift
            if key.endswith("running_var"):
                moved = torch.maximum(moved, 1e-5 * fresh[key])
            state[key].copy_(moved)
    acc = accuracy(model, x, y)
    model.load_state_dict(saved)
    return acc


def drift_per_step(fresh, earlier, lag_steps):
    """The statistics' drift per step over every BatchNorm channel, root mean square: of the mean in
    units of the channel's standard deviation, and of the variance relative to itself (recomputed
    now against recomputed lag_steps steps before)."""
    mean_sq, var_sq, n = 0.0, 0.0, 0
    for key in fresh:
        if key.endswith("running_mean"):
            var = fresh[key[:-len("mean")] + "var"]
            mean_sq += (((fresh[key] - earlier[key]) / lag_steps) ** 2 / var).sum().item()
            v0 = earlier[key[:-len("mean")] + "var"]
            var_sq += (((var - v0) / lag_steps / var) ** 2).sum().item()
            n += fresh[key].numel()
    return math.sqrt(mean_sq / n), math.sqrt(var_sq / n)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=5)
    parser.add_argument("--probe-at", default="", help="steps after which to probe (default: every half epoch)")
    parser.add_argument("--recompute-images", type=int, default=8192)
    parser.add_argument("--lag-factors", default="", help="lag factors R to read the accuracy at, e.g. 2,3.46")
    parser.add_argument("--lag-steps", type=int, default=10, help="steps over which the statistics' drift is read")
    a = parser.parse_args()
    try:
        factors = [float(v) for v in a.lag_factors.split(",") if v.strip()]
    except ValueError:
        sys.exit(f"bn-eval-probe: --lag-factors needs numbers separated by commas, not {a.lag_factors!r}")
    if any(r < 0 for r in factors) or a.lag_steps < 1:
        sys.exit("bn-eval-probe: --lag-factors needs factors of at least 0, --lag-steps at least 1")
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
    age = 1 / (1 - 0.9 ** a.micro_batches)
    earlier_at = {p - a.lag_steps: p for p in probe_at if p > a.lag_steps} if factors else {}
    earlier = {}
    if factors:
        print(f"# lag: the statistics' drift over {a.lag_steps} steps, the moving average's mean age {age:.3f} steps")
    print("#   step  epochs  train_loss  test_eval  test_recomputed  recomputed-eval  test_train_mode" +
          "".join(f"  test_lag_x{r:g}" for r in factors) + ("  drift_mean  drift_var" if factors else ""))
    window, window_n = 0.0, 0
    for s, _, loss, _, _ in run_steps(model, opt, padded, labels, a, gen, "bn-eval-probe"):
        window += loss
        window_n += 1
        if s in earlier_at:
            saved = copy.deepcopy(model.state_dict())
            recompute_statistics(model, x_fixed, micro)
            earlier[earlier_at[s]] = copy.deepcopy(model.state_dict())
            model.load_state_dict(saved)
        if s in probe_at:
            eval_acc = accuracy(model, x_test, test_labels)
            train_mode_acc = accuracy(model, x_test, test_labels, train_mode=True)
            saved = copy.deepcopy(model.state_dict())
            recompute_statistics(model, x_fixed, micro)
            recomputed_acc = accuracy(model, x_test, test_labels)
            fresh = copy.deepcopy(model.state_dict())
            model.load_state_dict(saved)
            lagged = [lagged_accuracy(model, fresh, earlier[s], a.lag_steps, age, r, x_test, test_labels)
                      if s in earlier else float("nan") for r in factors]
            print(f"{s:7d}  {s / steps_per_epoch:6.3f}  {window / window_n:10.4f}  {eval_acc:9.4f}  "
                  f"{recomputed_acc:15.4f}  {(recomputed_acc - eval_acc) * 100:+14.1f}pt  {train_mode_acc:15.4f}" +
                  "".join(f"  {v:{len(f'test_lag_x{r:g}')}.4f}" for r, v in zip(factors, lagged)) +
                  ("".join(f"  {v:10.6f}" for v in drift_per_step(fresh, earlier[s], a.lag_steps))
                   if s in earlier else ""),
                  flush=True)
            window, window_n = 0.0, 0


if __name__ == "__main__":
    main()
