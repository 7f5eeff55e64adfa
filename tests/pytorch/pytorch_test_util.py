"""Shared helpers of the measure/pytorch tests (run from this folder: python3 -m unittest -v
test_x). The modules under test are imported from measure/pytorch, appended to sys.path."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("TRAINSIM_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
PYTORCH_DIR = os.path.join(REPO, "measure", "pytorch")
if PYTORCH_DIR not in sys.path:
    sys.path.append(PYTORCH_DIR)

PYTHON = sys.executable
# Launcher variables a surrounding job might have set; the tests start their own jobs.
_LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_VARS}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def torchrun_command():
    """torchrun of this interpreter's PyTorch (/usr/bin/torchrun for /usr/bin/python3), else
    `python -m torch.distributed.run`, its module. Debian's torchrun 1.13 fails on Python 3.11
    with its default --redirects 0, so callers always pass --redirects 1 --tee 1."""
    found = shutil.which("torchrun", path=os.path.dirname(PYTHON))
    if found:
        with open(found, "rb") as f:
            first = f.readline().decode("utf-8", "replace")
        interpreter = os.path.realpath(first[2:].strip().split()[0]) if first.startswith("#!") \
            else ""
        if interpreter == os.path.realpath(PYTHON):
            return [found]
    return [PYTHON, "-m", "torch.distributed.run"]


def run(args, cwd, timeout=180, env=None):
    """Runs a command in its own session; on timeout the whole process group is killed.
    Returns (returncode, stdout, stderr)."""
    p = subprocess.Popen(args, cwd=cwd, env=env or clean_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError("timed out after %d s: %s\nstdout:\n%s\nstderr:\n%s"
                             % (timeout, " ".join(args), out, err))
    return p.returncode, out, err


def write_records(path, labels, images_chw):
    """Raw CIFAR records: label byte + 3072 CHW pixel bytes each."""
    with open(path, "wb") as f:
        for label, image in zip(labels, images_chw):
            f.write(bytes([label]))
            f.write(bytes(image))


def make_synthetic(folder, train=64, test=20, seed=0):
    import synthetic
    synthetic.write_synthetic(folder, train, test, seed)
    return folder


class TempDir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="trainsim-pytest-")

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)
