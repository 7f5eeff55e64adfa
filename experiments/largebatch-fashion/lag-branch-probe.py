#!/usr/bin/python3
"""Does a short branch at a run's batch and lr, from the baseline's state, carry that run's eval-mode lag? (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The eval-mode lag in a branch")

The test accuracy the trainers record is eval mode's: BatchNorm on its running statistics, which
lag the weights. At raised lrs that lag costs far more than at the baseline's, and the cost is
the network's own sensitivity to stale statistics, which the baseline's weights do not carry
("The eval-mode lag, read from the baseline: refuted"). If a branch of some tens of steps at the
run's batch and lr makes the network as sensitive as the run's own, a probe from the baseline's
state could measure the lag's cost for the model. This script asks that of the PyTorch replica
(fashion_replica.py): it trains the baseline recipe to --branch-at steps, then for each --branches
entry BATCHxLR runs a copy from that state at that batch (in --micro-batches BatchNorm
micro-batches) and lr, batches drawn with replacement, and after each --read-at step count reads
the test accuracy in eval mode as the trainers do and after BatchNorm's statistics are recomputed
on the weights as they are (as bn-eval-probe.py does): their difference is the lag's cost.

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 experiments/largebatch-fashion/lag-branch-probe.py [--branch-at 938] [--branches 128x0.1,1536x0.3464,2048x0.1]
        [--read-at 25,50,75,100] [--draws 1] [--seed 0]
"""
import argparse
import copy
import sys
import time

import torch

from fashion_mnist import normalise, test_set
from fashion_replica import (accuracy, add_recipe_arguments, fixed_subset, int_list, new_run, recompute_statistics,
                             restore, run_steps, snapshot, training_data, train_drawn)

TOOL = "lag-branch-probe"


def recomputed_accuracy(model, x_fixed, micro, x, y):
    """The accuracy in eval mode after BatchNorm's statistics are estimated again on the weights as
    they are (recompute_statistics on x_fixed); the running statistics are put back."""
    saved = copy.deepcopy(model.state_dict())
    recompute_statistics(model, x_fixed, micro)
    acc = accuracy(model, x, y)
    model.load_state_dict(saved)
    return acc


def parse_branches(text):
    branches = []
    for item in text.split(","):
        try:
            batch, lr = item.lower().split("x")
            branches.append((int(batch), float(lr)))
        except ValueError:
            sys.exit(f"{TOOL}: --branches needs BATCHxLR entries separated by commas, not {item!r}")
    return branches


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=5)
    parser.add_argument("--branch-at", type=int, default=938, help="the baseline's step to branch from (938: two epochs)")
    parser.add_argument("--branches", default="128x0.1,1536x0.3464,2048x0.1", help="BATCHxLR entries")
    parser.add_argument("--read-at", default="25,50,75,100", help="branch steps after which to read")
    parser.add_argument("--draws", type=int, default=1, help="independent draws of each branch's batches")
    parser.add_argument("--recompute-images", type=int, default=8192)
    a = parser.parse_args()
    branches = parse_branches(a.branches)
    read_at = int_list(a.read_at, TOOL, "--read-at")
    if not read_at or read_at[0] < 1 or a.draws < 1 or a.branch_at < 1:
        sys.exit(f"{TOOL}: need --read-at steps >= 1, --draws >= 1 and --branch-at >= 1")
    if any(b % a.micro_batches or b // a.micro_batches < 2 or lr <= 0 for b, lr in branches):
        sys.exit(f"{TOOL}: every branch batch must be a multiple of --micro-batches of at least 2 images a "
                 "micro-batch, every lr > 0")
    torch.set_num_threads(1)
    x_all, padded, labels = training_data(a.data, TOOL)
    test_images, test_labels = test_set(a.data, TOOL)
    x_test = normalise(test_images)
    x_fixed, _ = fixed_subset(x_all, labels, a.recompute_images)
    a.epochs = -(-a.branch_at * a.batch // labels.numel())  # enough epochs to reach the branch step

    model, opt, gen = new_run(a)
    started = time.time()
    for s, _, _, _, _ in run_steps(model, opt, padded, labels, a, gen, TOOL):
        if s == a.branch_at:
            break
    base_micro = a.batch // a.micro_batches
    base_eval = accuracy(model, x_test, test_labels)
    base_recomputed = recomputed_accuracy(model, x_fixed, base_micro, x_test, test_labels)
    print(f"# fashion-cnn-gap (PyTorch replica), baseline batch {a.batch} lr {a.lr} momentum {a.momentum}, seed "
          f"{a.seed}, branched after step {a.branch_at} ({time.time() - started:.0f} s); test accuracy on the "
          f"10,000 test images, eval mode and with the statistics recomputed on {a.recompute_images} training images")
    print(f"# at the branch: eval {base_eval:.4f}, recomputed {base_recomputed:.4f}, "
          f"recomputed-eval {(base_recomputed - base_eval) * 100:+.1f}pt")
    print("#  batch      lr  draw  step  test_eval  test_recomputed  recomputed-eval")
    state = snapshot(model, opt)
    for batch, lr in branches:
        micro = batch // a.micro_batches
        gaps = []
        for draw in range(a.draws):
            restore(model, opt, state)
            draw_gen = torch.Generator().manual_seed(1000 * (draw + 1) + a.seed)
            done = 0
            for k in read_at:
                train_drawn(model, opt, padded, labels, k - done, batch, lr, a.micro_batches, draw_gen, TOOL)
                done = k
                ev = accuracy(model, x_test, test_labels)
                rc = recomputed_accuracy(model, x_fixed, micro, x_test, test_labels)
                gaps.append(rc - ev)
                print(f"{batch:7d}  {lr:6.4f}  {draw + 1:4d}  {k:4d}  {ev:9.4f}  {rc:15.4f}  {(rc - ev) * 100:+14.1f}pt",
                      flush=True)
        print(f"# {batch}x{lr:g}: mean recomputed-eval {sum(gaps) / len(gaps) * 100:+.1f}pt over {len(gaps)} readings "
              f"({time.time() - started:.0f} s)", flush=True)
    restore(model, opt, state)


if __name__ == "__main__":
    main()
