#!/usr/bin/env python3
"""Bad values deep inside valid inputs: mutate one value or line of an input `simulate` accepts,
run `simulate` on it, and count what no user should see (docs/RELIABILITY.md).

Each case starts from an accepted input of one reader (sweep configs, the GPU and CPU profiles,
runs.csv files fed to --compare, nccl-tests logs fed through collectives_log:, fit configs; the
READERS table below), changes one numeric token to an edge value (0, negatives, denormals, 1e308,
2^62, NaN, inf, x1e6, ...), or deletes or repeats one line, and runs `simulate` on it with a time
limit. Accepted outcomes: exit 0, or exit 2 with one `error: ...` line. Findings: an `internal`
error, any other exit status, a signal, a run past the time limit. Each finding's input is kept
under OUT/findings/. Mutations come from a seeded generator, so a run is reproducible.

    scripts/mutate-inputs.py [--per-reader N (2000)] [--seed S (1)] [--jobs J (cores)]
        [--timeout SECONDS (60)] [--simulate build/bin/simulate] [--out build/mutate]
        [READER ...]          readers: config profile runs_csv nccl_log fit

Exit: 0 no finding, 1 findings, 2 a bad flag.
"""

import argparse
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EDGE_VALUES = ["0", "-1", "-0.5", "1e-320", "5e-324", "1e-12", "1e308", "1e400", "-1e308",
               "4611686018427387904", "9223372036854775807", "9223372036854775808",
               "2147483648", "nan", ".nan", "inf", ".inf", "-.inf", "0.5", "1", "3", "0x10",
               "1e9", "99999999999999999999999"]

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")


class Source:
    """One accepted input of a reader and how `simulate` is pointed at a mutated copy of it."""

    def __init__(self, path, command, skip_comments=True):
        self.path = os.path.join(ROOT, path)
        self.command = command  # (mutated file, work folder) -> argv after the binary
        self.skip_comments = skip_comments


def config_pointing(work, lines):
    path = os.path.join(work, "c.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def profile_config(f, w, extra):
    return [config_pointing(w, ["profile: " + f, "model: resnet18-cifar", "dataset: {train_samples: 50000}",
                                "loader: {workers: 2}"] + extra), "-q"]


def log_config(topology):
    return lambda f, w: [config_pointing(w, [topology, "collectives: {op: all_reduce, min_bytes: 8, max_bytes: 128M, factor: 2}",
                                             "collectives_log: " + f]), "-q"]


def config_of(path):
    return os.path.join(ROOT, path)


# Each reader's accepted inputs; case i mutates source i mod len(sources).
READERS = {
    # Sweep configs: the main job's, the CPU sweep, the H100 sweep, an assumed link.
    "config": [Source(p, lambda f, w: [f, "-q"]) for p in (
        "configs/sweep.yaml", "configs/cpu-sweep.yaml", "configs/h100-sweep.yaml",
        "configs/example-assumed-interconnect.yaml")],
    # Profiles: the main job's GPU profile (on its topology) and the 2-core CPU's.
    "profile": [
        Source("reports/nvidia-h200-x1/profile.yaml", lambda f, w: profile_config(f, w, [
            "topology: {preset: hgx-h100}",
            "sweep: {strategy: [dp, ddp], gpus: [1, 2, 4], batch_per_gpu: [32, 512, 8192]}"])),
        Source("reports/cpu-epyc-2c/profile.yaml", lambda f, w: profile_config(f, w, [
            "sweep: {strategy: [ddp], gpus: [1, 2], batch_per_gpu: [32, 128]}"]))],
    # Measured runs, each with the validation config it is compared with.
    "runs_csv": [
        Source("reports/nvidia-h200-x1/runs.csv", lambda f, w: [config_of("configs/h200-validation.yaml"), "--compare", f, "-q"]),
        Source("reports/cpu-epyc-2c/runs.csv", lambda f, w: [config_of("configs/cpu-validation.yaml"), "--compare", f, "-q"])],
    # Published nccl-tests logs through a topology's collectives table.
    "nccl_log": [
        Source("reports/published/nccl-tests/nccl-v100pcie-4gpu-sheffield-bessemer-nccl242.log",
               log_config("topology: {gpu: v100-pcie-32gb, gpus_per_node: 4, fabric: pcie}"), skip_comments=False),
        Source("reports/published/nccl-tests/nccl-a100sxm4-8gpu-modal-cs244c-nccl2293.log",
               log_config("topology: {gpu: a100-sxm4-40gb, nodes: 1, gpus_per_node: 8, fabric: nvswitch}"),
               skip_comments=False)],
    # Fit configs (observations and held-out cells; no profile, or a transferred one), and one
    # through --holdout's leave-one-out.
    "fit": [Source(p, lambda f, w: [f, "-q", "--threads", "1"]) for p in (
        "configs/fit/cpu-epyc-2c.yaml", "configs/fit/pollux-t4.yaml", "configs/fit/rtx-2080ti-to-titan-rtx.yaml")] + [
        Source("configs/fit/cpu-epyc-2c.yaml", lambda f, w: [f, "-q", "--holdout", "--threads", "1"])],
}


def absolute_paths(text, source):
    """The copy lives elsewhere: relative `profile:` and log paths are made absolute."""
    base = os.path.dirname(source)

    def fix(m):
        path = m.group(2)
        if path.startswith("/"):
            return m.group(0)
        return m.group(1) + os.path.normpath(os.path.join(base, path))
    return re.sub(r"((?:profile|collectives_log|compare):\s*)([^\s,}#]+)", fix, text)


def mutate(lines, rng, skip_comments):
    """One mutation: (description, new lines)."""
    body = [i for i, line in enumerate(lines) if line.strip() and not (skip_comments and line.lstrip().startswith("#"))]
    kind = rng.random()
    if kind < 0.08 and body:
        i = rng.choice(body)
        return "delete line %d" % (i + 1), lines[:i] + lines[i + 1:]
    if kind < 0.12 and body:
        i = rng.choice(body)
        return "repeat line %d" % (i + 1), lines[:i + 1] + [lines[i]] + lines[i + 1:]
    numbered = [(i, m) for i in body for m in NUMBER.finditer(lines[i])]
    if not numbered:
        return "unchanged", lines
    i, m = rng.choice(numbered)
    old = m.group(0)
    if rng.random() < 0.6:
        new = rng.choice(EDGE_VALUES)
    elif re.fullmatch(r"-?\d+", old):
        new = str(int(old) * rng.choice([0, -1, 2, 1000, 10 ** 6, 10 ** 12, 2 ** 31, 2 ** 40]) + rng.choice([0, 1]))
    else:
        new = repr(float(old) * rng.choice([1e6, 1e-6, 1e12, -1, 1e-300, 1e300]))
    line = lines[i][:m.start()] + new + lines[i][m.end():]
    return "line %d: %s -> %s" % (i + 1, old, new), lines[:i] + [line] + lines[i + 1:]


_LINES = {}


def source_lines(source):
    """The source's lines, its relative paths made absolute (read once per process)."""
    if source.path not in _LINES:
        with open(source.path) as f:
            lines = absolute_paths(f.read(), source.path).split("\n")
        while lines and lines[-1] == "":
            lines.pop()
        _LINES[source.path] = lines
    return _LINES[source.path]


def run_case(args):
    simulate, reader_name, index, seed, out, timeout = args
    sources = READERS[reader_name]
    source = sources[index % len(sources)]
    rng = random.Random("%s:%d:%d" % (reader_name, seed, index))
    what, lines = mutate(source_lines(source), rng, source.skip_comments)
    what = "%s: %s" % (os.path.relpath(source.path, ROOT), what)
    work = os.path.join(out, "work", "%s-%d" % (reader_name, index))
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, os.path.basename(source.path))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    argv = [simulate] + source.command(path, work)
    started = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=timeout, errors="replace")
        code, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        code, err = None, ""
    seconds = time.monotonic() - started
    verdict = "ok"
    if code is None:
        verdict = "hang (over %d s)" % timeout
    elif code < 0:
        verdict = "signal %d" % -code
    elif "internal" in err:
        verdict = "internal error"
    elif code not in (0, 2):
        verdict = "exit %d" % code
    elif code == 2 and not err.strip().startswith("error:"):
        verdict = "exit 2 without one error line"
    if verdict != "ok":
        keep = os.path.join(out, "findings", reader_name)
        os.makedirs(keep, exist_ok=True)
        kept = os.path.join(keep, "%d-%s" % (index, os.path.basename(source.path)))
        shutil.copy(path, kept)
        with open(kept + ".txt", "w") as f:
            f.write("%s\n%s\n%s\n%s\n" % (what, " ".join(argv), verdict, err[-2000:]))
    shutil.rmtree(work, ignore_errors=True)
    return reader_name, code, verdict, what, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("readers", nargs="*", metavar="READER")
    parser.add_argument("--per-reader", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--simulate", default=os.path.join(ROOT, "build/bin/simulate"))
    parser.add_argument("--out", default=os.path.join(ROOT, "build/mutate"))
    a = parser.parse_args()
    readers = a.readers or list(READERS)
    for r in readers:
        if r not in READERS:
            print("error: scripts/mutate-inputs.py: no reader '%s' (readers: %s)" % (r, " ".join(READERS)),
                  file=sys.stderr)
            return 2
    if a.per_reader < 1 or a.jobs < 1 or a.timeout < 1:
        print("error: scripts/mutate-inputs.py: --per-reader, --jobs and --timeout must be >= 1", file=sys.stderr)
        return 2
    if not os.access(a.simulate, os.X_OK):
        print("error: scripts/mutate-inputs.py: %s: no simulate binary (build it: scripts/test.sh)" % a.simulate,
              file=sys.stderr)
        return 2
    cases = [(a.simulate, r, i, a.seed, a.out, a.timeout) for r in readers for i in range(a.per_reader)]
    counts = {r: {"runs": 0, "exit 0": 0, "exit 2": 0, "findings": 0, "seconds": 0.0} for r in readers}
    started = time.monotonic()
    last = started
    with concurrent.futures.ProcessPoolExecutor(max_workers=a.jobs) as pool:
        for done, (r, code, verdict, what, seconds) in enumerate(pool.map(run_case, cases, chunksize=8), 1):
            c = counts[r]
            c["runs"] += 1
            c["seconds"] += seconds
            if verdict != "ok":
                c["findings"] += 1
                print("finding: %s: %s: %s" % (r, what, verdict), file=sys.stderr)
            elif code in (0, 2):
                c["exit %d" % code] += 1
            now = time.monotonic()
            if now - last >= 10:
                last = now
                print("mutate: %d/%d runs, %.0f s" % (done, len(cases), now - started), file=sys.stderr)
    print("reader      runs   accepted (exit 0)   refused (exit 2)   findings   mean run")
    for r in readers:
        c = counts[r]
        print("%-10s %5d   %17d   %16d   %8d   %6.2f s" % (r, c["runs"], c["exit 0"], c["exit 2"], c["findings"],
                                                         c["seconds"] / max(1, c["runs"])))
    total = sum(c["findings"] for c in counts.values())
    print("%d findings over %d mutated inputs (seed %d, %.0f s); findings kept in %s" % (
        total, len(cases), a.seed, time.monotonic() - started, os.path.join(a.out, "findings")))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
