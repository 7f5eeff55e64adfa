"""Synthetic CIFAR-10 binary files, for machines without the real data set.

    /usr/bin/python3 measure/pytorch/synthetic.py --out DIR [--train 50000] [--test 10000] [--seed 0]

writes DIR/data_batch_1.bin .. data_batch_5.bin (the training images split as evenly as possible
over the five files), DIR/test_batch.bin and the marker file DIR/SYNTHETIC, so train.py and
profile_torch.py label everything made from DIR `synthetic`.

The images are those of the C++ `trainsim::data::synthetic_cifar10(n, seed)` (measure/data/
cifar.cpp), bit for bit: each class has its own tint and stripe pattern plus a per-image phase
and uniform noise, drawn from SplitMix64, so image i depends only on (seed, i). The training set
uses `seed`, the test set `seed + 1`.
"""

import argparse
import os
import sys

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MIX = np.uint64(0xD1B54A32D192ED03)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _next(state):
    """SplitMix64 on an array of states: advances `state` in place, returns the outputs."""
    state += _GOLDEN
    z = state.copy()
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def synthetic_cifar10(n, seed):
    """(images uint8 [n, 3, 32, 32] CHW, labels uint8 [n]) as the C++ generator makes them."""
    low, high, amplitude, noise = 70, 185, 50, 32
    with np.errstate(over="ignore"):
        index = np.arange(n, dtype=np.uint64)
        state = np.uint64(seed) ^ (index * _MIX)
        state = _next(state)  # mix_seed(seed, i): one SplitMix64 output of the mixed value
        labels = (_next(state) % np.uint64(10)).astype(np.int64)
        direction = labels % 4
        period = 4 + 2 * (labels // 4)
        phase = (_next(state) % period.astype(np.uint64)).astype(np.int64)
        noise_values = np.empty((n, 3 * 32 * 32), dtype=np.int64)
        span = np.uint64(2 * noise + 1)
        for k in range(3 * 32 * 32):  # the C++ order: channel, row, column
            noise_values[:, k] = (_next(state) % span).astype(np.int64)
    noise_values -= noise
    y = np.arange(32).reshape(1, 32, 1)
    x = np.arange(32).reshape(1, 1, 32)
    d = direction.reshape(-1, 1, 1)
    coordinate = np.where(d == 0, y, np.where(d == 1, x, np.where(d == 2, x + y, x - y + 32)))
    bright = ((coordinate + phase.reshape(-1, 1, 1)) // (period.reshape(-1, 1, 1) // 2)) % 2 == 0
    stripe = np.where(bright, amplitude, -amplitude)  # [n, 32, 32]
    images = np.empty((n, 3, 32, 32), dtype=np.uint8)
    noise_values = noise_values.reshape(n, 3, 32, 32)
    for c in range(3):
        tint = np.where((labels >> c) & 1 == 1, high, low).reshape(-1, 1, 1)
        images[:, c] = np.clip(tint + stripe + noise_values[:, c], 0, 255).astype(np.uint8)
    return images, labels.astype(np.uint8)


def write_cifar_file(path, images_chw, labels):
    """Writes records of label + 3072 CHW pixel bytes (temporary file, then rename)."""
    n = len(labels)
    records = np.empty((n, 3073), dtype=np.uint8)
    records[:, 0] = labels
    records[:, 1:] = np.asarray(images_chw, dtype=np.uint8).reshape(n, 3072)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(records.tobytes())
    os.replace(tmp, path)


def split_sizes(n, parts=5):
    """n images over `parts` files as evenly as possible, the first files one larger."""
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def write_synthetic(out, train=50000, test=10000, seed=0):
    if train < 5 or test < 1:
        raise ValueError("need at least 5 training images (one per file) and 1 test image")
    os.makedirs(out, exist_ok=True)
    images, labels = synthetic_cifar10(train, seed)
    start = 0
    for i, size in enumerate(split_sizes(train)):
        write_cifar_file(os.path.join(out, "data_batch_%d.bin" % (i + 1)),
                         images[start:start + size], labels[start:start + size])
        start += size
    images, labels = synthetic_cifar10(test, seed + 1)
    write_cifar_file(os.path.join(out, "test_batch.bin"), images, labels)
    with open(os.path.join(out, "SYNTHETIC"), "w") as f:
        f.write("synthetic CIFAR-10-format images (measure/pytorch/synthetic.py, seed %d); "
                "not real CIFAR-10\n" % seed)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--train", type=int, default=50000, metavar="N")
    p.add_argument("--test", type=int, default=10000, metavar="M")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.train < 5 or a.test < 1 or a.seed < 0:
        print("error: --train must be >= 5, --test >= 1, --seed >= 0", file=sys.stderr)
        return 2
    write_synthetic(a.out, a.train, a.test, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
