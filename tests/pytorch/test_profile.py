"""measure/pytorch/profile_torch.py at tiny size: one JSON object with every key, positive figures."""

import importlib.util
import json
import numbers
import os
import unittest

import pytorch_test_util as util

PROFILE = os.path.join(util.PYTORCH_DIR, "profile_torch.py")


def load_profile_module():
    """profile_torch.py as a module of this process (its functions called directly)."""
    spec = importlib.util.spec_from_file_location("trainsim_profile", PROFILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ProfileTest(unittest.TestCase):
    def test_tiny_profile(self):
        with util.TempDir() as d:
            data = util.make_synthetic(os.path.join(d, "data"), train=10, test=2)
            out = os.path.join(d, "out", "pytorch-profile.json")
            rc, stdout, err = util.run(
                [util.PYTHON, PROFILE, "--data", data, "--device", "cpu", "--threads", "1",
                 "--batches", "4,2", "--repeats", "1", "--warmup", "0", "--loader-batches", "2",
                 "--loader-batch", "8,16,4", "--loader-workers", "1,0", "--fork-ranks", "1,2",
                 "--fork-cycles", "2", "--out", out], cwd=d)
            self.assertEqual(rc, 0, err)
            self.assertIn("loader: batch 8, 1 worker(s)", err)  # progress on stderr
            # The loop timings in rounds, each with its probe (--repeats 1: one round).
            self.assertIn("resnet18-cifar: round 1 of 1: probe ", err)
            self.assertIn("(medians of 1 rounds)", err)
            with open(out) as f:
                p = json.load(f)
            self.assertEqual([n for n in os.listdir(os.path.dirname(out))],
                             ["pytorch-profile.json"])  # no temporary left
        self.assertEqual(set(p), {"framework", "torch", "torchvision", "python", "device",
                                  "device_name", "threads", "data", "probe_s", "loader", "models", "gil"})
        self.assertEqual(p["framework"], "pytorch")
        import torch
        import torchvision
        self.assertEqual(p["torch"], torch.__version__)
        self.assertEqual(p["torchvision"], torchvision.__version__)
        self.assertRegex(p["python"], r"^3\.\d+\.\d+")
        self.assertEqual((p["device"], p["threads"], p["data"]), ("cpu", 1, "synthetic"))
        self.assertTrue(p["device_name"])
        self.assertGreater(p["probe_s"], 0)
        self.assertEqual(p["loader"]["batch"], 8)
        points = p["loader"]["points"]
        self.assertEqual([q["workers"] for q in points], [0, 1])
        for q in points:
            self.assertEqual(set(q), {"workers", "samples_per_s", "first_batch_s", "startup_s"})
            self.assertGreater(q["samples_per_s"], 0)
            self.assertGreater(q["first_batch_s"], 0)
            self.assertGreaterEqual(q["startup_s"], 0)
        self.assertEqual(points[0]["startup_s"], 0.0)
        # The other batches, ascending, each with every worker count.
        at = p["loader"]["at_batches"]
        self.assertEqual([b["batch"] for b in at], [4, 16])
        for b in at:
            self.assertEqual(set(b), {"batch", "points"})
            self.assertEqual([q["workers"] for q in b["points"]], [0, 1])
            self.assertTrue(all(q["samples_per_s"] > 0 for q in b["points"]), b)
        self.assertEqual(list(p["models"]), ["resnet18-cifar"])
        m = p["models"]["resnet18-cifar"]
        self.assertEqual(set(m), {"batches", "iteration_s", "ddp_iteration_s", "minor_faults", "oom_batch",
                                  "fork", "forward_calls", "replicate_s"})
        # Calls from Python into ATen in a training forward of ResNet-18: 20 convolutions, 20
        # batch norms and their 20 counter updates, 17 ReLUs, 8 residual adds, the pooling, the
        # view and the linear layer (BatchNorm's input.dim() check does not enter ATen).
        self.assertEqual(m["forward_calls"], 88)
        self.assertGreater(m["replicate_s"], 0)
        # The GIL: every probe timed on 1, 2 and 4 threads at once; 64 x (Linear, ReLU) make 128
        # calls per forward.
        gil = p["gil"]
        self.assertEqual((gil["threads"], gil["depth"]), ([1, 2, 4], 64))
        self.assertEqual([q["name"] for q in gil["probes"]], ["linear16", "linear64", "linear128"])
        for q in gil["probes"]:
            self.assertEqual(q["calls"], 128)
            self.assertEqual(len(q["forward_s"]), 3)
            self.assertTrue(all(v > 0 for v in q["forward_s"]), q)
        self.assertEqual(m["batches"], [2, 4])  # sorted
        self.assertIsNone(m["oom_batch"])
        for key in ("iteration_s", "ddp_iteration_s"):
            self.assertEqual(len(m[key]), 2)
            for v in m[key]:
                self.assertIsInstance(v, numbers.Real)
                self.assertGreater(v, 0)
        # The page faults of the plain loop body, a count per batch.
        self.assertEqual(len(m["minor_faults"]), 2)
        self.assertTrue(all(isinstance(v, numbers.Real) and v >= 0 for v in m["minor_faults"]), m)
        # Starting the workers: the smallest worker count >= 1, for 1 and 2 processes at once.
        fork = m["fork"]
        self.assertEqual(fork["workers"], 1)
        self.assertEqual([q["ranks"] for q in fork["points"]], [1, 2])
        for q in fork["points"]:
            self.assertEqual(set(q), {"ranks", "iter_s", "first_batch_s", "cow_s"})
            for key in ("iter_s", "first_batch_s"):
                self.assertEqual(len(q[key]), 2)
                self.assertTrue(all(v > 0 for v in q[key]), q)
            self.assertTrue(all(v >= 0 for v in q["cow_s"]), q)

    def test_spawned_training_processes_fork_their_workers(self):
        # As on CUDA: the training processes are fresh interpreters (spawn), and their loader
        # workers still start by the platform's default, as in a rank torchrun started. A spawned
        # child left to itself spawns its workers too (seconds each, not milliseconds). In
        # channels_last, the memory format reaching the spawned process too (its bodies' layout:
        # test_channels_last_in_every_timed_body).
        import multiprocessing
        with util.TempDir() as d:
            out, err = self.run_small(d, ["--loader-batches", "1", "--loader-batch", "2", "--loader-workers", "1",
                                          "--fork-cycles", "1", "--rank-start", "spawn",
                                          "--memory-format", "channels_last"])
            self.assertIn("1 spawned process(es) starting 1 worker(s) at once (by %s)"
                          % multiprocessing.get_start_method(), err)
            self.assertTrue(os.path.exists(out))

    def test_no_fork_no_gil_leave_their_entries_out(self):
        # measure --quick: the worker start-up and GIL timings are skipped, and the profile says
        # nothing of them.
        with util.TempDir() as d:
            out, err = self.run_small(d, ["--loader-batches", "1", "--loader-batch", "2", "--loader-workers", "1",
                                          "--no-fork", "--no-gil"])
            with open(out) as f:
                p = json.load(f)
        self.assertNotIn("gil", p)
        m = p["models"]["resnet18-cifar"]
        self.assertEqual(m["batches"], [2])
        self.assertNotIn("fork", m)
        self.assertNotIn("process(es) starting", err)
        self.assertNotIn("gil: ", err)

    def run_small(self, d, flags):
        """profile_torch.py on 10 synthetic images, batch 2, one repeat on the cpu, with `flags`: (out, stderr)."""
        data = util.make_synthetic(os.path.join(d, "data"), train=10, test=2)
        out = os.path.join(d, "p.json")
        rc, stdout, err = util.run(
            [util.PYTHON, PROFILE, "--data", data, "--device", "cpu", "--threads", "1",
             "--batches", "2", "--repeats", "1", "--warmup", "0"] + flags + ["--out", out], cwd=d)
        self.assertEqual(rc, 0, err)
        return out, err

    def test_loader_only_measures_the_loader_alone(self):
        with util.TempDir() as d:
            out, err = self.run_small(d, ["--loader-batches", "2", "--loader-batch", "8,4", "--loader-workers", "0",
                                          "--loader-only"])
            with open(out) as f:
                p = json.load(f)
        self.assertEqual(p["loader"]["batch"], 8)
        self.assertEqual([q["workers"] for q in p["loader"]["points"]], [0])  # the main batch too
        self.assertEqual([b["batch"] for b in p["loader"]["at_batches"]], [4])
        self.assertEqual(p["models"], {})

    def test_a_probe_that_moves_is_a_warning(self):
        module = load_profile_module()
        said = []
        module.probe_drift([1.0, 1.05, 0.98], said.append)
        self.assertEqual(said, [])
        module.probe_drift([0.86, 1.55, 0.9], said.append)
        self.assertEqual(len(said), 1)
        self.assertTrue(said[0].startswith("warning: the calibration probe moved 80% during this profile "
                                           "(0.8600 .. 1.5500 s over 3 probes"), said[0])

    def test_channels_last_in_every_timed_body(self):
        # The plain and the DDP loop bodies (measure_model) and a fork measurement's training
        # process (_fork_cycles, called here in this process), ResNet-18's first and last
        # convolutions watched: under channels_last their weights and every input they see are
        # channels-last, the models converted before DDP wraps them.
        import multiprocessing
        import queue
        import threading
        import torch
        from torch.utils.data import Subset
        import cifar_data
        module = load_profile_module()
        seen = []  # per model built: (input, weight) channels-last, per convolution call
        build = module.new_model

        def watched(name, scripts):
            model = build(name, scripts)
            calls = []
            seen.append(calls)
            for conv in (model.conv1, model.layer4[-1].conv2):
                conv.register_forward_pre_hook(lambda m, inputs: calls.append(tuple(
                    t.is_contiguous(memory_format=torch.channels_last) for t in (inputs[0], m.weight))))
            return model

        module.new_model = watched
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            m = module.measure_model("resnet18-cifar", {}, torch.device("cpu"), [2], 0, 1, lambda text: None,
                                     [], "fp32", "channels_last")
            self.assertEqual(m["batches"], [2])
            # Built and run once each (--warmup 0, one round): the plain body, the DDP body; the
            # third, DataParallel's host mechanisms, runs no training step.
            self.assertEqual(seen[:2], [[(True, True)] * 2] * 2)
            del seen[:]
            with util.TempDir() as d:
                data = util.make_synthetic(os.path.join(d, "data"), train=10, test=2)
                dataset = cifar_data.CIFAR10Binary(data, train=True, transform=cifar_data.train_transform())
                results = queue.Queue()
                module._fork_cycles("resnet18-cifar", {}, "cpu", None, 2, 0, Subset(dataset, range(4)), 1,
                                    threading.Barrier(1), results, 0, multiprocessing.get_start_method(),
                                    "fp32", "channels_last")
                index, out, _ = results.get_nowait()
                self.assertNotIsInstance(out, str, out)
            # The warm-up iteration and the cycle's two.
            self.assertEqual(seen, [[(True, True)] * 6])
        finally:
            module.new_model = build
            torch.set_num_threads(threads)

    def test_bad_flag_is_one_line(self):
        with util.TempDir() as d:
            rc, out, err = util.run([util.PYTHON, PROFILE, "--data", d, "--batches", "0,2",
                                     "--out", os.path.join(d, "x.json")], cwd=d)
            self.assertEqual(rc, 2)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertTrue(err.startswith("error: ") and "--batches" in err, err)
            rc, out, err = util.run([util.PYTHON, PROFILE, "--data", d, "--fork-cycles", "0",
                                     "--out", os.path.join(d, "x.json")], cwd=d)
            self.assertEqual(rc, 2)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertTrue(err.startswith("error: ") and "--fork-cycles" in err, err)
            rc, out, err = util.run([util.PYTHON, PROFILE, "--data", d, "--memory-format", "nhwc",
                                     "--out", os.path.join(d, "x.json")], cwd=d)
            self.assertEqual(rc, 2)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertTrue(err.startswith("error: ") and "--memory-format" in err, err)
            rc, out, err = util.run([util.PYTHON, PROFILE, "--data", d, "--loader-only",
                                     "--loader-batch", "128", "--out", os.path.join(d, "x.json")], cwd=d)
            self.assertEqual(rc, 2)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertTrue(err.startswith("error: --loader-only") and "more than one" in err, err)
            rc, out, err = util.run([util.PYTHON, PROFILE, "--data", d, "--loader-batch", "128,128",
                                     "--out", os.path.join(d, "x.json")], cwd=d)
            self.assertEqual(rc, 2)
            self.assertTrue(err.startswith("error: ") and "repeats a value" in err, err)
            rc, out, err = util.run([util.PYTHON, PROFILE, "--data", d, "--device", "cpu",
                                     "--out", os.path.join(d, "x.json")], cwd=d)
            self.assertEqual(rc, 2)
            self.assertRegex(err, r"^error: .*data_batch_1\.bin: missing")
            self.assertFalse(os.path.exists(os.path.join(d, "x.json")))


if __name__ == "__main__":
    unittest.main()
