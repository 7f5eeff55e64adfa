#!/usr/bin/env python3
"""Appends plain_ddp.py's report to a runs.csv, so that `simulate --compare` scores the plain
script as it scores the reference trainer (docs/VALIDATION.md).

    torchrun ... scripts/validation/plain_ddp.py ... | scripts/validation/plain_ddp_row.py RUNS.csv [--probe-s S]

Reads the `plain_ddp: {json}` line from stdin (other lines are passed through to stderr; a
prefix before it, as torchrun --tee writes, is skipped) and
appends one row, trainer `pytorch` (PyTorch's loop and DataLoader), with the measure/pytorch
runs.csv writer (locked, atomic). --probe-s: the calibration probe timed right before the run
(measure/pytorch/probe.py), for the comparison's drift. Exit 1 when no report line came (the run
failed).
"""

import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "measure", "pytorch"))
import runs_csv  # noqa: E402

PREFIX = "plain_ddp: "


def main():
    p = argparse.ArgumentParser(description="Appends plain_ddp.py's report (stdin) to RUNS.csv.")
    p.add_argument("runs")
    p.add_argument("--probe-s", type=float, default=None)
    args = p.parse_args()
    report = None
    for line in sys.stdin:
        at = line.find(PREFIX)  # torchrun --tee prefixes a rank's lines ("[default0]:")
        if at >= 0:
            report = json.loads(line[at + len(PREFIX):])
        else:
            sys.stderr.write(line)
    if report is None:
        sys.stderr.write("plain_ddp_row.py: no 'plain_ddp:' report line in the input\n")
        return 1
    row = {c: None for c in runs_csv.COLUMNS}
    row.update({k: report[k] for k in ("gpus", "batch_per_gpu", "loader_workers", "train_samples", "epoch_s",
                                       "iterations", "epochs", "threads", "data", "final_loss", "load_before",
                                       "load_after")})
    row.update({"strategy": "ddp", "train_s": report["epoch_s"], "device": "cpu",
                "samples_per_s": report["train_samples"] / report["epoch_s"],
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "trainer": "pytorch", "test_samples": 0, "probe_s": args.probe_s})
    runs_csv.append_row(args.runs, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
