"""measure/pytorch/train.py for real: torchrun (--redirects 1 --tee 1 --standalone) with 1 and 2
Gloo ranks on the CPU at tiny size, and one plain 1-rank run with the calibration probe. Every
run must append exactly one valid row."""

import math
import os
import re
import unittest

import pytorch_test_util as util

import memory_format
import runs_csv

TRAIN = os.path.join(util.PYTORCH_DIR, "train.py")
HEADER = runs_csv.HEADER  # the C++ writer's columns (test_runs_csv.py)
TINY = ["--epochs", "1", "--iterations", "2", "--batch-per-gpu", "4", "--train-samples", "64",
        "--threads", "1", "--device", "cpu", "--quiet"]


def read_rows(path):
    """(rows as dicts, field count of each row) of a runs.csv with the trainer's header."""
    with open(path) as f:
        lines = f.read().split("\n")
    assert lines[0] == HEADER, lines[0]
    assert lines[-1] == "", "no final newline"
    rows = [l.split(",") for l in lines[1:-1]]
    return [dict(zip(HEADER.split(","), r)) for r in rows], [len(r) for r in rows]


class TrainRunsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = util.TempDir()
        cls.dir = cls.tmp.__enter__()
        cls.data = util.make_synthetic(os.path.join(cls.dir, "data"), train=64, test=20)
        cls.results = {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.__exit__(None, None, None)

    def train(self, name, ranks, extra, torchrun=True):
        """Runs train.py; returns (the one row it appended, stdout, stderr)."""
        runs = os.path.join(self.dir, name, "runs.csv")
        work = os.path.join(self.dir, name)
        os.makedirs(work, exist_ok=True)
        args = [TRAIN, "--data", self.data, "--runs", runs] + TINY + extra
        if torchrun:
            args = util.torchrun_command() + [
                "--redirects", "1", "--tee", "1", "--standalone", "--nproc_per_node", str(ranks),
                "--log_dir", os.path.join(work, "logs")] + args
        else:
            args = [util.PYTHON] + args
        rc, out, err = util.run(args, cwd=work)
        self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out, err))
        rows, widths = read_rows(runs)
        self.assertEqual(len(rows), 1, "exactly one row")
        self.assertEqual(widths, [23])
        return rows[0], out, err

    def check_row(self, r, gpus, workers, test_samples=0, probe=False):
        self.assertEqual(r["strategy"], "ddp")
        self.assertEqual(int(r["gpus"]), gpus)
        self.assertEqual(int(r["batch_per_gpu"]), 4)
        self.assertEqual(int(r["loader_workers"]), workers)
        self.assertEqual(int(r["train_samples"]), 64)
        self.assertEqual(int(r["iterations"]), 2)
        self.assertEqual(int(r["epochs"]), 1)
        self.assertEqual(int(r["threads"]), 1)
        self.assertEqual(r["device"], "cpu")
        self.assertEqual(r["data"], "synthetic")
        self.assertEqual(r["trainer"], "pytorch")
        self.assertRegex(r["date"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        epoch, train, wait = float(r["epoch_s"]), float(r["train_s"]), float(r["loader_wait_s"])
        self.assertGreater(train, 0)
        self.assertGreaterEqual(wait, 0)
        self.assertGreaterEqual(epoch, train)
        if gpus == 1:  # one process: train_s + loader_wait_s = epoch_s (printed with %g)
            self.assertAlmostEqual(train + wait, epoch, delta=1e-5 * epoch + 1e-6)
        loss, accuracy = float(r["final_loss"]), float(r["final_accuracy"])
        self.assertTrue(math.isfinite(loss) and loss > 0)
        self.assertTrue(0 <= accuracy <= 1)
        self.assertTrue(accuracy * 8 * gpus == int(round(accuracy * 8 * gpus)))  # k / samples
        self.assertAlmostEqual(float(r["samples_per_s"]), 2 * 4 * gpus / epoch,
                               delta=1e-4 * 8 * gpus / epoch)
        self.assertEqual(int(r["test_samples"]), test_samples)
        if test_samples:
            self.assertGreater(float(r["test_s"]), 0)
        else:
            self.assertEqual(r["test_s"], "")
        if probe:
            self.assertGreater(float(r["probe_s"]), 0)
        else:
            self.assertEqual(r["probe_s"], "")
        self.assertGreaterEqual(float(r["load_before"]), 0)
        self.assertGreaterEqual(float(r["load_after"]), 0)

    def test_torchrun_1_rank(self):
        r, out, err = self.train("one", 1, ["--workers", "0", "--no-probe"])
        self.check_row(r, gpus=1, workers=0)
        self.assertIn("pytorch ddp gpus 1 batch_per_gpu 4", out)
        self.assertIn("partial epoch: 2 of 16 iterations", out)
        self.assertNotIn("epoch 1/1", err)  # --quiet

    def test_torchrun_2_ranks(self):
        r, out, _ = self.train("two", 2, ["--workers", "0", "--no-probe"])
        self.check_row(r, gpus=2, workers=0)
        self.assertEqual(len(re.findall(r"pytorch ddp gpus 2 ", out)), 1, "rank 0 alone reports")

    def test_torchrun_loader_worker(self):
        r, _, _ = self.train("worker", 1, ["--workers", "1", "--no-probe"])
        self.check_row(r, gpus=1, workers=1)

    def test_torchrun_2_ranks_test_pass(self):
        r, _, _ = self.train("test", 2, ["--workers", "0", "--no-probe", "--test-pass",
                                         "--test-samples", "20"])
        self.check_row(r, gpus=2, workers=0, test_samples=20)

    def test_plain_process_is_one_rank_with_probe(self):
        r, _, err = self.train("plain", 1, ["--workers", "0"], torchrun=False)
        self.check_row(r, gpus=1, workers=0, probe=True)
        # Same seed, same data, same sampler: the same loss as 1 rank under torchrun.
        r1, _, _ = self.train("plain-again", 1, ["--workers", "0", "--no-probe"])
        self.assertEqual(r["final_loss"], r1["final_loss"])
        self.assertEqual(r["final_accuracy"], r1["final_accuracy"])


    def test_bf16_amp_runs_under_autocast_and_says_so(self):
        # Its own file: a bf16-amp row needs the precision column after the 23.
        work = os.path.join(self.dir, "bf16")
        os.makedirs(work, exist_ok=True)
        runs = os.path.join(work, "runs.csv")
        rc, out, err = util.run([util.PYTHON, TRAIN, "--data", self.data, "--runs", runs] + TINY +
                                ["--workers", "0", "--no-probe", "--precision", "bf16-amp",
                                 "--test-pass", "--test-samples", "20"], cwd=work)
        self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out, err))
        with open(runs) as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[0], HEADER + ",precision")
        self.assertEqual(len(lines), 3)  # header, the row, "" after the final newline
        row = dict(zip(lines[0].split(","), lines[1].split(",")))
        self.assertEqual(row["precision"], "bf16-amp")
        self.assertEqual(row["test_samples"], "20")
        self.assertTrue(math.isfinite(float(row["final_loss"])))
        # The same run in fp32 computes another loss: the forward ran in bfloat16.
        fp32, _, _ = self.train("fp32-twin", 1, ["--workers", "0", "--no-probe", "--test-pass",
                                                 "--test-samples", "20"], torchrun=False)
        self.assertNotEqual(row["final_loss"], fp32["final_loss"])

    def test_channels_last_says_so_in_its_row(self):
        # Its own file: a channels_last row needs the precision and memory_format columns.
        work = os.path.join(self.dir, "channels-last")
        os.makedirs(work, exist_ok=True)
        runs = os.path.join(work, "runs.csv")
        rc, out, err = util.run([util.PYTHON, TRAIN, "--data", self.data, "--runs", runs] + TINY +
                                ["--workers", "0", "--no-probe", "--memory-format", "channels_last",
                                 "--test-pass", "--test-samples", "20"], cwd=work)
        self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out, err))
        with open(runs) as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[0], HEADER + ",precision,memory_format")
        self.assertEqual(len(lines), 3)  # header, the row, "" after the final newline
        row = dict(zip(lines[0].split(","), lines[1].split(",")))
        self.assertEqual((row["precision"], row["memory_format"]), ("fp32", "channels_last"))
        self.assertEqual(row["test_samples"], "20")
        self.assertTrue(math.isfinite(float(row["final_loss"])))

    def test_channels_last_converts_the_model_and_every_batch(self):
        # train.run in this process, ResNet-18's first and last convolutions watched: under
        # --memory-format channels_last their weights and every input they see (training steps
        # and test pass, through DDP) are channels-last, the model converted before DDP wraps it;
        # nchw leaves every tensor as PyTorch makes it. Both rows go to one file, which gains the
        # two columns with the channels_last row.
        import contextlib
        import io
        import torch
        import train
        seen = {}
        build = train.build_model

        def watched(a, device):
            model = build(a, device)
            for conv in (model.conv1, model.layer4[-1].conv2):
                conv.register_forward_pre_hook(lambda module, inputs, fmt=a.memory_format: seen.setdefault(
                    fmt, []).append(tuple(t.is_contiguous(memory_format=torch.channels_last)
                                          for t in (inputs[0], module.weight))))
            return model

        runs = os.path.join(self.dir, "in-process", "runs.csv")
        threads = torch.get_num_threads()
        train.build_model = watched
        try:
            for fmt in memory_format.MEMORY_FORMATS:
                a = train.parse_args(["--data", self.data, "--runs", runs] + TINY + [
                    "--workers", "0", "--no-probe", "--memory-format", fmt, "--test-pass",
                    "--test-samples", "4"])
                with contextlib.redirect_stdout(io.StringIO()):
                    train.run(a)
        finally:
            train.build_model = build
            torch.set_num_threads(threads)
        # 2 training steps and 1 test batch, 2 convolutions each.
        self.assertEqual(seen, {"nchw": [(False, False)] * 6, "channels_last": [(True, True)] * 6})
        with open(runs) as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[0], HEADER + ",precision,memory_format")
        self.assertEqual([l.split(",")[-2:] for l in lines[1:3]],
                         [["fp32", "nchw"], ["fp32", "channels_last"]])


if __name__ == "__main__":
    unittest.main()
