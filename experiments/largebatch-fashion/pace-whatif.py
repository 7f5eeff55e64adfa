#!/usr/bin/python3
"""What the large-batch model predicts with the pace probe's coefficients in place of the single-step statistics (reports/cpu-epyc-2c/largebatch-fashion-gap/NOTES.md, "The probe's coefficients in the path").

A diagnostic, not a prediction: it copies a folder of `measure baseline` runs to a scratch folder,
rescales the predicting baseline's readings there, and runs `measure largebatch-compare` on the
copy and on an untouched copy side by side. The rescaling puts, at the probed state, the plain
step equation's x_0 and B_n where the probe's (alpha, nu) put them (pace-probe.py: x_0 =
alpha + nu, B_n = B_0 nu / alpha), with the same factors at every reading:

    k_n = B_n,probe / B_n,model      every reading's B_simple and B_noise (and its standard error) times k_n
    k_x = x_0,probe / x_0,model      every reading's max_lr set so that its x_0 = lr (1 + B_simple/B_0) / max_lr is k_x times its own

B_n,model and x_0,model are read from the baseline's curve sample nearest --at examples, as the
model reads them (B_noise where its standard error is at most a quarter of it, else B_simple).
The scratch folder is not a profile: never write it under reports/.

    /usr/bin/python3 experiments/largebatch-fashion/pace-whatif.py --dir reports/cpu-epyc-2c/largebatch-fashion-gap \\
        --alpha 0.13 --nu 0.60 --out /tmp/pace-whatif -- --from-seed 0
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

NUMBER = r"([-+0-9.eE]+|\.nan|\.inf)"
FIGURES = ("loss error:", "accuracy error:", "epochs-to-target error:")
MAX_NOISE_SCALE_RELATIVE_ERROR = 0.25  # the model's kMaxNoiseScaleRelativeError


def field(line, key):
    """The number after `key: ` in a flow-style line (not a longer key ending in it), or None."""
    m = re.search(r"(?<![a-z_])" + key + r": " + NUMBER, line)
    return float(m.group(1)) if m else None


def set_field(line, key, value):
    return re.sub(r"(?<![a-z_])" + key + r": " + NUMBER, f"{key}: {value!r}", line, count=1)


def curve_header(lines, path):
    """The curve's batch B_0 and lr (the first training entry's)."""
    batch = lr = None
    start = next((i for i, line in enumerate(lines) if line.startswith("training:")), len(lines))
    for line in lines[start:]:
        stripped = line.strip().lstrip("- ")
        if batch is None and stripped.startswith("batch:"):
            batch = float(stripped.split(":", 1)[1])
        if lr is None and stripped.startswith("lr:"):
            lr = float(stripped.split(":", 1)[1])
    if batch is None or lr is None:
        sys.exit(f"pace-whatif: {path}: no training curve (batch and lr)")
    return batch, lr


def model_reading(lines, at, batch, lr, path):
    """x_0 and B_n as the model reads them at the curve sample nearest `at` examples."""
    best = None
    for line in lines:
        e, bs, mx = field(line, "examples"), field(line, "noise_scale"), field(line, "max_lr")
        if "window_examples" not in line or e is None or not bs or not mx:
            continue
        if best is None or abs(e - at) < abs(best[0] - at):
            best = (e, line)
    if best is None:
        sys.exit(f"pace-whatif: {path}: no curve sample with noise_scale and max_lr")
    e, line = best
    bs, mx = field(line, "noise_scale"), field(line, "max_lr")
    bn, se = field(line, "curvature_noise_scale"), field(line, "curvature_noise_scale_se")
    counts = bn and bn > 0 and se is not None and se <= MAX_NOISE_SCALE_RELATIVE_ERROR * bn
    return e, lr * (1 + bs / batch) / mx, (bn if counts else bs), ("B_noise" if counts else "B_simple")


def rescale(line, kx, kn, batch):
    bs, mx = field(line, "noise_scale"), field(line, "max_lr")
    if not bs or not mx or bs <= 0 or mx <= 0:
        return line
    line = set_field(line, "max_lr", mx * (1 + kn * bs / batch) / ((1 + bs / batch) * kx))
    line = set_field(line, "noise_scale", bs * kn)
    for key in ("curvature_noise_scale", "curvature_noise_scale_se"):
        v = field(line, key)
        if v is not None:
            line = set_field(line, key, v * kn)
    return line


def figures(folder, compare_args, measure):
    run = subprocess.run([measure, "largebatch-compare", "--dir", folder, "--quiet", *compare_args],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"pace-whatif: measure largebatch-compare --dir {folder} failed:\n{run.stderr.strip()}")
    lines = [l for l in run.stdout.splitlines() if l.startswith(FIGURES)]
    return lines or ["(no figures printed)"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="a folder of measure baseline runs (runs/*.yaml)")
    parser.add_argument("--baseline", default="b128-constant-s0.yaml",
                        help="the predicting baseline's file in runs/ (default: seed 0's, as --from-seed 0)")
    parser.add_argument("--alpha", type=float, required=True, help="the probe's curvature coefficient")
    parser.add_argument("--nu", type=float, required=True, help="the probe's noise coefficient")
    parser.add_argument("--at", type=float, default=29440, help="the probed state, in examples (default: half an epoch)")
    parser.add_argument("--keep-x0", action="store_true", help="k_x = 1: only B_n moves")
    parser.add_argument("--out", required=True, help="the scratch folder (replaced)")
    parser.add_argument("--measure", default="build/bin/measure")
    parser.add_argument("compare_args", nargs="*", help="after --: measure largebatch-compare's flags")
    a = parser.parse_args()
    if a.alpha <= 0 or a.nu < 0 or a.alpha + a.nu >= 2:
        sys.exit("pace-whatif: need alpha > 0, nu >= 0 and alpha + nu < 2 (the step equation's range)")
    source = os.path.join(a.dir, "runs", a.baseline)
    if not os.path.isfile(source):
        sys.exit(f"pace-whatif: {source}: no such file")
    if os.path.abspath(a.out).startswith(os.path.abspath("reports")):
        sys.exit("pace-whatif: --out must not be under reports/: the rescaled copy is not a profile")
    lines = open(source).read().split("\n")
    batch, lr = curve_header(lines, source)
    e, x0_model, bn_model, bn_name = model_reading(lines, a.at, batch, lr, source)
    x0_probe, bn_probe = a.alpha + a.nu, batch * a.nu / a.alpha
    kx = 1.0 if a.keep_x0 else x0_probe / x0_model
    kn = bn_probe / bn_model
    print(f"# {source}, sample at {e:.0f} examples: x_0 {x0_model:.3f}, B_n {bn_model:.1f} ({bn_name}); "
          f"the probe's: x_0 {x0_probe:.3f}, B_n {bn_probe:.1f}; k_x {kx:.3f}, k_n {kn:.2f}")
    shutil.rmtree(a.out, ignore_errors=True)
    for name in ("as-is", "rescaled"):
        shutil.copytree(os.path.join(a.dir, "runs"), os.path.join(a.out, name, "runs"))
    with open(os.path.join(a.out, "rescaled", "runs", a.baseline), "w") as f:
        f.write("\n".join(rescale(line, kx, kn, batch) for line in lines))
    for name in ("as-is", "rescaled"):
        for line in figures(os.path.join(a.out, name), a.compare_args, a.measure):
            print(f"{name:9s} {line}")


if __name__ == "__main__":
    main()
