"""CIFAR-10 from its binary files, the course's transforms, and the DataLoaders of train.py.

Binary format: records of 1 label byte + 3072 pixel bytes (1024 R, then 1024 G, then 1024 B,
each plane row-major 32x32). Training: data_batch_1.bin .. data_batch_5.bin; test:
test_batch.bin. The images are kept as one uint8 NHWC numpy array and each item goes through
PIL.Image.fromarray and the transform, exactly as torchvision's CIFAR10 dataset does it.

A folder holding a file named SYNTHETIC contains generated images (see synthetic.py), and rows
made from it say `synthetic` in their `data` column.
"""

import os

import numpy as np
from PIL import Image
import torch
from torch.utils.data import DataLoader, Dataset
import torchvision.transforms as transforms

RECORD_BYTES = 3073
PIXELS = 3072
NUM_CLASSES = 10
TRAIN_FILES = ["data_batch_%d.bin" % i for i in range(1, 6)]
TEST_FILE = "test_batch.bin"
SYNTHETIC_MARKER = "SYNTHETIC"
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2023, 0.1994, 0.2010)


class DataError(Exception):
    """Unreadable input; the message names the file (and the record where it applies)."""


def read_cifar_file(path):
    """Returns (images uint8 [n, 32, 32, 3], labels uint8 [n]) of one binary file."""
    if not os.path.isfile(path):
        raise DataError("%s: missing (no such file)" % path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError("%s: cannot read: %s" % (path, e.strerror or e))
    if len(raw) == 0:
        raise DataError("%s: empty file" % path)
    if len(raw) % RECORD_BYTES != 0:
        raise DataError("%s: truncated: %d bytes is not a multiple of %d (record %d is incomplete)"
                        % (path, len(raw), RECORD_BYTES, len(raw) // RECORD_BYTES))
    records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, RECORD_BYTES)
    labels = records[:, 0].copy()
    bad = np.nonzero(labels >= NUM_CLASSES)[0]
    if bad.size:
        r = int(bad[0])
        raise DataError("%s: record %d: label %d out of range 0..9" % (path, r, int(labels[r])))
    images = records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # NCHW -> NHWC
    return np.ascontiguousarray(images), labels


def is_synthetic(root):
    return os.path.exists(os.path.join(root, SYNTHETIC_MARKER))


class CIFAR10Binary(Dataset):
    """CIFAR-10 read from the binary files in `root`; the first `limit` images if given."""

    def __init__(self, root, train=True, transform=None, limit=None):
        self.root = root
        self.train = train
        self.transform = transform
        files = TRAIN_FILES if train else [TEST_FILE]
        images, labels = [], []
        for name in files:
            x, y = read_cifar_file(os.path.join(root, name))
            images.append(x)
            labels.append(y)
        data = np.concatenate(images) if len(images) > 1 else images[0]
        targets = np.concatenate(labels) if len(labels) > 1 else labels[0]
        if limit is not None:
            if limit > len(targets):
                what = "training" if train else "test"
                raise DataError("%s: %d %s images requested, only %d available"
                                % (root, limit, what, len(targets)))
            data, targets = data[:limit], targets[:limit]
        self.data = np.ascontiguousarray(data)
        self.targets = [int(t) for t in targets]
        self.synthetic = is_synthetic(root)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img, target = self.data[index], self.targets[index]
        img = Image.fromarray(img)
        if self.transform is not None:
            img = self.transform(img)
        return img, target


def train_transform():
    return transforms.Compose([
        transforms.RandomCrop(32, padding=4),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])


def test_transform():
    return transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])


def train_loader(dataset, batch, workers, sampler=None, persistent=False, generator=None):
    """The training DataLoader of train.py: default collate, pin_memory False, workers
    restarted every epoch unless `persistent`. Shuffled by `sampler` (ddp) or by the loader."""
    return DataLoader(dataset, batch_size=batch, shuffle=sampler is None, sampler=sampler,
                      num_workers=workers, pin_memory=False,
                      persistent_workers=bool(persistent and workers > 0),
                      generator=generator if sampler is None else None)


def test_loader(dataset, workers):
    """The test DataLoader: batch 100, in order."""
    return DataLoader(dataset, batch_size=100, shuffle=False, num_workers=workers,
                      pin_memory=False)


def seeded_generator(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g
