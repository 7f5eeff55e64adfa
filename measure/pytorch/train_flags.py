"""The flags train.py shares with `measure train`, the C++ trainer: measure/runs/train_flags.json is
the one table both build them from (name, kind, range or choices, default, help; the C++ trainer
compiles it in). Each trainer adds its own flags after these (docs/RUNS.md)."""

import argparse
import json
import os

TABLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runs",
                     "train_flags.json")


def shared_flags():
    """The table's flags in its order, each a dict as in the file."""
    with open(TABLE) as f:
        return json.load(f)["flags"]


def integer_in(low, high=None):
    """An argparse type: an integer >= low (and <= high where given), else an error naming it."""
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("'%s' is not an integer" % text)
        if v < low:
            raise argparse.ArgumentTypeError("%d is below the minimum %d" % (v, low))
        if high is not None and v > high:
            raise argparse.ArgumentTypeError("%d is too large" % v)
        return v
    return parse


def add_shared_flags(parser):
    """Adds the table's flags to an argparse parser, in a group of their own."""
    group = parser.add_argument_group(
        "shared with measure train (measure/runs/train_flags.json)")
    for flag in shared_flags():
        kind = flag["kind"]
        option = "--" + flag["name"]
        if kind == "switch":
            group.add_argument(option, action="store_true", help=flag["help"])
            continue
        kw = {"default": flag.get("default"), "help": flag["help"]}
        if "default" in flag:
            kw["help"] += " (default %s)" % flag["default"]
        if "metavar" in flag:
            kw["metavar"] = flag["metavar"]
        if kind == "int":
            kw["type"] = integer_in(flag["min"], flag.get("max"))
        elif kind == "choice":
            kw["choices"] = flag["choices"]
        elif kind != "text":
            raise ValueError("%s: %s: kind '%s' is not int, choice, text or switch"
                             % (TABLE, option, kind))
        group.add_argument(option, **kw)
