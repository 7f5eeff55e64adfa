"""ResNet-18 CIFAR of measure/pytorch/resnet.py against the C++ model's parameter list."""

import os
import re
import unittest

import pytorch_test_util as util
import torch

import resnet

PROFILE = os.path.join(util.REPO, "reports", "cpu-xeon-2c", "profile.yaml")


def profile_params(model_name):
    """(name, bytes) of every params entry of one model's layers in a profile.yaml."""
    with open(PROFILE) as f:
        text = f.read()
    start = text.index('  "%s":' % model_name)
    following = re.compile(r'^  "[^"]+":', re.M).search(text, start + 1)
    section = text[start:following.start() if following else len(text)]
    return [(m.group(1), int(m.group(2)))
            for m in re.finditer(r'\{name: "([^"]+)", bytes: (\d+)\}', section)]


class ModelTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.model = resnet.ResNet18()

    def test_parameter_count(self):
        params = list(self.model.parameters())
        self.assertEqual(sum(p.numel() for p in params), 11173962)
        self.assertEqual(resnet.PARAMETERS, 11173962)
        self.assertEqual(len(params), 62)
        self.assertEqual(resnet.PARAMETER_TENSORS, 62)

    def test_names_and_order_equal_the_cpp_model(self):
        expected = profile_params("resnet18-cifar")
        self.assertEqual(len(expected), 62, "profile.yaml parse")
        got = [(n, p.numel() * p.element_size()) for n, p in self.model.named_parameters()]
        self.assertEqual(got, expected)

    def test_shortcut_only_where_shape_changes(self):
        names = [n for n, _ in self.model.named_parameters() if ".shortcut." in n]
        self.assertEqual(names, ["layer%d.0.shortcut.%s" % (i, s) for i in (2, 3, 4)
                                 for s in ("0.weight", "1.weight", "1.bias")])

    def test_forward_shape(self):
        self.model.eval()
        with torch.no_grad():
            out = self.model(torch.randn(2, 3, 32, 32))
        self.assertEqual(tuple(out.shape), (2, 10))


if __name__ == "__main__":
    unittest.main()
