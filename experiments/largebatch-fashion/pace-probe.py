#!/usr/bin/python3
"""Where a larger batch's progress per step comes from, with the floor taken out (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The pace, measured: a warm-start probe").

Trains fashion-cnn-gap as `measure baseline` does (the PyTorch replica of floor-probe.py:
--batch in --micro-batches BatchNorm micro-batches, crop with padding 2 and flip, SGD with
momentum and weight decay 5e-4, constant lr) and reads two things, each on the loss of a fixed set
of training images (the first --probe-images, no augmentation, BatchNorm in eval mode, or with
--probe-mode train over each micro-batch of the baseline's size, the running statistics untouched):

- at --log-at steps: the loss, the loss after *cooling* (--cool-steps more steps at --cool times
  the lr at batch --cool-batch, from a copy of the model and optimiser state, which is then
  restored; a list such as 50,200,800 reads the loss after each of those cumulative depths), the
  squared norms of the conv and fc weights, and the epoch's mean training loss.
  Cooling takes away the noise floor (its level is proportional to the lr), so the cooled loss is
  the progress the run has made, the floor left out. Two runs at different batches are compared
  on their cooled losses, not on their losses.
- at --pace-at steps (the baseline run): from the run's state, --pace-steps steps at --ratio times
  the batch (at --lr-ratio times the lr, 1 by default, from the same momentum buffer) against the
  baseline batch continued for K, 2K, 4K, ... n K steps (rounded), n = min(16, ratio x lr-ratio) but at
  least the ratio; each arm cooled as above. Lists (--ratio 16,16,4 --lr-ratio 1,4,4) probe each
  pair in turn from the same state. The baseline steps the larger batch's steps are
  worth (where the continued baseline's cooled loss falls to the larger batch's), per step, is the
  *gain*: McCandlish's relation gives (B_noise + B) / (B_noise + B_0) for a tuned lr; the plain
  step equation at constant lr gives at most 2 / (2 - x_0); a quadratic with heavy-ball momentum
  gives 1 (the batch moves only the floor).
  With two or more pairs, the step equation's two coefficients are solved from the first two
  pairs' cooled gains and give the others' (step_equation_check): does the equation's form carry
  from the probes it was solved on to the rest?

Run with Debian's PyTorch (python3-torch):
    /usr/bin/python3 experiments/largebatch-fashion/pace-probe.py [--momentum 0.9] [--batch 128] [--epochs 4] [--seed 0]
Every draw of the probes comes from its own generator, so the run goes on as if it had not been
probed.
"""
import argparse
import math
import sys

import torch

from fashion_replica import (add_recipe_arguments, cooled_losses, int_list, new_run, probe_loss, restore,
                             run_steps, snapshot, train_drawn, training_data)


class Probe:
    """What the probes share: the data, the fixed set and their own random draws."""

    def __init__(self, a, padded, labels, x_probe, y_probe):
        self.a, self.padded, self.labels = a, padded, labels
        self.x_probe, self.y_probe = x_probe, y_probe
        self.steps_per_epoch = math.ceil(labels.numel() / a.batch)
        # training mode reads BatchNorm over each micro-batch of the baseline's size
        self.train_micro = a.batch // a.micro_batches if a.probe_mode == "train" else None
        self.gen = torch.Generator().manual_seed(a.seed + 1_000_003 if a.probe_seed is None else a.probe_seed)

    def train(self, model, opt, steps, batch, lr):
        train_drawn(model, opt, self.padded, self.labels, steps, batch, lr, self.a.micro_batches, self.gen, "pace-probe")

    def loss(self, model):
        return probe_loss(model, self.x_probe, self.y_probe, self.train_micro)

    def cooled(self, model, opt):
        """The fixed set's losses after cooling from a copy of (model, opt) to each depth in --cool-steps;
        both are restored."""
        a = self.a
        return cooled_losses(model, opt, self.padded, self.labels, a.cool_steps, a.cool_batch, a.lr * a.cool,
                             a.micro_batches, self.gen, self.x_probe, self.y_probe, "pace-probe",
                             self.train_micro)

    def pace(self, model, opt, s, ratio, lr_ratio):
        """The gains per step of `ratio` x the batch at `lr_ratio` x the lr from the state at step s, one
        per cooling depth; (model, opt) are restored."""
        a = self.a
        saved = snapshot(model, opt)
        self.train(model, opt, a.pace_steps, a.batch * ratio, a.lr * lr_ratio)
        big_loss, big_cooled = self.loss(model), self.cooled(model, opt)
        restore(model, opt, saved)
        counts, n = [], a.pace_steps
        last = round(a.pace_steps * max(ratio, min(16, ratio * lr_ratio)))
        while n < last:
            counts.append(n)
            n *= 2
        counts.append(last)
        done, losses, cooled = 0, [], []
        for n in counts:
            self.train(model, opt, n - done, a.batch, a.lr)
            done = n
            losses.append(self.loss(model))
            cooled.append(self.cooled(model, opt))
        restore(model, opt, saved)
        names = cooled_names(a.cool_steps)
        at_lr = "" if lr_ratio == 1 else f" and {lr_ratio:g} x the lr"
        print(f"# pace at step {s}: {a.pace_steps} steps at batch {a.batch * ratio}{at_lr}: loss {big_loss:.4f}, "
              + ", ".join(f"{name} {v:.4f}" for name, v in zip(names, big_cooled)))
        print("#   baseline steps  " + "  ".join(f"{n:7d}" for n in counts))
        print("#   loss            " + "  ".join(f"{v:7.4f}" for v in losses))
        for k, name in enumerate(names):
            print(f"#   {name:16s}" + "  ".join(f"{c[k]:7.4f}" for c in cooled))
        arms = [[c[k] for c in cooled] for k in range(len(names))]
        gains = [gain_value(counts, arm, big, a.pace_steps) for arm, big in zip(arms, big_cooled)]
        pair = "" if len(a.ratio) == 1 and lr_ratio == 1 else f"  ratio {ratio} lr_ratio {lr_ratio:g}"
        print(f"pace  {s:6d}  {s / self.steps_per_epoch:6.3f}{pair}  "
              + "  ".join(f"gain_{name} {gain_text(g, counts, arm, big, a.pace_steps)}"
                          for name, g, arm, big in zip(names, gains, arms, big_cooled))
              + f"  gain_loss {gain(counts, losses, big_loss, a.pace_steps)}", flush=True)
        return gains


def step_equation_check(pairs, gains):
    """The plain step equation's per-step gain of r x the batch at rho x the lr over the baseline's,
    rho (1 - rho (alpha + nu / r) / 2) / (1 - (alpha + nu) / 2) (alpha = lr G^T H G / |G|^2, nu = lr
    tr(H Sigma) / (B_0 |G|^2)), solved for (alpha, nu) from the first two pairs' gains and evaluated
    at the others; lines of text, or a reason where it cannot be solved."""
    (r1, p1), (r2, p2) = pairs[0], pairs[1]
    g1, g2 = gains[0], gains[1]
    if g1 is None or g2 is None:
        return ["step equation: not solved (a gain of the first two pairs is outside its readings)"]
    # g D0 = p (1 - p u / 2), u = alpha + nu / r, D0 = 1 - (alpha + nu) / 2: linear in (alpha, nu)
    # once D0 is known; write alpha + nu = 2 (1 - D0) and solve the 3x3 system by elimination.
    # Unknowns (alpha, nu, D0): p^2/2 alpha + p^2/(2r) nu + g D0 = p; alpha + nu + 2 D0 = 2.
    rows = [[p1 * p1 / 2, p1 * p1 / (2 * r1), g1, p1],
            [p2 * p2 / 2, p2 * p2 / (2 * r2), g2, p2],
            [1.0, 1.0, 2.0, 2.0]]
    try:
        alpha, nu, d0 = solve3(rows)
    except ZeroDivisionError:
        return ["step equation: not solved (the first two pairs do not separate the curvature from the noise)"]
    out = [f"step equation from pairs 1-2: alpha {alpha:.3f}  nu {nu:.3f}  1-(alpha+nu)/2 {d0:.3f}"
           + ("" if alpha >= 0 and nu >= 0 and d0 > 0 else "  (outside the equation's range: alpha, nu >= 0, alpha + nu < 2)")]
    for (r, p), g in zip(pairs[2:], gains[2:]):
        pred = p * (1 - p * (alpha + nu / r) / 2) / d0
        meas = "outside its readings" if g is None else f"{g:.2f}, predicted/measured {pred / g:.2f}"
        out.append(f"step equation at ratio {r} lr_ratio {p:g}: predicted {pred:.2f}, measured {meas}")
    return out


def print_step_equation_check(pairs, gains, depths, where):
    """step_equation_check's lines for each cooling depth; gains[pair][depth]."""
    for k, name in enumerate(cooled_names(depths)):
        for line in step_equation_check(pairs, [g[k] for g in gains]):
            print(f"# {where}, {name}: {line}", flush=True)


def geometric_mean(values):
    return None if any(v is None for v in values) else math.exp(sum(math.log(v) for v in values) / len(values))


def solve3(rows):
    """Gaussian elimination with partial pivoting on a 3x4 augmented matrix; ZeroDivisionError where singular."""
    m = [list(r) for r in rows]
    for c in range(3):
        pivot = max(range(c, 3), key=lambda i: abs(m[i][c]))
        if abs(m[pivot][c]) < 1e-12:
            raise ZeroDivisionError
        m[c], m[pivot] = m[pivot], m[c]
        for i in range(3):
            if i != c:
                f = m[i][c] / m[c][c]
                m[i] = [x - f * y for x, y in zip(m[i], m[c])]
    return [m[i][3] / m[i][i] for i in range(3)]


def cooled_names(depths):
    """'cooled' for one cooling depth (the output as it was first committed), 'cooled@N' for several."""
    return ["cooled"] if len(depths) == 1 else [f"cooled@{d}" for d in depths]


def gain(counts, values, target, steps):
    """The baseline steps at which values (read after counts steps) first fall to target, log-linear
    between readings, per larger-batch step; '<' or '>' where target is outside the readings."""
    return gain_text(gain_value(counts, values, target, steps), counts, values, target, steps)


def gain_text(g, counts, values, target, steps):
    """gain()'s text for its value g (None: outside the readings, shown as the bound it is past)."""
    if g is not None:
        return f"{g:.2f}"
    return f"<{counts[0] / steps:.2f}" if target >= values[0] else f">{counts[-1] / steps:.2f}"


def gain_value(counts, values, target, steps):
    """gain() as a number; None where target is outside the readings."""
    if target >= values[0]:
        return None
    for k in range(1, len(counts)):
        if values[k] <= target:
            f = (values[k - 1] - target) / (values[k - 1] - values[k])
            return math.exp(math.log(counts[k - 1]) + f * (math.log(counts[k]) - math.log(counts[k - 1]))) / steps
    return None


def steps_list(text, total, name):
    out = int_list(text, "pace-probe", name)
    if out and (out[0] < 1 or out[-1] > total):
        sys.exit(f"pace-probe: {name} needs steps in [1, {total}]")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_arguments(parser, epochs=4)
    parser.add_argument("--log-at", default="", help="steps after which to log (default: every quarter epoch)")
    parser.add_argument("--pace-at", default="", help="steps after which to probe the pace (default: none)")
    parser.add_argument("--pace-steps", type=int, default=30, help="the larger batch's steps in a pace probe")
    parser.add_argument("--ratio", default="16", help="the larger batch as a multiple of --batch; a comma list probes each in turn")
    parser.add_argument("--lr-ratio", default="",
                        help="the larger batch's lr as a multiple of --lr, one per --ratio (default: 1 for each)")
    parser.add_argument("--cool", type=float, default=0.1, help="the cooling lr as a fraction of --lr")
    parser.add_argument("--cool-steps", default="50",
                        help="cooling steps; a comma list reads the loss at each cumulative depth")
    parser.add_argument("--cool-batch", type=int, default=128)
    parser.add_argument("--probe-images", type=int, default=5000)
    parser.add_argument("--probe-seed", type=int, default=None,
                        help="the seed of the probes' own draws (default: --seed + 1000003); another gives other draws "
                             "from the same training run")
    parser.add_argument("--probe-mode", choices=["eval", "train"], default="eval",
                        help="read the fixed set's loss in eval mode (running statistics) or in training mode, "
                             "BatchNorm over each micro-batch of the baseline's size (the loss the trainers record)")
    a = parser.parse_args()
    a.cool_steps = int_list(a.cool_steps, "pace-probe", "--cool-steps")
    try:
        a.ratio = [int(v) for v in a.ratio.split(",")]
    except ValueError:
        sys.exit(f"pace-probe: --ratio needs whole numbers separated by commas, got '{a.ratio}'")
    try:
        a.lr_ratio = [float(v) for v in a.lr_ratio.split(",")] if a.lr_ratio else [1.0] * len(a.ratio)
    except ValueError:
        sys.exit(f"pace-probe: --lr-ratio needs numbers separated by commas, got '{a.lr_ratio}'")
    if len(a.lr_ratio) != len(a.ratio) or min(a.lr_ratio) <= 0:
        sys.exit("pace-probe: --lr-ratio needs one positive value per --ratio")
    if not (0 <= a.momentum < 1) or a.lr <= 0 or not (0 < a.cool < 1) or not a.cool_steps or \
            min(a.cool_steps[0], a.pace_steps) < 1:
        sys.exit("pace-probe: need 0 <= --momentum < 1, --lr > 0, 0 < --cool < 1, --cool-steps and --pace-steps >= 1")
    if not a.ratio or min(a.ratio) < 2 or a.batch % a.micro_batches or a.cool_batch % a.micro_batches:
        sys.exit("pace-probe: need --ratio >= 2, and --batch and --cool-batch multiples of --micro-batches")
    torch.set_num_threads(1)

    x_all, padded, labels = training_data(a.data, "pace-probe")
    n = labels.numel()
    steps_per_epoch = math.ceil(n / a.batch)
    total = steps_per_epoch * a.epochs
    quarter = max(1, steps_per_epoch // 4)
    log_at = steps_list(a.log_at or ",".join(str(s) for s in range(quarter, total + 1, quarter)), total, "--log-at")
    pace_at = steps_list(a.pace_at, total, "--pace-at")

    pairs, probed = list(zip(a.ratio, a.lr_ratio)), []
    model, opt, gen = new_run(a)
    probe = Probe(a, padded, labels, x_all[:a.probe_images], labels[:a.probe_images])
    print(f"# fashion-cnn-gap (PyTorch replica), lr {a.lr}, momentum {a.momentum}, batch {a.batch} in "
          f"{a.micro_batches} micro-batches, seed {a.seed}; cooling: {','.join(map(str, a.cool_steps))} steps at {a.cool} x lr, batch "
          f"{a.cool_batch}; loss on the first {a.probe_images} training images ({a.probe_mode} mode)")
    print("#     step  epochs  train_loss  loss    " + "  ".join(f"{n:6s}" for n in cooled_names(a.cool_steps))
          + "  |w_conv1|^2  |w_conv2|^2  |w_fc|^2")
    window, window_n = 0.0, 0
    for s, _, loss, _, _ in run_steps(model, opt, padded, labels, a, gen, "pace-probe"):
        window += loss
        window_n += 1
        if s in log_at:
            norms = [(m.weight * m.weight).sum().item() for m in (model.conv1, model.conv2, model.fc)]
            print(f"log  {s:6d}  {s / steps_per_epoch:6.3f}  {window / window_n:10.4f}  {probe.loss(model):6.4f}  "
                  + "  ".join(f"{v:6.4f}" for v in probe.cooled(model, opt)) + "  "
                  + "  ".join(f"{v:11.3f}" for v in norms), flush=True)
            window, window_n = 0.0, 0
        if s in pace_at:
            gains = [probe.pace(model, opt, s, r, p) for r, p in pairs]
            probed.append(gains)
            if len(pairs) >= 2:
                print_step_equation_check(pairs, gains, a.cool_steps, f"step {s}")
    if len(pairs) >= 2 and len(probed) > 1:
        # each pair's gains over the probed steps, geometric mean (None where one is outside its readings)
        mean = [[geometric_mean([g[p][k] for g in probed]) for k in range(len(a.cool_steps))] for p in range(len(pairs))]
        print_step_equation_check(pairs, mean, a.cool_steps, f"the {len(probed)} probed steps' geometric mean")


if __name__ == "__main__":
    main()
