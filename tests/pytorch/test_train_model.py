"""measure/pytorch/train.py --model FILE.pt / --arch NAME: a TorchScript module trained under the
same protocol (1 rank without torchrun, 2 Gloo ranks under torchrun), the row's model column;
bad --model files and flags; runs_csv's two headers."""

import os
import unittest

import pytorch_test_util as util

import torch
import torch.nn as nn

import export_models
import runs_csv

TRAIN = os.path.join(util.PYTORCH_DIR, "train.py")
HEADER = runs_csv.HEADER
HEADER_WITH_MODEL = HEADER + ",model"
TINY = ["--epochs", "1", "--iterations", "2", "--batch-per-gpu", "4", "--train-samples", "64",
        "--threads", "1", "--device", "cpu", "--workers", "0", "--no-probe", "--quiet"]


def read_rows(path):
    with open(path) as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", "no final newline"
    header = lines[0].split(",")
    return lines[0], [dict(zip(header, l.split(","))) for l in lines[1:-1]], \
        [len(l.split(",")) for l in lines[1:-1]]


class _WrongClasses(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 7)

    def forward(self, x):
        return self.fc(x.mean(dim=(2, 3)))


class _OneChannel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 10, 3)

    def forward(self, x):
        return self.conv(x).mean(dim=(2, 3))


class TrainModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = util.TempDir()
        cls.dir = cls.tmp.__enter__()
        cls.data = util.make_synthetic(os.path.join(cls.dir, "data"), train=64, test=4)
        cls.models = os.path.join(cls.dir, "models")
        rc, out, err = util.run([util.PYTHON, os.path.join(util.PYTORCH_DIR, "export_models.py"),
                                 "--out", cls.models, "--models", "tiny-cnn"], cwd=cls.dir)
        assert rc == 0, err
        cls.tiny = os.path.join(cls.models, "tiny-cnn.pt")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.__exit__(None, None, None)

    def train(self, name, extra, ranks=None):
        """Runs train.py (under torchrun when `ranks`); returns (header, the one row, stdout)."""
        work = os.path.join(self.dir, name)
        os.makedirs(work)
        runs = os.path.join(work, "runs.csv")
        args = [TRAIN, "--data", self.data, "--runs", runs] + TINY + extra
        if ranks:
            args = util.torchrun_command() + [
                "--redirects", "1", "--tee", "1", "--standalone", "--nproc_per_node", str(ranks),
                "--log_dir", os.path.join(work, "logs")] + args
        else:
            args = [util.PYTHON] + args
        rc, out, err = util.run(args, cwd=work)
        self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out, err))
        header, rows, widths = read_rows(runs)
        self.assertEqual(len(rows), 1)
        self.assertEqual(widths, [24])
        return header, rows[0], out

    def check_row(self, r, gpus, model):
        self.assertEqual((r["strategy"], r["gpus"], r["batch_per_gpu"], r["train_samples"]),
                         ("ddp", str(gpus), "4", "64"))
        self.assertEqual((r["iterations"], r["trainer"], r["model"]), ("2", "pytorch", model))
        self.assertGreater(float(r["epoch_s"]), 0)

    def test_model_file_one_rank_with_a_name(self):
        header, r, out = self.train("named", ["--model", self.tiny, "--model-name", "my-cnn.v2"])
        self.assertEqual(header, HEADER_WITH_MODEL)
        self.check_row(r, 1, "my-cnn.v2")
        self.assertIn("pytorch ddp gpus 1 batch_per_gpu 4:", out)
        self.assertIn("model my-cnn.v2 ->", out)

    def test_model_file_two_ranks_under_torchrun(self):
        # DistributedDataParallel takes the loaded ScriptModule itself (PyTorch 1.13).
        header, r, _ = self.train("two", ["--model", self.tiny], ranks=2)
        self.assertEqual(header, HEADER_WITH_MODEL)
        self.check_row(r, 2, "tiny-cnn")  # the file's stem

    def test_arch_is_the_exported_model(self):
        # export_models.py --seed 0 and --arch with --seed 0: the same weights, the same run.
        _, from_file, _ = self.train("file", ["--model", self.tiny])
        _, from_arch, _ = self.train("arch", ["--arch", "tiny-cnn"])
        self.check_row(from_arch, 1, "tiny-cnn")
        self.assertAlmostEqual(float(from_file["final_loss"]), float(from_arch["final_loss"]),
                               delta=1e-4)
        self.assertEqual(from_file["final_accuracy"], from_arch["final_accuracy"])

    def refused(self, args, runs=None):
        runs = runs or os.path.join(self.dir, "refused-runs.csv")
        full = [util.PYTHON, TRAIN, "--data", self.data, "--runs", runs, "--device", "cpu",
                "--epochs", "1", "--iterations", "1", "--batch-per-gpu", "4", "--workers", "0",
                "--threads", "1", "--no-probe"] + args
        rc, out, err = util.run(full, cwd=self.dir, timeout=120)
        self.assertEqual(rc, 2, "stdout:\n%s\nstderr:\n%s" % (out, err))
        self.assertEqual(out, "")
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        self.assertFalse(os.path.exists(runs) and runs.endswith("refused-runs.csv"))
        return lines[0]

    def test_bad_model_files(self):
        d = os.path.join(self.dir, "bad")
        os.makedirs(d)
        missing = os.path.join(d, "missing.pt")
        self.assertEqual(self.refused(["--model", missing]), "error: %s: no such file" % missing)
        text = os.path.join(d, "text.pt")
        with open(text, "w") as f:
            f.write("not a model\n")
        self.assertTrue(self.refused(["--model", text]).startswith(
            "error: %s: not a TorchScript module (torch.jit.load: " % text))
        saved = os.path.join(d, "saved.pt")
        torch.save(nn.Linear(2, 2).state_dict(), saved)
        self.assertIn("torch.save writes no TorchScript", self.refused(["--model", saved]))
        fn = os.path.join(d, "fn.pt")
        torch.jit.script(nn.Identity()).save(fn)
        self.assertEqual(self.refused(["--model", fn]),
                         "error: %s: the module has no parameters to train" % fn)
        wrong = os.path.join(d, "wrong.pt")
        torch.jit.script(_WrongClasses()).save(wrong)
        self.assertEqual(self.refused(["--model", wrong]),
                         "error: %s: forward(2 x 3 x 32 x 32) returned shape [2, 7], not [2, 10] "
                         "logits" % wrong)
        gray = os.path.join(d, "gray.pt")
        torch.jit.script(_OneChannel()).save(gray)
        self.assertTrue(self.refused(["--model", gray]).startswith(
            "error: %s: forward(2 x 3 x 32 x 32) failed: " % gray))
        self.assertIn("is a folder", self.refused(["--model", d]))

    def test_bad_flags(self):
        self.assertEqual(self.refused(["--model", self.tiny, "--arch", "tiny-cnn"]),
                         "error: --model and --arch: give one of them")
        self.assertEqual(self.refused(["--model-name", "x"]),
                         "error: --model-name needs --model or --arch")
        self.assertIn("--model-name 'a,b': letters, digits",
                      self.refused(["--arch", "tiny-cnn", "--model-name", "a,b"]))
        self.assertIn("invalid choice: 'resnet18'", self.refused(["--arch", "resnet18"]))

    def test_file_without_model_column_refuses_another_model(self):
        runs = os.path.join(self.dir, "legacy", "runs.csv")
        os.makedirs(os.path.dirname(runs))
        with open(runs, "w") as f:
            f.write(HEADER + "\n")
        line = self.refused(["--model", self.tiny], runs=runs)
        self.assertEqual(line, "error: %s:1: header: no model column (the file holds "
                         "resnet18-cifar rows only); write the rows of tiny-cnn to another file "
                         "(--runs)" % runs)
        with open(runs) as f:
            self.assertEqual(f.read(), HEADER + "\n")


class RunsCsvModelColumnTest(unittest.TestCase):
    def row(self, **changes):
        r = {c: 1 for c in runs_csv.COLUMNS}
        r.update(strategy="ddp", device="cpu", data="synthetic", date="d", trainer="pytorch",
                 test_s=None)
        r.update(changes)
        return r

    def test_headers_by_model(self):
        with util.TempDir() as d:
            legacy, modern = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
            runs_csv.append_row(legacy, self.row())  # ResNet-18 rows: the shared header
            runs_csv.append_row(legacy, self.row(model="resnet18-cifar"))
            runs_csv.append_row(modern, self.row(model="vit-tiny"))
            runs_csv.append_row(modern, self.row())  # a ResNet-18 row in a file of models
            runs_csv.check_header(modern, "anything")
            runs_csv.check_header(legacy)
            with self.assertRaises(runs_csv.RunsFileError):
                runs_csv.check_header(legacy, "vit-tiny")
            with self.assertRaises(runs_csv.RunsFileError):
                runs_csv.append_row(legacy, self.row(model="vit-tiny"))
            h, rows, widths = read_rows(legacy)
            self.assertEqual((h, widths), (HEADER, [23, 23]))
            h, rows, widths = read_rows(modern)
            self.assertEqual((h, widths), (HEADER_WITH_MODEL, [24, 24]))
            self.assertEqual([r["model"] for r in rows], ["vit-tiny", "resnet18-cifar"])

    def test_default_runs_path_per_model(self):
        import train
        self.assertEqual(train.default_runs_path("box", "cpu"),
                         os.path.join(train.REPO_ROOT, "reports", "box", "runs.csv"))
        self.assertEqual(train.default_runs_path("box", "cpu", "resnet50"),
                         os.path.join(train.REPO_ROOT, "reports", "box", "runs-resnet50.csv"))


if __name__ == "__main__":
    unittest.main()
