"""The numeric modes of the reference trainer's steps (docs/PRECISION.md), as format/precision.h
names them: fp32, and bf16-amp (forward and loss under torch.autocast to bfloat16)."""

import torch

PRECISIONS = ["fp32", "bf16-amp"]


def autocast(device_type, precision):
    """The context a step's forward and loss run in: torch.autocast to bfloat16 for bf16-amp, a
    disabled one for fp32."""
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=precision == "bf16-amp")
