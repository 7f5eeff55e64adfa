"""measure/pytorch/train.py refusals: each bad flag or input is one `error: ...` line on stderr
and exit code 2, before any training."""

import os
import unittest

import pytorch_test_util as util

import runs_csv

TRAIN = os.path.join(util.PYTORCH_DIR, "train.py")
HEADER = runs_csv.HEADER  # the C++ writer's columns (test_runs_csv.py)


class TrainErrorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = util.TempDir()
        cls.dir = cls.tmp.__enter__()
        cls.data = util.make_synthetic(os.path.join(cls.dir, "data"), train=64, test=20)
        cls.runs = os.path.join(cls.dir, "runs.csv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.__exit__(None, None, None)

    def refused(self, args, data=None):
        """Runs train.py (no --quiet: a started training would print progress); returns the
        one error line."""
        full = [util.PYTHON, TRAIN, "--data", data or self.data, "--runs", self.runs,
                "--device", "cpu", "--epochs", "1", "--iterations", "1", "--batch-per-gpu", "4",
                "--workers", "0", "--threads", "1"] + args
        rc, out, err = util.run(full, cwd=self.dir, timeout=120)
        self.assertEqual(rc, 2, "stdout:\n%s\nstderr:\n%s" % (out, err))
        self.assertEqual(out, "")
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("error: "), lines[0])
        return lines[0]

    def test_dp_on_cpu(self):
        line = self.refused(["--strategy", "dp", "--gpus", "2"])
        self.assertIn("--strategy dp needs CUDA devices", line)

    def test_gpus_must_match_the_ranks(self):
        self.assertIn("this ddp job has 1 rank(s)", self.refused(["--gpus", "2"]))

    def test_bad_header_exits_before_training(self):
        cpp_header = HEADER.split(",date,")[0] + ",date"
        with open(self.runs, "w") as f:
            f.write(cpp_header + "\n")
        try:
            line = self.refused([])
            self.assertEqual(line, "error: %s:1: header: expected '%s', found '%s'"
                             % (self.runs, HEADER, cpp_header))
            with open(self.runs) as f:
                self.assertEqual(f.read(), cpp_header + "\n")
        finally:
            os.remove(self.runs)

    def test_truncated_data_file(self):
        data = os.path.join(self.dir, "truncated")
        util.make_synthetic(data, train=10, test=2)
        path = os.path.join(data, "data_batch_5.bin")
        with open(path, "ab") as f:
            f.write(b"\x00" * 100)
        line = self.refused([], data=data)
        self.assertEqual(line, "error: %s: truncated: %d bytes is not a multiple of 3073 "
                         "(record 2 is incomplete)" % (path, 2 * 3073 + 100))

    def test_missing_data_file(self):
        data = os.path.join(self.dir, "missing")
        util.make_synthetic(data, train=10, test=2)
        os.remove(os.path.join(data, "data_batch_1.bin"))
        self.assertIn("data_batch_1.bin: missing", self.refused([], data=data))

    def test_bad_label(self):
        data = os.path.join(self.dir, "label")
        util.make_synthetic(data, train=10, test=2)
        path = os.path.join(data, "data_batch_2.bin")
        util.write_records(path, [1, 10], [bytes(3072)] * 2)
        self.assertEqual(self.refused([], data=data),
                         "error: %s: record 1: label 10 out of range 0..9" % path)

    def test_too_many_train_samples(self):
        self.assertIn("65 training images requested, only 64 available",
                      self.refused(["--train-samples", "65"]))

    def test_bad_flags(self):
        self.assertIn("--batch-per-gpu", self.refused(["--batch-per-gpu", "0"]))
        self.assertIn("--no-such-flag", self.refused(["--no-such-flag"]))
        self.assertIn("--test-samples needs --test-pass", self.refused(["--test-samples", "5"]))


class DefaultRunsPathTest(unittest.TestCase):
    def test_reports_machine_runs_csv_in_the_repo(self):
        import train
        self.assertEqual(os.path.realpath(train.REPO_ROOT), os.path.realpath(util.REPO))
        self.assertEqual(train.default_runs_path("box-1", "cpu"),
                         os.path.join(train.REPO_ROOT, "reports", "box-1", "runs.csv"))
        import machine_name
        self.assertEqual(train.default_runs_path(None, "cpu"),
                         os.path.join(train.REPO_ROOT, "reports",
                                      machine_name.default_machine_name("cpu"), "runs.csv"))


if __name__ == "__main__":
    unittest.main()
