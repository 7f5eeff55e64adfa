"""The C++ trainer's fashion-cnn-gap recipe in PyTorch, for the scripts that replay it (floor-probe.py,
pace-probe.py, bn-noise-probe.py): the model (models/fashion_cnn.h's layers and default
initialisation), measure's augmentation for Fashion-MNIST, one optimiser step over BatchNorm
micro-batches as measure's micro_batch_backward takes it, the run's loop of such steps, the loss on a
fixed set, snapshots of the training state to probe from, and the flags the replays share. A
replica, not `measure`: the random draws are PyTorch's."""
import copy
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from fashion_mnist import DEFAULT_DIR, MEAN, STD, normalise, training_set

PAD = 2  # the crop padding measure uses for Fashion-MNIST


def add_recipe_arguments(parser, epochs):
    """The flags every replay takes: the data, and the recipe's lr, momentum, batch, BatchNorm
    micro-batches, epochs (default `epochs`) and seed."""
    parser.add_argument("--data", default=DEFAULT_DIR)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--micro-batches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--seed", type=int, default=0)


def int_list(text, tool, flag):
    """A comma-separated flag's whole numbers, sorted and without repeats; exits naming the flag where
    one is not a whole number."""
    try:
        return sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        sys.exit(f"{tool}: {flag} needs whole numbers separated by commas, not {text!r}")


def training_data(folder, tool):
    """The training images normalised as measure does, the same padded for the random crop (the
    padding a black pixel, normalised), and the labels."""
    images, labels = training_set(folder, tool)
    x = normalise(images)
    return x, F.pad(x, (PAD, PAD, PAD, PAD), value=(0 - MEAN) / STD), labels


def new_run(a):
    """The recipe's start: the model initialised from a.seed (fashion-cnn-gap, or fashion-cnn where
    a.model says so), its SGD (a.lr, a.momentum, weight decay 5e-4) and the generator of the run's
    draws (batch order and augmentation)."""
    torch.manual_seed(a.seed)
    model = FashionCnnGap(pooled_head=getattr(a, "model", "fashion-cnn-gap") != "fashion-cnn")
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=5e-4)
    return model, opt, torch.Generator().manual_seed(a.seed)


def fixed_subset(x, y, count):
    """`count` of the images and their labels, drawn once with a fixed seed (the same at every run)."""
    order = torch.randperm(y.numel(), generator=torch.Generator().manual_seed(12345))[:count]
    return x[order], y[order]


def half_epoch_steps(a, n, probe_at, tool):
    """The run's steps per epoch and the steps to probe after: `probe_at`, or every half epoch where
    it is empty; exits naming `tool` where a step is outside the run."""
    steps_per_epoch = math.ceil(n / a.batch)
    total = steps_per_epoch * a.epochs
    half = max(1, steps_per_epoch // 2)
    probe_at = probe_at or list(range(half, total + 1, half))
    if probe_at[0] < 1 or probe_at[-1] > total:
        sys.exit(f"{tool}: --probe-at needs steps in [1, {total}]")
    return steps_per_epoch, probe_at


def snapshot(model, opt):
    return copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())


def restore(model, opt, state):
    """Back to a snapshot, the optimiser's lr included."""
    model.load_state_dict(state[0])
    opt.load_state_dict(state[1])


class FashionCnnGap(nn.Module):
    """fashion-cnn-gap; with pooled_head=False, fashion-cnn (fc on the flattened 64x7x7 map)."""

    def __init__(self, pooled_head=True):
        super().__init__()
        self.pooled_head = pooled_head
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc = nn.Linear(64 if pooled_head else 64 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(x.mean((2, 3)) if self.pooled_head else x.flatten(1))


def augment(padded, idx, gen):
    """Random 28x28 crops of the padded images idx, each flipped with probability 1/2."""
    n = idx.numel()
    dy = torch.randint(0, 2 * PAD + 1, (n,), generator=gen)
    dx = torch.randint(0, 2 * PAD + 1, (n,), generator=gen)
    flip = torch.rand(n, generator=gen) < 0.5
    out = torch.empty(n, 1, 28, 28)
    for k in range(n):
        img = padded[idx[k], :, dy[k]:dy[k] + 28, dx[k]:dx[k] + 28]
        out[k] = img.flip(-1) if flip[k] else img
    return out


def step(model, opt, x, y, micro):
    """One optimiser step over micro-batches (each its own forward, as measure's micro_batch_backward);
    returns the batch's mean loss and the squared norms of the micro-batches' mean gradient and of the
    batch gradient."""
    opt.zero_grad(set_to_none=True)
    params = list(model.parameters())
    total = [torch.zeros_like(p) for p in params]
    small_sq = 0.0
    loss_sum = 0.0
    for xs, ys in zip(x.chunk(micro), y.chunk(micro)):
        loss = F.cross_entropy(model(xs), ys)
        grads = torch.autograd.grad(loss, params)
        small_sq += sum((g * g).sum().item() for g in grads) / micro
        for t, g in zip(total, grads):
            t += g / micro
        loss_sum += loss.item() / micro
    for p, t in zip(params, total):
        p.grad = t
    opt.step()
    return loss_sum, small_sq, sum((t * t).sum().item() for t in total)


def run_steps(model, opt, padded, labels, a, gen, tool):
    """The recipe's run: a.epochs epochs, each of a.batch-image batches in an order drawn from gen,
    augmented with gen's draws. Yields (step, images, loss, small_sq, big_sq) after each step (the
    last three as step() returns them), so the caller probes between steps; prints each epoch's end;
    exits with an error naming `tool` where the loss is not finite."""
    n = labels.numel()
    steps_per_epoch = math.ceil(n / a.batch)
    started = time.time()
    s = 0
    for epoch in range(a.epochs):
        order = torch.randperm(n, generator=gen)
        for b in range(steps_per_epoch):
            idx = order[b * a.batch:(b + 1) * a.batch]
            loss, small_sq, big_sq = step(model, opt, augment(padded, idx, gen), labels[idx], a.micro_batches)
            if not math.isfinite(loss):
                sys.exit(f"{tool}: the loss is not finite at step {s + 1}")
            s += 1
            yield s, idx.numel(), loss, small_sq, big_sq
        print(f"# epoch {epoch + 1} done after {time.time() - started:.0f} s", flush=True)


def train_drawn(model, opt, padded, labels, steps, batch, lr, micro, gen, tool):
    """`steps` optimiser steps at `lr` on batches of `batch` images drawn with replacement, and
    augmented, with gen's draws (a probe's own, so the run's are untouched); exits naming `tool`
    where a loss is not finite."""
    for g in opt.param_groups:
        g["lr"] = lr
    n = labels.numel()
    for _ in range(steps):
        idx = torch.randint(0, n, (batch,), generator=gen)
        loss, _, _ = step(model, opt, augment(padded, idx, gen), labels[idx], micro)
        if not math.isfinite(loss):
            sys.exit(f"{tool}: a probe's loss is not finite")


def cooled_losses(model, opt, padded, labels, depths, batch, lr, micro, gen, x, y, tool, train_micro=None):
    """The fixed set (x, y)'s loss after cooling a copy of (model, opt) at `lr` to each cumulative
    depth in `depths` (train_drawn's steps), read as probe_loss reads it with `train_micro`; both are
    restored, the optimiser's lr included."""
    saved = snapshot(model, opt)
    out, done = [], 0
    for depth in depths:
        train_drawn(model, opt, padded, labels, depth - done, batch, lr, micro, gen, tool)
        done = depth
        out.append(probe_loss(model, x, y, train_micro))
    restore(model, opt, saved)
    return out


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


def probe_loss(model, x, y, train_micro=None):
    """The mean loss of (x, y): in eval mode (BatchNorm on its running statistics), or with
    `train_micro` in training mode, BatchNorm normalising each `train_micro` images on their own as
    the run's steps do (the loss the trainers record); the running statistics are left as they were."""
    saved = [b.detach().clone() for b in model.buffers()] if train_micro else []
    if not train_micro:
        model.eval()
    chunk = train_micro or 1000
    with torch.no_grad():
        loss = sum(F.cross_entropy(model(xs), ys, reduction="sum").item()
                   for xs, ys in zip(x.split(chunk), y.split(chunk))) / y.numel()
        for b, before in zip(model.buffers(), saved):
            b.copy_(before)
    model.train()
    return loss
