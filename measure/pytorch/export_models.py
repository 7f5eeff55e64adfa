#!/usr/bin/env python3
"""Exports example models as TorchScript files for CIFAR-10-shaped input (N x 3 x 32 x 32
float32 images, 10 classes), for `measure torchscript --model FILE.pt --input-shape 3x32x32
--classes 10` and `train.py --model FILE.pt` (docs/PYTORCH.md).

    /usr/bin/python3 measure/pytorch/export_models.py --out DIR [--models a,b] [--seed S]

Models (weights freshly initialised from --seed, never pretrained):

  resnet50      torchvision.models.resnet50(num_classes=10): the ImageNet layout (7x7 stride-2
                stem and max-pool) run on 32x32 images, so layer4 works on 1x1 maps
  mobilenet_v2  torchvision.models.mobilenet_v2(num_classes=10): the ImageNet layout on 32x32
  vit-tiny      a small vision transformer written here (VitTiny): 4x4 patches -> 64 tokens, a
                stride-4 convolution embedding them to 128 dimensions, a learned position
                embedding, nn.TransformerEncoder of 4 layers (4 heads, feed-forward 256, dropout
                0.1, batch_first, post-norm), mean pooling over the tokens, LayerNorm, a linear
                head to 10 classes. Smaller than DeiT-Tiny (5.7 M parameters): 0.55 M
  tiny-cnn      a 2-convolution CNN with BatchNorm (about 6 k parameters) for quick tests

`--models` defaults to the first three (tiny-cnn only when named). Each model is written as
DIR/NAME.pt through torch.jit.script, which compiles the Python code of forward() and keeps its
branches on self.training: BatchNorm uses the batch statistics (and updates its running ones)
when the loaded module is in train mode, the running statistics in eval mode, and dropout is
active only in train mode, exactly as in the eager model. Should scripting fail (every model
above scripts on PyTorch 1.13), the model is traced instead with torch.jit.trace, in train mode
on a batch of 2: a trace records the operations one call executed, so the file then always runs
the train-mode path (BatchNorm on batch statistics, dropout on) whatever module.train(False)
says, and a data-dependent branch is frozen too; the summary line says `traced` for such a file.

Each file is checked before it is kept: loaded back with torch.jit.load, its parameter count and
values compared with the eager model's, one SGD step in train mode (finite loss, the parameters
move, BatchNorm's running statistics move where it has any), and one forward in eval mode (logits
N x 10). The file carries `trainsim.json` (torch.jit extra file): name, parameters, input shape,
classes, how it was made. One line per model on stdout: file, parameters, bytes, and the median of
3 forwards of a batch of 32 in eval mode without gradients (after one warm-up), with this
process's intra-op threads.

Exit codes: 0 done; 2 a bad flag (one `error: ...` line); 1 a failure while exporting.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn

import cli

INPUT_SHAPE = (3, 32, 32)
CLASSES = 10
EXTRA_FILE = "trainsim.json"


class VitTiny(nn.Module):
    """A small vision transformer for 32x32 images (see the module's docstring)."""

    def __init__(self, num_classes=CLASSES, patch=4, d_model=128, layers=4, heads=4,
                 feedforward=256, dropout=0.1, image=32):
        super().__init__()
        tokens = (image // patch) ** 2
        self.patch_embed = nn.Conv2d(3, d_model, kernel_size=patch, stride=patch)
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, d_model))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=feedforward,
                                           dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x):
        x = self.patch_embed(x)               # N x d x 8 x 8
        x = x.flatten(2).transpose(1, 2)      # N x 64 x d
        x = self.encoder(x + self.pos_embed)
        return self.head(self.norm(x.mean(dim=1)))


class TinyCnn(nn.Module):
    """Two 3x3 convolutions with BatchNorm, global average pool, linear head: for tests."""

    def __init__(self, num_classes=CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def _resnet50():
    import torchvision
    return torchvision.models.resnet50(weights=None, num_classes=CLASSES)


def _mobilenet_v2():
    import torchvision
    return torchvision.models.mobilenet_v2(weights=None, num_classes=CLASSES)


# name -> builder of the eager model; DEFAULT_MODELS are exported when --models is not given.
BUILDERS = {
    "resnet50": _resnet50,
    "mobilenet_v2": _mobilenet_v2,
    "vit-tiny": VitTiny,
    "tiny-cnn": TinyCnn,
}
DEFAULT_MODELS = ["resnet50", "mobilenet_v2", "vit-tiny"]
ARCHS = list(BUILDERS)


def build(name, seed=0):
    """The eager model `name` (one of ARCHS), initialised from torch.manual_seed(seed)."""
    torch.manual_seed(seed)
    return BUILDERS[name]()


def parameter_count(module):
    return sum(p.numel() for p in module.parameters())


class UsageError(Exception):
    """A bad flag: one `error: ...` line, exit 2."""


class ExportError(Exception):
    """A model that does not export or fails its check after loading."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _model_list(text):
    names = [n.strip() for n in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise argparse.ArgumentTypeError("'%s': a comma-separated list of model names" % text)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        raise argparse.ArgumentTypeError("unknown model '%s' (known: %s)"
                                         % (unknown[0], ", ".join(ARCHS)))
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError("'%s' names a model twice" % text)
    return names


def _non_negative(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not an integer" % text)
    if v < 0:
        raise argparse.ArgumentTypeError("%d must be >= 0" % v)
    return v


def parse_args(argv):
    p = _Parser(prog="export_models.py",
                description="Exports example models as TorchScript files for 3x32x32 inputs and "
                            "10 classes. See docs/PYTORCH.md.")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for NAME.pt (created)")
    p.add_argument("--models", type=_model_list, default=list(DEFAULT_MODELS), metavar="A,B",
                   help="models to export (default %s; also: %s)" % (
                       ",".join(DEFAULT_MODELS),
                       ",".join(n for n in ARCHS if n not in DEFAULT_MODELS)))
    p.add_argument("--seed", type=_non_negative, default=0,
                   help="torch.manual_seed before each model is built (default 0)")
    a = p.parse_args(argv)
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        raise UsageError("--out %s: not a folder" % a.out)
    return a


def to_torchscript(model):
    """(ScriptModule, 'scripted' or 'traced'): torch.jit.script, else a train-mode trace."""
    try:
        with warnings.catch_warnings():
            # nn.TransformerEncoderLayer lists batch_first among its constants (PyTorch 1.13).
            warnings.filterwarnings("ignore", message=".*was found in ScriptModule constants.*")
            return torch.jit.script(model), "scripted"
    except Exception as e:  # torch.jit.frontend errors and RuntimeErrors alike
        print("warning: torch.jit.script failed (%s); tracing in train mode" %
              (str(e).strip().splitlines() or [type(e).__name__])[0], file=sys.stderr)
    model.train(True)
    example = torch.randn(2, *INPUT_SHAPE)
    with torch.no_grad():
        # Running the trace updates BatchNorm's running statistics: keep the model's own.
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        traced = torch.jit.trace(model, example, check_trace=False)
        model.load_state_dict(saved)
        traced.load_state_dict(saved)
    return traced, "traced"


def _save_atomic(module, path, extra):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        torch.jit.save(module, tmp, _extra_files={EXTRA_FILE: extra})
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_loaded(path, eager, method):
    """Loads `path` back and checks it against the eager model; returns the loaded module. A
    traced file (`method` 'traced') runs its train-mode path in eval mode too, so its eval
    forward is only checked for its shape."""
    loaded = torch.jit.load(path, map_location="cpu")
    n, expected = parameter_count(loaded), parameter_count(eager)
    if n != expected:
        raise ExportError("%s: %d parameters after loading, the eager model has %d"
                          % (path, n, expected))
    eager_state = eager.state_dict()
    for key, value in loaded.state_dict().items():
        if key not in eager_state or not torch.equal(eager_state[key], value):
            raise ExportError("%s: %s differs from the eager model's" % (path, key))

    # One SGD step in train mode.
    loaded.train(True)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, *INPUT_SHAPE, generator=g)
    y = torch.randint(0, CLASSES, (4,), generator=g)
    before = [p.detach().clone() for p in loaded.parameters()]
    running = [b.detach().clone() for k, b in loaded.named_buffers() if k.endswith("running_mean")]
    optimizer = torch.optim.SGD(loaded.parameters(), lr=0.01, momentum=0.9)
    optimizer.zero_grad()
    out = loaded(x)
    if tuple(out.shape) != (4, CLASSES):
        raise ExportError("%s: train-mode forward gave shape %s, expected (4, %d)"
                          % (path, tuple(out.shape), CLASSES))
    loss = nn.functional.cross_entropy(out, y)
    if not math.isfinite(loss.item()):
        raise ExportError("%s: train-mode loss %s" % (path, loss.item()))
    loss.backward()
    optimizer.step()
    if all(torch.equal(b, p) for b, p in zip(before, loaded.parameters())):
        raise ExportError("%s: a training step left every parameter unchanged" % path)
    after = [b for k, b in loaded.named_buffers() if k.endswith("running_mean")]
    if running and all(torch.equal(b, a) for b, a in zip(running, after)):
        raise ExportError("%s: BatchNorm running statistics did not move in train mode" % path)

    # One forward in eval mode: running statistics used, none updated.
    loaded.train(False)
    running = [b.detach().clone() for k, b in loaded.named_buffers() if k.endswith("running_mean")]
    with torch.no_grad():
        out = loaded(x)
    if tuple(out.shape) != (4, CLASSES) or not bool(torch.isfinite(out).all()):
        raise ExportError("%s: eval-mode forward gave shape %s or non-finite logits"
                          % (path, tuple(out.shape)))
    after = [b for k, b in loaded.named_buffers() if k.endswith("running_mean")]
    if method == "scripted" and not all(torch.equal(b, a) for b, a in zip(running, after)):
        raise ExportError("%s: eval mode updated BatchNorm running statistics (a train-mode "
                          "trace?)" % path)
    return loaded


def forward_seconds(module, batch=32, repeats=3):
    """Median of `repeats` eval-mode forwards of one batch (after one warm-up), no gradients."""
    module.train(False)
    x = torch.randn(batch, *INPUT_SHAPE)
    times = []
    with torch.no_grad():
        module(x)
        for _ in range(repeats):
            t0 = time.perf_counter()
            module(x)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def export(name, out_dir, seed):
    """Exports, checks and times one model; returns its summary as a dict."""
    eager = build(name, seed)
    eager.train(True)
    script, method = to_torchscript(eager)
    path = os.path.join(out_dir, name + ".pt")
    extra = json.dumps({"name": name, "parameters": parameter_count(eager),
                        "input_shape": list(INPUT_SHAPE), "classes": CLASSES, "method": method,
                        "seed": seed, "torch": torch.__version__}, sort_keys=True)
    _save_atomic(script, path, extra)
    try:
        loaded = check_loaded(path, eager, method)
    except BaseException:
        os.unlink(path)  # never leave a file that failed its check
        raise
    return {"name": name, "file": path, "parameters": parameter_count(eager),
            "bytes": os.path.getsize(path), "method": method,
            "forward_s": forward_seconds(loaded)}


def export_all(argv):
    a = parse_args(argv)
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        raise UsageError("--out %s: cannot create: %s" % (a.out, e.strerror or e))
    for name in a.models:
        r = export(name, a.out, a.seed)
        print("%s: %s, %s, %d parameters, %d bytes, forward batch 32 (eval, %d thread(s)) "
              "%.4g s" % (name, r["file"], r["method"], r["parameters"], r["bytes"],
                          torch.get_num_threads(), r["forward_s"]), flush=True)


def main(argv=None):
    return cli.exit_code(lambda: export_all(sys.argv[1:] if argv is None else argv),
                         usage_errors=(UsageError,), failures=(ExportError,))


if __name__ == "__main__":
    sys.exit(main())
