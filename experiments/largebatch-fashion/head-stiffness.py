#!/usr/bin/python3
"""Why fashion-cnn's loss rises to 25-32 in its first steps (docs/LARGE_BATCH.md, "The early rise").

For each head of the Fashion-MNIST CNN (models/fashion_cnn.h: fc on the flattened 64x7x7 map, or
fc on its global average as fashion-cnn-gap), at initialisation, on the first 128 real training
images (Debian's dataset-fashion-mnist, normalised as `measure` does), it prints:
  |h|^2      the mean squared norm of the head's input per image;
  eps_max    |g|^2 / g^T H g along the head's own gradient g (H: the head's exact Hessian of the
             cross-entropy, diag(p) - p p^T through the logits): the largest lr at which one
             plain SGD step along g lowers the loss, as `measure baseline` reads eps_max for the
             whole network;
  logits     the mean over images of the largest logit change one plain SGD step at --lr makes.
Run with Debian's PyTorch (python3-torch):  /usr/bin/python3 experiments/largebatch-fashion/head-stiffness.py [--lr 0.1]
The layers and their default initialisation are the C++ module's; the draws for a seed are
PyTorch's, not necessarily those of `measure baseline --seed`.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from fashion_mnist import DEFAULT_DIR, normalise, training_set


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DIR)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--images", type=int, default=128)
    parser.add_argument("--seeds", type=int, default=5)
    a = parser.parse_args()
    n = a.images
    images, labels = training_set(a.data, "head-stiffness")
    x, labels = normalise(images[:n]), labels[:n]
    print(f"head              seed    |h|^2   eps_max  lr/eps_max  logits moved at lr {a.lr}")
    for pooled in (False, True):
        for seed in range(a.seeds):
            torch.manual_seed(seed)
            conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
            bn1 = nn.BatchNorm2d(32)
            conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
            bn2 = nn.BatchNorm2d(64)
            fc = nn.Linear(64 if pooled else 64 * 7 * 7, 10)
            with torch.no_grad():
                h = F.max_pool2d(F.relu(bn1(conv1(x))), 2)
                h = F.max_pool2d(F.relu(bn2(conv2(h))), 2)
                h = h.mean((2, 3)) if pooled else h.flatten(1)
            z = fc(h)
            loss = F.cross_entropy(z, labels)
            g_w, g_b = torch.autograd.grad(loss, [fc.weight, fc.bias])
            dz = h @ g_w.t() + g_b  # the logits' change per unit lr along g
            p = F.softmax(z, 1).detach()
            g_sq = (g_w ** 2).sum() + (g_b ** 2).sum()
            g_h_g = ((dz ** 2 * p).sum(1) - (dz * p).sum(1) ** 2).mean()
            eps_max = (g_sq / g_h_g).item()
            moved = a.lr * dz.abs().max(1).values.mean().item()
            name = "fashion-cnn-gap" if pooled else "fashion-cnn"
            print(f"{name:16s} {seed:5d} {(h ** 2).sum(1).mean().item():8.0f} {eps_max:9.4f} {a.lr / eps_max:11.1f}"
                  f"  {moved:6.1f}")


if __name__ == "__main__":
    main()
