"""measure/pytorch/export_models.py: the small models exported, loaded back, trained one step;
the train/eval branches kept by scripting; the trace fallback; bad flags."""

import json
import os
import unittest

import pytorch_test_util as util

import torch
import torch.nn as nn

import export_models

EXPORT = os.path.join(util.PYTORCH_DIR, "export_models.py")


class ExportCommandTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = util.TempDir()
        cls.dir = cls.tmp.__enter__()
        cls.out = os.path.join(cls.dir, "models")
        cls.rc, cls.stdout, cls.stderr = util.run(
            [util.PYTHON, EXPORT, "--out", cls.out, "--models", "tiny-cnn,vit-tiny", "--seed", "3"],
            cwd=cls.dir, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.__exit__(None, None, None)

    def test_writes_one_file_and_one_line_per_model(self):
        self.assertEqual(self.rc, 0, self.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["tiny-cnn.pt", "vit-tiny.pt"])  # no tmp
        lines = self.stdout.splitlines()
        self.assertEqual(len(lines), 2, self.stdout)
        for line, name in zip(lines, ["tiny-cnn", "vit-tiny"]):
            path = os.path.join(self.out, name + ".pt")
            n = export_models.parameter_count(export_models.build(name))
            self.assertRegex(line, r"^%s: %s, scripted, %d parameters, %d bytes, forward batch 32 "
                             r"\(eval, \d+ thread\(s\)\) [0-9.e+-]+ s$"
                             % (name, path, n, os.path.getsize(path)))
        self.assertEqual(export_models.parameter_count(export_models.build("vit-tiny")), 545930)

    def test_loaded_module_matches_and_trains(self):
        self.assertEqual(self.rc, 0, self.stderr)
        for name in ("tiny-cnn", "vit-tiny"):
            path = os.path.join(self.out, name + ".pt")
            extra = {export_models.EXTRA_FILE: ""}
            m = torch.jit.load(path, _extra_files=extra)
            meta = json.loads(extra[export_models.EXTRA_FILE])
            self.assertEqual((meta["name"], meta["method"], meta["seed"], meta["classes"]),
                             (name, "scripted", 3, 10))
            self.assertEqual(meta["input_shape"], [3, 32, 32])
            eager = export_models.build(name, seed=3)
            self.assertEqual(meta["parameters"], export_models.parameter_count(eager))
            for (k, v), (k2, v2) in zip(m.state_dict().items(), eager.state_dict().items()):
                self.assertEqual(k, k2)
                self.assertTrue(torch.equal(v, v2), k)  # the seed's weights
            m.train(True)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            x, y = torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])
            before = [p.detach().clone() for p in m.parameters()]
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            self.assertTrue(torch.isfinite(loss))
            self.assertFalse(all(torch.equal(a, b) for a, b in zip(before, m.parameters())))

    def test_scripted_batchnorm_follows_train_and_eval(self):
        self.assertEqual(self.rc, 0, self.stderr)
        m = torch.jit.load(os.path.join(self.out, "tiny-cnn.pt"))
        x = torch.randn(8, 3, 32, 32) * 3 + 1
        with torch.no_grad():
            m.train(True)
            mean = m.bn1.running_mean.clone()
            train_out = m(x)
            self.assertFalse(torch.equal(mean, m.bn1.running_mean))  # batch statistics used
            m.train(False)
            mean = m.bn1.running_mean.clone()
            eval_out = m(x)
            self.assertTrue(torch.equal(mean, m.bn1.running_mean))  # running ones, unchanged
        self.assertFalse(torch.allclose(train_out, eval_out))


class _Unscriptable(nn.Module):
    """A try statement: TorchScript cannot compile it; tracing records one call."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        x = self.bn(self.conv(x))
        try:
            x = torch.relu(x)
        except RuntimeError:
            pass
        return self.fc(x.mean(dim=(2, 3)))


class TraceFallbackTest(unittest.TestCase):
    def test_unscriptable_model_is_traced_in_train_mode(self):
        torch.manual_seed(0)
        model = _Unscriptable()
        state = {k: v.clone() for k, v in model.state_dict().items()}
        module, method = export_models.to_torchscript(model)
        self.assertEqual(method, "traced")
        for k, v in model.state_dict().items():  # the trace's call left the statistics alone
            self.assertTrue(torch.equal(v, state[k]), k)
        with util.TempDir() as d:
            path = os.path.join(d, "u.pt")
            module.save(path)
            export_models.check_loaded(path, model, method)  # trains its copy one step
            loaded = torch.jit.load(path)
        # Traced in train mode: eval mode still normalises with the batch's statistics.
        x = torch.randn(4, 3, 32, 32) * 2 + 1
        loaded.train(False)
        model.train(True)
        with torch.no_grad():
            self.assertTrue(torch.allclose(loaded(x), model(x), atol=1e-5))


class ExportErrorsTest(unittest.TestCase):
    def refused(self, args):
        with util.TempDir() as d:
            rc, out, err = util.run([util.PYTHON, EXPORT] + args, cwd=d, timeout=60)
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("error: "), err)
        return err.strip()

    def test_bad_flags(self):
        self.assertIn("unknown model 'resnet18' (known: resnet50, mobilenet_v2, vit-tiny, "
                      "tiny-cnn)", self.refused(["--out", "x", "--models", "resnet18"]))
        self.assertIn("--out", self.refused(["--models", "tiny-cnn"]))
        self.assertIn("names a model twice",
                      self.refused(["--out", "x", "--models", "tiny-cnn,tiny-cnn"]))
        self.assertIn("--seed", self.refused(["--out", "x", "--seed", "-1"]))
        self.assertIn("not a folder", self.refused(["--out", EXPORT]))


if __name__ == "__main__":
    unittest.main()
