"""scripts/validation/plain_ddp.py (a textbook DDP script that is not the reference trainer) under
torchrun on 2 Gloo ranks at tiny size, and plain_ddp_row.py turning its report into a runs.csv row
that simulate --compare reads."""

import os
import subprocess
import unittest

import pytorch_test_util as util

VALIDATION = os.path.join(util.REPO, "scripts", "validation")
PLAIN = os.path.join(VALIDATION, "plain_ddp.py")
ROW = os.path.join(VALIDATION, "plain_ddp_row.py")


class PlainDdpTest(unittest.TestCase):
    def test_two_ranks_report_one_row(self):
        with util.TempDir() as d:
            data = util.make_synthetic(os.path.join(d, "data"), train=24, test=2)
            rc, out, err = util.run(util.torchrun_command() + [
                "--redirects", "1", "--tee", "1", "--standalone", "--nproc_per_node", "2",
                "--log_dir", os.path.join(d, "logs"), PLAIN, "--data", data, "--batch", "4",
                "--samples", "24", "--epochs", "2", "--threads", "1"], cwd=d)
            self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out, err))
            runs = os.path.join(d, "runs.csv")
            row = subprocess.run([util.PYTHON, ROW, runs, "--probe-s", "0.5"], input=out, text=True,
                                 capture_output=True, env=util.clean_env())
            self.assertEqual(row.returncode, 0, row.stderr)
            with open(runs) as f:
                header, line = f.read().splitlines()
        fields = dict(zip(header.split(","), line.split(",")))
        # 24 images over 2 ranks: 12 each, 3 iterations of 4.
        self.assertEqual((fields["strategy"], fields["gpus"], fields["batch_per_gpu"], fields["loader_workers"],
                          fields["train_samples"], fields["iterations"], fields["epochs"], fields["trainer"],
                          fields["data"], fields["probe_s"], fields["test_samples"]),
                         ("ddp", "2", "4", "0", "24", "3", "2", "pytorch", "synthetic", "0.5", "0"))
        self.assertGreater(float(fields["epoch_s"]), 0)
        self.assertEqual(fields["epoch_s"], fields["train_s"])

    def test_no_report_is_a_failure(self):
        with util.TempDir() as d:
            row = subprocess.run([util.PYTHON, ROW, os.path.join(d, "runs.csv")], input="a failed run\n", text=True,
                                 capture_output=True, env=util.clean_env())
            self.assertEqual(row.returncode, 1)
            self.assertIn("no 'plain_ddp:' report line", row.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "runs.csv")))


if __name__ == "__main__":
    unittest.main()
