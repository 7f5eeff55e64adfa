"""Debian's Fashion-MNIST (dataset-fashion-mnist) for the scripts that replay a piece of the C++
trainer in PyTorch (head-stiffness.py, floor-probe.py): the IDX files, plain or gzipped, and the
normalisation `measure` applies."""
import gzip
import os
import sys

import torch

MEAN, STD = 0.2860, 0.3530  # measure/data/image_set.h: the training set's pixel mean and std
DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path, offset, shape):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    return torch.frombuffer(bytearray(data[offset:]), dtype=torch.uint8).reshape(shape)


def find(folder, stem, tool):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    sys.exit(f"{tool}: {folder}: no {stem} or {stem}.gz (install dataset-fashion-mnist or pass --data)")


def training_set(folder, tool):
    """The 60,000 training images (uint8, N x 1 x 28 x 28) and their labels (int64)."""
    images = read_idx(find(folder, "train-images-idx3-ubyte", tool), 16, (-1, 1, 28, 28))
    labels = read_idx(find(folder, "train-labels-idx1-ubyte", tool), 8, (-1,)).long()
    return images, labels


def test_set(folder, tool):
    """The 10,000 test images (uint8, N x 1 x 28 x 28) and their labels (int64)."""
    images = read_idx(find(folder, "t10k-images-idx3-ubyte", tool), 16, (-1, 1, 28, 28))
    labels = read_idx(find(folder, "t10k-labels-idx1-ubyte", tool), 8, (-1,)).long()
    return images, labels


def normalise(images):
    return (images.float() / 255 - MEAN) / STD
