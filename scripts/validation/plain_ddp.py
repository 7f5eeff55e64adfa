#!/usr/bin/env python3
"""A plain PyTorch DDP training script, written the way PyTorch's tutorials write one and not
built on the project's reference trainer (measure/pytorch/train.py): the validation's check that
trainsim predicts a script that is not its own (docs/VALIDATION.md "A script that is not the
project's own").

    torchrun --standalone --nproc_per_node N scripts/validation/plain_ddp.py --data DIR \
        [--batch 32] [--workers 0] [--samples 512] [--epochs 2] [--threads 1] [--backend gloo]

ResNet-18 (CIFAR variant: 3x3 stem, no max-pool, 11,173,962 parameters) defined here, CIFAR-10's
binary files read with numpy (DIR/data_batch_1..5.bin; a folder with a SYNTHETIC file is
labelled synthetic), torchvision's usual augmentation (random crop with 4 pixels of padding,
horizontal flip, normalisation), a DistributedSampler, SGD with momentum and weight decay. The
only thing it adds to the textbook loop is its report: at the end rank 0 prints one line,
`plain_ddp: {json}`, with the last epoch's wall time (the first warms the allocator and the
workers) and what a runs.csv row needs.
"""

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms as T
from PIL import Image
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


class CifarBinary(Dataset):
    """The first `samples` images of CIFAR-10's binary training files."""

    def __init__(self, folder, samples, transform):
        records = []
        for i in range(1, 6):
            raw = np.fromfile(os.path.join(folder, "data_batch_%d.bin" % i), dtype=np.uint8)
            records.append(raw.reshape(-1, 3073))
        data = np.concatenate(records)[:samples]
        self.labels = data[:, 0].astype(np.int64)
        self.images = data[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(Image.fromarray(self.images[i])), int(self.labels[i])


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(512, classes)

    def forward(self, x):
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--backend", default="gloo")
    args = p.parse_args()

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    transform = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize(MEAN, STD)])
    dataset = CifarBinary(args.data, args.samples, transform)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler, num_workers=args.workers)

    model = DDP(ResNet18())
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)

    load_before = os.getloadavg()[0]
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        dist.barrier()
        start = time.perf_counter()
        total_loss, iterations = 0.0, 0
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            iterations += 1
        dist.barrier()
        epoch_s = time.perf_counter() - start
    if rank == 0:
        synthetic = os.path.exists(os.path.join(args.data, "SYNTHETIC"))
        print("plain_ddp: " + json.dumps({
            "gpus": world, "batch_per_gpu": args.batch, "loader_workers": args.workers,
            "train_samples": len(dataset), "epoch_s": epoch_s, "iterations": iterations,
            "epochs": args.epochs, "threads": args.threads, "data": "synthetic" if synthetic else "cifar10",
            "final_loss": total_loss / max(iterations, 1), "load_before": load_before,
            "load_after": os.getloadavg()[0]}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
