"""The flags train.py shares with `measure train`: built from measure/runs/train_flags.json, the
one table both trainers read (the C++ side: tests/runs_options_test.cpp)."""

import argparse
import json
import unittest

import pytorch_test_util  # noqa: F401  (puts measure/pytorch on the path)

import memory_format
import precision
import train
import train_flags


class TrainFlagsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(train_flags.TABLE) as f:
            cls.table = json.load(f)["flags"]

    def test_every_flag_of_the_table_with_its_default_and_choices(self):
        parser = argparse.ArgumentParser()
        train_flags.add_shared_flags(parser)
        actions = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
        for flag in self.table:
            action = actions["--" + flag["name"]]
            if flag["kind"] == "switch":
                self.assertIs(action.default, False, flag["name"])
                continue
            self.assertEqual(action.default, flag.get("default"), flag["name"])
            self.assertEqual(action.choices, flag.get("choices"), flag["name"])

    def test_train_py_parses_them_to_the_tables_defaults(self):
        a = train.parse_args(["--data", "/d"])
        for flag in self.table:
            value = getattr(a, flag["name"].replace("-", "_"))
            expected = False if flag["kind"] == "switch" else flag.get("default")
            self.assertEqual(value, expected, flag["name"])

    def test_the_precisions_are_the_trainers(self):
        choices = next(f["choices"] for f in self.table if f["name"] == "precision")
        self.assertEqual(list(choices), list(precision.PRECISIONS))

    def test_the_memory_formats_are_the_trainers(self):
        choices = next(f["choices"] for f in self.table if f["name"] == "memory-format")
        self.assertEqual(list(choices), list(memory_format.MEMORY_FORMATS))
        self.assertEqual(train.parse_args(["--data", "/d"]).memory_format, "nchw")
        a = train.parse_args(["--data", "/d", "--memory-format", "channels_last"])
        self.assertEqual(a.memory_format, "channels_last")

    def test_ranges_are_the_tables(self):
        for args, message in [(["--workers", "-1"], "-1 is below the minimum 0"),
                              (["--batch-per-gpu", "0"], "0 is below the minimum 1"),
                              (["--epochs", "1000001"], "1000001 is too large"),
                              (["--seed", "x"], "'x' is not an integer"),
                              (["--strategy", "fsdp"], "invalid choice: 'fsdp'"),
                              (["--memory-format", "nhwc"], "invalid choice: 'nhwc'")]:
            with self.assertRaises(train.UsageError) as caught:
                train.parse_args(["--data", "/d"] + args)
            self.assertIn(message, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
