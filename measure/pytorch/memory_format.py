"""The memory formats of the reference trainer's steps (docs/PRECISION.md "Memory format"), as
format/memory_format.h names them: nchw, PyTorch's default (every tensor contiguous N, C, H, W), and
channels_last, which mirrors PyTorch's `model.to(memory_format=torch.channels_last)`: the model's
4-D parameters and buffers restrided N, H, W, C, and every input batch made channels-last before
the forward, so that the convolutions run on channels-last kernels (their outputs, the
activations, stay channels-last from there on)."""

import torch

MEMORY_FORMATS = ("nchw", "channels_last")


def _checked(memory_format):
    if memory_format not in MEMORY_FORMATS:
        raise ValueError("memory format '%s' is not one of %s"
                         % (memory_format, ", ".join(MEMORY_FORMATS)))
    return memory_format


def convert_model(model, memory_format):
    """`model` for `memory_format`, converted in place and returned: for channels_last
    model.to(memory_format=torch.channels_last), which restrides its 4-D parameters and buffers
    (the others stay as they are); for nchw unchanged. Convert before DistributedDataParallel
    or DataParallel wraps the model: DDP lays out its gradient buckets after the parameters'
    strides when it is built, so a model restrided afterwards would have every gradient copied
    into mismatched bucket views (PyTorch warns "Grad strides do not match bucket view
    strides"); DataParallel replicates the module as it finds it."""
    if _checked(memory_format) == "channels_last":
        return model.to(memory_format=torch.channels_last)
    return model


def convert_input(x, memory_format):
    """An input batch for `memory_format`, after it is moved to the device: for channels_last a
    4-D tensor made channels-last (x.contiguous(memory_format=torch.channels_last), a copy unless
    it is already); anything else, and every batch for nchw, unchanged."""
    if _checked(memory_format) == "channels_last" and x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x
