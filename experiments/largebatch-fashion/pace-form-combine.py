#!/usr/bin/python3
"""The step equation's form test on several pace-probe.py outputs of one state taken together (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "Does the step equation's form carry").

Reads every `pace ... ratio R lr_ratio L ... gain_cooled@D G` line of the files (each a draw of
one pair; a gain outside its readings counts as missing), takes each pair's geometric mean over
its draws at the cooling depth --depth, and runs pace-probe.py's step_equation_check on the pairs
in the order they first appear:

    /usr/bin/python3 experiments/largebatch-fashion/pace-form-combine.py reports/cpu-epyc-2c/pace-probe/m0.9-s0-b128-train-half-form*.txt
"""
import argparse
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
spec = importlib.util.spec_from_file_location("pace_probe", os.path.join(HERE, "pace-probe.py"))
pace_probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pace_probe)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--depth", default="200", help="the cooling depth whose gains are read (default 200)")
    a = parser.parse_args()
    line_re = re.compile(r"^pace\s+\d+\s+\S+\s+ratio (\d+) lr_ratio (\S+)\s.*gain_cooled@" + re.escape(a.depth) + r" (\S+)")
    draws = {}
    for path in a.files:
        try:
            text = open(path).read()
        except OSError as e:
            sys.exit(f"pace-form-combine: {path}: {e.strerror}")
        for line in text.splitlines():
            m = line_re.match(line)
            if m:
                value = m.group(3)
                draws.setdefault((int(m.group(1)), float(m.group(2))), []).append(
                    None if value[0] in "<>" else float(value))
    if len(draws) < 3:
        sys.exit(f"pace-form-combine: the files hold {len(draws)} pairs at cooling depth {a.depth}; the test needs 3 or more")
    pairs = list(draws)
    means = [pace_probe.geometric_mean(draws[p]) for p in pairs]
    for p, mean in zip(pairs, means):
        shown = ", ".join("outside" if v is None else f"{v:.2f}" for v in draws[p])
        print(f"ratio {p[0]} lr_ratio {p[1]:g}: {len(draws[p])} draws ({shown}), geometric mean "
              + ("-" if mean is None else f"{mean:.3f}"))
    for line in pace_probe.step_equation_check(pairs, means):
        print(line)


if __name__ == "__main__":
    main()
