"""The default machine name, as the C++ `default_machine_name` (measure/machine.cpp) makes it:
cuda: slug(name of device 0) + "-x" + visible device count ("nvidia-h100-80gb-hbm3-x1");
cpu:  "cpu-" + short_cpu_slug(model name) + "-" + cores this process may run on + "c".
"""

import os
import re


def slug(text):
    """Lower case; each run of characters other than [a-z0-9] becomes one '-', none at the ends."""
    out = []
    pending_dash = False
    for ch in text.lower():
        if not ("a" <= ch <= "z" or "0" <= ch <= "9"):
            pending_dash = bool(out)
            continue
        if pending_dash:
            out.append("-")
        pending_dash = False
        out.append(ch)
    return "".join(out)


def short_cpu_slug(cpu_model):
    """Trademarks, vendor names, CPU/Processor, the N-Core count and the @ clock dropped."""
    model = cpu_model.lower()
    at = model.find("@")
    if at >= 0:
        model = model[:at]
    for mark in ("(r)", "(tm)"):
        while mark in model:  # as the C++ loop: a removal may join a new mark
            model = model.replace(mark, "", 1)
    kept = [w for w in model.split()
            if w not in ("intel", "amd", "cpu", "processor") and not w.endswith("-core")]
    s = slug(" ".join(kept))
    return s or "cpu"


def _proc_field(path, key):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(key) and ":" in line:
                    return line.split(":", 1)[1].strip(" \t\n")
    except OSError:
        pass
    return ""


def cpu_model():
    name = _proc_field("/proc/cpuinfo", "model name") or _proc_field("/proc/cpuinfo", "Model")
    return name or "unknown"


def cpu_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_machine_name(device):
    """`device` is "cpu" or "cuda"."""
    if device == "cuda":
        import torch
        return "%s-x%d" % (slug(torch.cuda.get_device_name(0)), torch.cuda.device_count())
    return "cpu-%s-%dc" % (short_cpu_slug(cpu_model()), cpu_cores())
