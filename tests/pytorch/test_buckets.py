"""The recorded DDP buckets (tests/fixtures/runs/pytorch_ddp_buckets.json, written by
measure/pytorch/record_buckets.py): well-formed against the model, and reproduced by the script
when this PyTorch is the one that wrote the fixture."""

import json
import os
import re
import unittest

import pytorch_test_util as util
import torch

import resnet

FIXTURE = os.path.join(util.REPO, "tests", "fixtures", "runs", "pytorch_ddp_buckets.json")
RECORD = os.path.join(util.PYTORCH_DIR, "record_buckets.py")


def parameter_bytes():
    return [p.numel() * 4 for p in resnet.ResNet18().parameters()]


class BucketsTest(unittest.TestCase):
    def check_iterations(self, iterations):
        sizes = parameter_bytes()
        self.assertEqual(len(iterations), 3)
        for it in iterations:
            self.assertEqual([b["index"] for b in it], list(range(len(it))))
            for b in it:
                self.assertEqual(set(b), {"index", "bytes", "params"})
                self.assertEqual(b["bytes"], sum(sizes[i] for i in b["params"]))
            every = sorted(i for b in it for i in b["params"])
            self.assertEqual(every, list(range(62)))  # each parameter in exactly one bucket

    def test_fixture(self):
        with open(FIXTURE) as f:
            doc = json.load(f)
        self.assertEqual(doc["model"], "resnet18-cifar")
        self.assertRegex(doc["source"], r"^PyTorch \S+ DistributedDataParallel, 2 Gloo ranks")
        self.check_iterations(doc["iterations"])
        first, later = doc["iterations"][0], doc["iterations"][1:]
        self.assertEqual([b["bytes"] for b in first], [44695848])
        for it in later:
            self.assertEqual([b["bytes"] for b in it], [9461800, 26494976, 8739072])
            self.assertEqual([len(b["params"]) for b in it], [5, 15, 42])
            self.assertEqual(sorted(it[0]["params"]), [57, 58, 59, 60, 61])

    def test_script_reproduces_the_fixture(self):
        with open(FIXTURE) as f:
            doc = json.load(f)
        with util.TempDir() as d:
            out = os.path.join(d, "buckets.json")
            rc, stdout, err = util.run([util.PYTHON, RECORD, "--out", out], cwd=d)
            self.assertEqual(rc, 0, err)
            with open(out) as f:
                got = json.load(f)
        self.check_iterations(got["iterations"])
        version = re.match(r"PyTorch (\S+) ", doc["source"]).group(1)
        if version == torch.__version__:
            self.assertEqual(got, doc)


if __name__ == "__main__":
    unittest.main()
