#!/usr/bin/env python3
"""Reference trainer: ResNet-18 CIFAR trained the way a student of the course writes it in
PyTorch, timed, and appended as one row to runs.csv (docs/PYTORCH.md). `--model FILE.pt` trains
a TorchScript module instead (torch.jit.load; export_models.py writes some), `--arch NAME` the
eager model export_models.py would export, under the same protocol.

    torchrun --redirects 1 --tee 1 --standalone --nproc_per_node N \\
        measure/pytorch/train.py --data DIR [flags]          # DDP, N ranks (Gloo / NCCL)
    /usr/bin/python3 measure/pytorch/train.py --data DIR     # DDP, 1 rank
    /usr/bin/python3 measure/pytorch/train.py --strategy dp --gpus N --data DIR   # nn.DataParallel

Exit codes: 0 done; 2 a bad flag or bad input (one `error: ...` line); 1 a failure while running.
"""

import argparse
import datetime
import math
import os
import re
import shutil
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.distributed import DistributedSampler

import cifar_data
import cli
import export_models
import machine_name
import memory_format
import precision
import probe
import resnet
import runs_csv
import train_flags

_HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(_HERE))
PROGRESS_EVERY_S = 2.0
MODEL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class UsageError(Exception):
    """A bad flag or input: one `error: ...` line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


positive = train_flags.integer_in(1)  # the shared flags' integer type (their message too)


def positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % text)
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError("%s must be > 0" % text)
    return v


def parse_args(argv):
    p = _Parser(prog="train.py", description="ResNet-18 CIFAR reference trainer (PyTorch); "
                "appends one row to runs.csv. See docs/PYTORCH.md.")
    train_flags.add_shared_flags(p)
    own = p.add_argument_group("train.py's own")
    own.add_argument("--gpus", type=positive, default=None,
                     help="dp: devices (default 1); ddp: must equal the ranks started by torchrun")
    own.add_argument("--data", required=True, metavar="DIR",
                     help="folder of the CIFAR-10 binary files (a SYNTHETIC file marks them "
                          "synthetic; measure/pytorch/synthetic.py writes such a folder)")
    own.add_argument("--threads", type=positive, default=None, metavar="T",
                     help="torch.set_num_threads(T) (default: PyTorch's own default)")
    own.add_argument("--persistent-workers", action="store_true",
                     help="keep the workers between epochs (default: restarted every epoch)")
    own.add_argument("--iterations", type=positive, default=None, metavar="K",
                     help="stop every epoch after K iterations (partial epochs, for checks)")
    own.add_argument("--test-pass", action="store_true",
                     help="evaluate the test set after every epoch (timed as test_s; under "
                          "--precision bf16-amp and --memory-format channels_last too)")
    own.add_argument("--test-samples", type=positive, default=None, metavar="M",
                     help="with --test-pass: the first M test images (default all)")
    own.add_argument("--lr", type=positive_float, default=0.1, help="SGD learning rate (0.1)")
    own.add_argument("--cudnn-benchmark", dest="cudnn_benchmark", action="store_true",
                     default=True, help="torch.backends.cudnn.benchmark = True on CUDA (default)")
    own.add_argument("--no-cudnn-benchmark", dest="cudnn_benchmark", action="store_false")
    own.add_argument("--model", default=None, metavar="FILE.pt",
                     help="train this TorchScript module (torch.jit.load) instead of ResNet-18: "
                          "N x 3 x 32 x 32 images in, N x 10 logits out")
    own.add_argument("--arch", choices=export_models.ARCHS, default=None,
                     help="train this eager model of export_models.py instead of ResNet-18")
    own.add_argument("--model-name", default=None, metavar="NAME",
                     help="the row's model (default: --model's file name without its extension, "
                          "or --arch)")
    a = p.parse_args(argv)
    if a.model is not None and a.arch is not None:
        raise UsageError("--model and --arch: give one of them")
    if a.model_name is not None and a.model is None and a.arch is None:
        raise UsageError("--model-name needs --model or --arch")
    if a.model is not None and a.model == "":
        raise UsageError("--model: empty file name")
    if a.model_name is not None:
        a.model_label = a.model_name
        what = "--model-name '%s'" % a.model_name
    elif a.model is not None:
        a.model_label = os.path.splitext(os.path.basename(a.model.rstrip("/")))[0]
        what = "--model %s: its name '%s' (give --model-name)" % (a.model, a.model_label)
    else:
        a.model_label = a.arch or resnet.MODEL_NAME
        what = "--arch"
    if not MODEL_NAME_RE.match(a.model_label):
        raise UsageError("%s: letters, digits and . _ + - only, starting with a letter or digit"
                         % what)
    if a.test_samples is not None and not a.test_pass:
        raise UsageError("--test-samples needs --test-pass")
    if a.persistent_workers and a.workers == 0:
        raise UsageError("--persistent-workers needs --workers >= 1")
    if a.machine is not None and (a.machine == "" or "/" in a.machine or "," in a.machine):
        raise UsageError("--machine '%s': not a folder name" % a.machine)
    return a


def default_runs_path(machine, device_kind, model=resnet.MODEL_NAME):
    """REPO/reports/<machine>/runs.csv, the machine named as `measure` names it by default;
    runs-<model>.csv for a model other than ResNet-18 CIFAR (simulate --compare does not tell
    models apart: one file per model)."""
    name = machine or machine_name.default_machine_name(device_kind)
    file = "runs.csv" if model == resnet.MODEL_NAME else "runs-%s.csv" % model
    return os.path.join(REPO_ROOT, "reports", name, file)


def _first_line(e):
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def load_model(path, device):
    """torch.jit.load(path), checked to be a module with parameters whose forward maps a
    2 x 3 x 32 x 32 batch to 2 x 10 logits. A bad file is UsageError('PATH: ...')."""
    if not os.path.exists(path):
        raise UsageError("%s: no such file" % path)
    if os.path.isdir(path):
        raise UsageError("%s: is a folder, not a TorchScript file" % path)
    try:
        module = torch.jit.load(path, map_location=device)
    except Exception as e:
        hint = "; torch.save writes no TorchScript: save torch.jit.script(model)" \
            if "constants.pkl" in str(e) else ""
        raise UsageError("%s: not a TorchScript module (torch.jit.load: %s)%s"
                         % (path, _first_line(e), hint))
    if not isinstance(module, torch.jit.ScriptModule):
        raise UsageError("%s: torch.jit.load gave a %s, not a module" % (path, type(module).__name__))
    if sum(p.numel() for p in module.parameters()) == 0:
        raise UsageError("%s: the module has no parameters to train" % path)
    shape = (2,) + export_models.INPUT_SHAPE
    module.train(False)
    try:
        with torch.no_grad():
            out = module(torch.zeros(shape, device=device))
    except Exception as e:
        raise UsageError("%s: forward(%s) failed: %s" % (
            path, " x ".join(map(str, shape)), _first_line(e)))
    expected = (2, export_models.CLASSES)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected:
        got = "shape %s" % list(out.shape) if isinstance(out, torch.Tensor) else \
            "a %s" % type(out).__name__
        raise UsageError("%s: forward(%s) returned %s, not %s logits" % (
            path, " x ".join(map(str, shape)), got, list(expected)))
    module.train(True)
    return module


def build_model(a, device):
    """The network to train when there is no --model: --arch's eager model or ResNet-18 CIFAR,
    initialised from --seed."""
    if a.arch is not None:
        return export_models.build(a.arch, a.seed).to(device)
    torch.manual_seed(a.seed)
    return resnet.ResNet18().to(device)


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def fmt_duration(s):
    s = max(0.0, s)
    if s < 60:
        return "%.1fs" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60)


class Job:
    """Rank, world, device and the collectives of one process."""

    def __init__(self, a):
        self.a = a
        launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
        self.launched = launched
        self.rank = int(os.environ["RANK"]) if launched else 0
        self.world = int(os.environ["WORLD_SIZE"]) if launched else 1
        self.local_rank = int(os.environ.get("LOCAL_RANK", self.rank)) if launched else 0
        self.store_dir = None
        self.distributed = False
        # Every tensor handed to a collective stays referenced from Python until the process
        # group is gone. Otherwise a Gloo worker thread may drop the last reference and need
        # the GIL while holding the group's mutex, as the group's destructor (called with the
        # GIL held) waits for that mutex: a deadlock at exit seen with PyTorch 1.13.
        self._keep = []

        kind = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if kind == "cuda" and not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is visible")
        self.kind = kind
        visible = torch.cuda.device_count() if kind == "cuda" else 0
        if a.strategy == "dp":
            if kind != "cuda":
                raise UsageError("--strategy dp needs CUDA devices (nn.DataParallel); on CPU "
                                 "use --strategy ddp")
            if self.world > 1:
                raise UsageError("--strategy dp runs in one process; start it without torchrun "
                                 "(WORLD_SIZE is %d)" % self.world)
            self.gpus = a.gpus or 1
            if self.gpus > visible:
                raise UsageError("--gpus %d: only %d CUDA device(s) visible" % (self.gpus, visible))
            self.device = torch.device("cuda", 0)
        else:
            if a.gpus is not None and a.gpus != self.world:
                raise UsageError("--gpus %d: this ddp job has %d rank(s); start N ranks with "
                                 "torchrun --nproc_per_node N" % (a.gpus, self.world))
            self.gpus = self.world
            if kind == "cuda":
                if self.local_rank >= visible:
                    raise UsageError("ddp rank %d (LOCAL_RANK %d): only %d CUDA device(s) visible"
                                     % (self.rank, self.local_rank, visible))
                self.device = torch.device("cuda", self.local_rank)
                if not dist.is_nccl_available():
                    raise UsageError("--strategy ddp --device cuda: this PyTorch has no NCCL")
            else:
                self.device = torch.device("cpu")
                if not dist.is_gloo_available():
                    raise UsageError("--strategy ddp --device cpu: this PyTorch has no Gloo")

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def sync(self):
        if self.is_cuda:
            torch.cuda.synchronize(self.device)

    def init(self):
        if self.a.strategy != "ddp":
            return
        backend = "nccl" if self.is_cuda else "gloo"
        if self.is_cuda:
            torch.cuda.set_device(self.device)
        if self.launched:
            dist.init_process_group(backend, init_method="env://", rank=self.rank,
                                    world_size=self.world)
        else:
            # One rank without torchrun: a private file rendezvous.
            self.store_dir = tempfile.mkdtemp(prefix="trainsim-pytorch-")
            dist.init_process_group(backend, init_method="file://" +
                                    os.path.join(self.store_dir, "store"), rank=0, world_size=1)
        self.distributed = True

    def barrier(self):
        if self.distributed:
            t = torch.zeros(1, device=self.device)
            self._keep.append(t)
            dist.all_reduce(t)
        self.sync()

    def reduce(self, values, op):
        if not self.distributed:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        self._keep.append(t)
        dist.all_reduce(t, op=op)
        return t.tolist()

    def close(self):
        if self.distributed:
            self.barrier()  # every rank's collectives are done
            dist.destroy_process_group()
            self.distributed = False
        self._keep.clear()
        if self.store_dir:
            shutil.rmtree(self.store_dir, ignore_errors=True)
            self.store_dir = None


def log(job, quiet, text):
    if job.rank == 0 and not quiet:
        print(text, file=sys.stderr, flush=True)


def train_epoch(job, a, epoch, net, loader, sampler, optimizer, criterion):
    """One epoch of the course's loop. Returns its figures (this process's)."""
    if sampler is not None:
        sampler.set_epoch(epoch)
    net.train()
    planned = len(loader) if a.iterations is None else min(len(loader), a.iterations)
    loss_sum, correct, total, wait = 0.0, 0, 0, 0.0
    job.barrier()
    t0 = time.perf_counter()
    last = t0
    it = iter(loader)  # non-persistent workers start here, inside the epoch
    for j in range(planned):
        tw = time.perf_counter()
        inputs, targets = next(it)
        wait += time.perf_counter() - tw
        inputs, targets = inputs.to(job.device), targets.to(job.device)
        inputs = memory_format.convert_input(inputs, a.memory_format)
        optimizer.zero_grad()
        with precision.autocast(job.device.type, a.precision):
            outputs = net(inputs)
            loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        step_loss = loss.item()
        _, predicted = outputs.max(1)
        correct += predicted.eq(targets).sum().item()
        total += targets.size(0)
        loss_sum += step_loss * targets.size(0)
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY_S and j + 1 < planned:
            last = now
            elapsed = now - t0
            log(job, a.quiet, "epoch %d/%d batch %d/%d elapsed %s ETA %s loss %.4f" % (
                epoch + 1, a.epochs, j + 1, planned, fmt_duration(elapsed),
                fmt_duration(elapsed / (j + 1) * (planned - j - 1)), loss_sum / total))
    job.sync()
    epoch_s = time.perf_counter() - t0
    del it  # worker shut-down is outside the clock
    return {"epoch_s": epoch_s, "wait": wait, "loss_sum": loss_sum, "correct": correct,
            "total": total, "steps": planned}


def test_pass(job, a, net, loader, criterion):
    net.eval()
    job.sync()
    t0 = time.perf_counter()
    loss_sum, correct, total = 0.0, 0, 0
    with torch.no_grad():
        for inputs, targets in loader:
            inputs, targets = inputs.to(job.device), targets.to(job.device)
            inputs = memory_format.convert_input(inputs, a.memory_format)
            with precision.autocast(job.device.type, a.precision):
                outputs = net(inputs)
                loss = criterion(outputs, targets)
            loss_sum += loss.item() * targets.size(0)
            _, predicted = outputs.max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    job.sync()
    return time.perf_counter() - t0, loss_sum / max(total, 1), correct / max(total, 1)


def run(a):
    job = Job(a)
    if job.a.threads is not None:
        torch.set_num_threads(a.threads)
    if job.is_cuda:
        torch.backends.cudnn.benchmark = a.cudnn_benchmark

    runs_path = None
    if job.rank == 0:
        runs_path = a.runs if a.runs is not None else default_runs_path(a.machine, job.kind,
                                                                        a.model_label)
        # before training: never end on a file we cannot append to
        runs_csv.check_header(runs_path, a.model_label, a.precision, a.memory_format)
    # A bad --model file stops every rank here, before the data are read.
    loaded = load_model(a.model, job.device) if a.model is not None else None

    train_set = cifar_data.CIFAR10Binary(a.data, train=True, transform=cifar_data.train_transform(),
                                         limit=a.train_samples)
    test_set = None
    if a.test_pass:
        test_set = cifar_data.CIFAR10Binary(a.data, train=False,
                                            transform=cifar_data.test_transform(),
                                            limit=a.test_samples)
    data_kind = "synthetic" if train_set.synthetic else "cifar10"

    load_before = None
    probe_s = None
    if job.rank == 0:
        load_before = load_average()
        if not a.no_probe:
            log(job, a.quiet, "probe: ResNet-18 CIFAR, batch 32, fused iteration on %s"
                % job.device)
            probe_s = probe.run_probe(job.device)
            log(job, a.quiet, "probe: %.4g s" % probe_s)
    job.init()  # the other ranks wait here while rank 0 runs the probe

    model = loaded if loaded is not None else build_model(a, job.device)
    # Before DDP or DataParallel wraps it: DDP lays out its gradient buckets after the
    # parameters' strides (memory_format.convert_model).
    model = memory_format.convert_model(model, a.memory_format)
    if a.strategy == "ddp":
        if job.is_cuda:
            net = DistributedDataParallel(model, device_ids=[job.local_rank])
        else:
            net = DistributedDataParallel(model)
        sampler = DistributedSampler(train_set, num_replicas=job.world, rank=job.rank,
                                     shuffle=True, seed=a.seed, drop_last=False)
        loader = cifar_data.train_loader(train_set, a.batch_per_gpu, a.workers, sampler=sampler,
                                         persistent=a.persistent_workers)
    else:
        net = nn.DataParallel(model, device_ids=list(range(job.gpus)))
        sampler = None
        loader = cifar_data.train_loader(train_set, job.gpus * a.batch_per_gpu, a.workers,
                                         persistent=a.persistent_workers,
                                         generator=cifar_data.seeded_generator(a.seed))
    torch.manual_seed(a.seed + 1 + job.rank)  # augmentation of the in-process loader
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9, weight_decay=5e-4)
    test_loader = cifar_data.test_loader(test_set, a.workers) if test_set is not None else None

    # Another model than ResNet-18 is named in the progress and summary lines.
    other = "" if a.model is None and a.arch is None else a.model_label
    log(job, a.quiet, "train: %s%s, %d %s, batch %d per %s, %d samples (%s), %d worker(s), "
        "%d thread(s), %d epoch(s)" % (
            "%s (%d parameters), " % (other, sum(p.numel() for p in model.parameters()))
            if other else "", a.strategy, job.gpus, "rank(s)" if a.strategy == "ddp" else "device(s)",
            a.batch_per_gpu, "rank" if a.strategy == "ddp" else "device", len(train_set),
            data_kind, a.workers, torch.get_num_threads(), a.epochs))
    timed = None
    load_after = None
    for epoch in range(a.epochs):
        e = train_epoch(job, a, epoch, net, loader, sampler, optimizer, criterion)
        if epoch == a.epochs - 1 and job.rank == 0:
            load_after = load_average()
        epoch_max = job.reduce([e["epoch_s"]], dist.ReduceOp.MAX)[0]
        sums = job.reduce([e["loss_sum"], e["correct"], e["total"]], dist.ReduceOp.SUM)
        test = None
        if test_loader is not None:
            test_s, test_loss, test_acc = test_pass(job, a, net, test_loader, criterion)
            test = (job.reduce([test_s], dist.ReduceOp.MAX)[0], test_loss, test_acc)
        msg = "epoch %d/%d batch %d/%d elapsed %s ETA 0.0s loss %.4f accuracy %.4f" % (
            epoch + 1, a.epochs, e["steps"], e["steps"], fmt_duration(epoch_max),
            sums[0] / max(sums[2], 1), sums[1] / max(sums[2], 1))
        if test is not None:
            msg += "; test %s loss %.4f accuracy %.4f" % (fmt_duration(test[0]), test[1], test[2])
        log(job, a.quiet, msg)
        timed = (e, epoch_max, sums, test)

    e, epoch_max, sums, test = timed
    if job.rank == 0:
        samples = int(round(sums[2]))
        row = {
            "strategy": a.strategy, "gpus": job.gpus, "batch_per_gpu": a.batch_per_gpu,
            "loader_workers": a.workers, "train_samples": len(train_set),
            "epoch_s": epoch_max, "train_s": e["epoch_s"] - e["wait"], "loader_wait_s": e["wait"],
            "iterations": e["steps"], "epochs": a.epochs, "threads": torch.get_num_threads(),
            "device": job.kind, "data": data_kind,
            "final_loss": sums[0] / max(samples, 1), "final_accuracy": sums[1] / max(samples, 1),
            "samples_per_s": samples / epoch_max if epoch_max > 0 else 0.0,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "trainer": "pytorch",
            "test_samples": len(test_set) if test_set is not None else 0,
            "test_s": test[0] if test is not None else None,
            "probe_s": probe_s, "load_before": load_before, "load_after": load_after,
            "model": a.model_label, "precision": a.precision, "memory_format": a.memory_format,
        }
        runs_csv.append_row(runs_path, row)
        full = len(loader)
        partial = " (partial epoch: %d of %d iterations)" % (e["steps"], full) \
            if e["steps"] < full else ""
        print("pytorch %s gpus %d batch_per_gpu %d: epoch %.4g s (train %.4g s, loader wait %.4g "
              "s), %d iterations%s, loss %.4g, accuracy %.4g, %.4g samples/s%s -> %s" % (
                  a.strategy, job.gpus, a.batch_per_gpu, epoch_max, row["train_s"], e["wait"],
                  e["steps"], partial, row["final_loss"], row["final_accuracy"],
                  row["samples_per_s"], ", model " + other if other else "", runs_path),
              flush=True)
    # Tear down in order: the DDP module (its reducer holds the process group) first.
    del net, model, loaded, optimizer, loader, test_loader
    job.close()


def main(argv=None):
    return cli.exit_code(lambda: run(parse_args(sys.argv[1:] if argv is None else argv)),
                         usage_errors=(UsageError, cifar_data.DataError, runs_csv.RunsFileError))


if __name__ == "__main__":
    sys.exit(main())
