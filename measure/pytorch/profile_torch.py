#!/usr/bin/env python3
"""What the Python pipeline itself costs: the DataLoader of train.py per worker count, the
trainer's loop body with the plain module and with DistributedDataParallel on one rank, and the
calibration probe, and what starting the DataLoader's worker processes every epoch costs the
training process (fork, copy-on-write), with 1..K such processes at once. Writes one JSON object
(docs/PYTORCH.md).

    /usr/bin/python3 measure/pytorch/profile_torch.py --data DIR --device cpu|cuda [--threads T]
        [--batches 32,128,512] [--models resnet18-cifar] [--script NAME=FILE.pt ...]
        [--warmup 1] [--repeats 3]
        [--loader-batch 128[,512,...]] [--loader-workers 0,1,2] [--loader-batches 16] [--fork-ranks 1,2]
        [--fork-cycles 3] [--rank-start fork|spawn] [--loader-only] --out FILE.json [--quiet]

Exit codes: 0 done; 2 a bad flag or bad input (one `error: ...` line); 1 a failure while running.
"""

import argparse
import json
import multiprocessing
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import Subset
import torchvision

import cifar_data
import cli
import dataparallel_host
import machine_name
from memory_format import MEMORY_FORMATS, convert_input, convert_model
import probe
from precision import PRECISIONS, autocast
import resnet

MODELS = {resnet.MODEL_NAME: resnet.ResNet18}


def new_model(name, scripts):
    """A fresh model: a TorchScript module of --script NAME=FILE.pt (loaded again, so its
    parameters start from the file's), else the built-in model of that name."""
    if name in scripts:
        return torch.jit.load(scripts[name], map_location="cpu")
    return MODELS[name]()


def script_entry(text):
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise UsageError("--script: '%s' is not NAME=FILE.pt" % text)
    if not os.path.isfile(path):
        raise UsageError("--script %s: no such file" % path)
    return name, path


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


# Repeats of the loader at batches other than the main one (--loader-batch B,B2,...).
AT_BATCH_REPEATS = 5


def int_list(text, minimum):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a comma-separated list of integers" % text)
    if any(v < minimum for v in values):
        raise argparse.ArgumentTypeError("'%s': every value must be >= %d" % (text, minimum))
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError("'%s' repeats a value" % text)
    return values


def int_at_least(minimum):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("'%s' is not an integer" % text)
        if v < minimum:
            raise argparse.ArgumentTypeError("%d must be >= %d" % (v, minimum))
        return v
    return parse


def parse_args(argv):
    p = _Parser(prog="profile_torch.py", description="Profiles the PyTorch pipeline of train.py and "
                "writes one JSON object. See docs/PYTORCH.md.")
    p.add_argument("--data", required=True, metavar="DIR", help="CIFAR-10 binary files")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default cuda when a CUDA device is visible, else cpu")
    p.add_argument("--threads", type=int_at_least(1), default=None, metavar="T")
    p.add_argument("--batches", type=lambda t: sorted(int_list(t, 1)), default=[32, 128, 512])
    p.add_argument("--models", type=lambda t: t.split(","), default=[resnet.MODEL_NAME])
    p.add_argument("--script", action="append", default=[], metavar="NAME=FILE.pt",
                   help="a TorchScript module (torch.jit.save) as model NAME, for 3x32x32 inputs "
                        "and 10 classes; name it in --models too")
    p.add_argument("--warmup", type=int_at_least(0), default=1)
    p.add_argument("--repeats", type=int_at_least(1), default=3)
    p.add_argument("--loader-batch", type=lambda t: int_list(t, 1), default=[128],
                   metavar="B[,B2,...]",
                   help="the DataLoader's batch; more batches (B2, ...) measure its rate at each of them "
                        "too (loader.at_batches), with the same number of samples per repeat and at "
                        "most %d repeats" % AT_BATCH_REPEATS)
    p.add_argument("--loader-workers", type=lambda t: sorted(int_list(t, 0)), default=[0, 1, 2])
    p.add_argument("--loader-batches", type=int_at_least(1), default=16)
    p.add_argument("--fork-ranks", type=lambda t: sorted(int_list(t, 1)), default=[1],
                   help="numbers of training processes that start their workers at once "
                        "(cpu; 1 on cuda)")
    p.add_argument("--no-fork", action="store_true",
                   help="no fork measurement (measure --quick): the models carry no `fork` entry, "
                        "and simulate prices no worker start-up from this profile")
    p.add_argument("--no-gil", action="store_true",
                   help="no GIL measurement (measure --quick): no `gil` entry, and simulate prices "
                        "DataParallel's replica threads without it")
    p.add_argument("--fork-cycles", type=int_at_least(1), default=3, metavar="C",
                   help="worker starts timed per batch in the fork measurement (its own count, "
                        "not --repeats: each starts the workers and builds a batch)")
    p.add_argument("--rank-start", choices=["fork", "spawn"], default=None,
                   help="how the fork measurement starts its training processes: fork (cpu's "
                        "default with one intra-op thread) or spawn, fresh interpreters as torchrun "
                        "starts them (cuda: always; cpu with more threads: the default, as OpenMP "
                        "is not fork-safe); their loader workers start by the platform's default "
                        "either way")
    p.add_argument("--loader-only", action="store_true",
                   help="the DataLoader alone (no models), at every --loader-batch batch the way the "
                        "other batches are measured: what an earlier run lacks")
    p.add_argument("--cudnn-benchmark", choices=["on", "off"], default="on",
                   help="cuda: torch.backends.cudnn.benchmark (default on, as the trainers)")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="the loop body's numeric mode: bf16-amp runs forward and loss under "
                        "torch.autocast(dtype=bfloat16) (default fp32)")
    p.add_argument("--memory-format", choices=MEMORY_FORMATS, default="nchw",
                   help="the loop body's memory format: channels_last converts the model "
                        "(model.to(memory_format=torch.channels_last)) and every input batch, as "
                        "train.py --memory-format does (default nchw)")
    p.add_argument("--out", required=True, metavar="FILE.json")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    if a.loader_only and len(a.loader_batch) < 2:
        raise UsageError("--loader-only measures the DataLoader at the other --loader-batch batches: "
                         "give more than one (B,B2,...)")
    a.scripts = dict(script_entry(t) for t in a.script)
    for m in a.models:
        if m not in MODELS and m not in a.scripts:
            raise UsageError("--models: unknown model '%s' (known: %s)"
                             % (m, ", ".join(sorted(MODELS))))
    return a


class Log:
    def __init__(self, quiet):
        self.quiet = quiet
        self.t0 = time.perf_counter()

    def __call__(self, text):
        if not self.quiet:
            print("[%7.1fs] %s" % (time.perf_counter() - self.t0, text), file=sys.stderr,
                  flush=True)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def is_oom(error):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(error, oom_type):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and (
        "out of memory" in text or "can't allocate memory" in text)


# ---------------------------------------------------------------------------------------------
# Loader


def measure_loader(dataset, batch, workers, batches_for, repeats, log):
    """One point per worker count: first_batch_s, steady samples_per_s, startup_s (medians), the
    steady rate over batches_for(w) batches after the first."""
    points = []
    for w in workers:
        batches = batches_for(w)
        indices = [i % len(dataset) for i in range((batches + 1) * batch)]  # tiled: every batch is full
        subset = Subset(dataset, indices)
        firsts, rates, startups = [], [], []
        for r in range(repeats):
            loader = cifar_data.train_loader(subset, batch, w, sampler=None, persistent=False,
                                             generator=cifar_data.seeded_generator(r))
            t0 = time.perf_counter()
            it = iter(loader)
            next(it)
            t1 = time.perf_counter()
            for _ in range(batches):
                next(it)
            t2 = time.perf_counter()
            del it
            first = t1 - t0
            rate = batches * batch / (t2 - t1)
            firsts.append(first)
            rates.append(rate)
            startups.append(0.0 if w == 0 else max(0.0, first - batch * max(w, 1) / rate))
        point = {"workers": w, "samples_per_s": statistics.median(rates),
                 "first_batch_s": statistics.median(firsts),
                 "startup_s": statistics.median(startups)}
        log("loader: batch %d, %d worker(s): %.1f samples/s, first batch %.4f s, start-up %.4f s"
            % (batch, w, point["samples_per_s"], point["first_batch_s"], point["startup_s"]))
        points.append(point)
    return points


# ---------------------------------------------------------------------------------------------
# Iterations


def loop_body(net, inputs, targets, precision, memory_format):
    """The trainer's loop body (its SGD, loss and per-step reads) on one fixed batch already on
    the device, as a function of no arguments that runs one iteration; in bf16-amp its forward and
    loss under torch.autocast (bfloat16); in channels_last the batch converted first in every
    iteration, as train.py converts each batch it takes (`net` converted by the caller)."""
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()

    def body():
        batch = convert_input(inputs, memory_format)
        optimizer.zero_grad()
        with autocast(inputs.device.type, precision):
            outputs = net(batch)
            loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        loss.item()
        _, predicted = outputs.max(1)
        predicted.eq(targets).sum().item()

    return body


# Warm-up beyond --warmup: until two iterations in a row agree within SETTLE_TOLERANCE, at most
# SETTLE_EXTRA more (the first iterations build the allocator's pools and the kernels' plans).
SETTLE_TOLERANCE = 0.10
SETTLE_EXTRA = 3


class TimedBody:
    """The trainer's loop body on a fixed random batch already on the device, warmed up until its
    iterations settle; time() runs one iteration and returns its seconds (CUDA synchronised), and
    keeps the minor page faults it took in `faults` (docs/MEASURE.md "Page faults")."""

    def __init__(self, net, device, batch, warmup, precision, memory_format):
        g = torch.Generator()
        g.manual_seed(batch)
        inputs = torch.randn(batch, 3, 32, 32, generator=g).to(device)
        targets = torch.randint(0, 10, (batch,), generator=g).to(device)
        self.device = device
        self.body = loop_body(net, inputs, targets, precision, memory_format)
        self.faults = []
        net.train()
        for _ in range(warmup):
            self.body()
        if warmup > 0:
            last = self.time()
            for _ in range(SETTLE_EXTRA):
                t = self.time()
                settled = abs(t - last) <= SETTLE_TOLERANCE * last
                last = t
                if settled:
                    break

    def time(self):
        sync(self.device)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        self.body()
        sync(self.device)
        seconds = time.perf_counter() - t0
        self.faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
        return seconds


class OneRankGroup:
    """A 1-rank process group (Gloo on CPU, NCCL on CUDA) through a temporary FileStore."""

    def __init__(self, device):
        self.device = device
        self.folder = tempfile.mkdtemp(prefix="trainsim-profile-")
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, init_method="file://" + os.path.join(self.folder,
                                                                                "store"),
                                rank=0, world_size=1)

    def close(self):
        if dist.is_initialized():
            # A last collective on a tensor Python keeps until the group is gone (see train.py:
            # a Gloo worker must never drop the last reference of a Python-owned tensor while
            # the group's destructor holds the GIL).
            last = torch.zeros(1, device=self.device)
            dist.all_reduce(last)
            sync(self.device)
            dist.destroy_process_group()
            del last
        shutil.rmtree(self.folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Starting the workers: what it costs the training process


def _fork_cycles(name, scripts, device_kind, threads, batch, workers, data, cycles, barrier, results,
                 index, worker_start, precision, memory_format):
    """One training process (a child of the profiler): the trainer's model under DDP on its own
    1-rank group and its DataLoader with `workers` workers. After a warm-up iteration, `cycles`
    times: wait for the other processes, start the loader's workers (iter), take the first batch,
    then run the loop body twice. Puts (iter_s, first_batch_s, cow_s) per cycle into `results`:
    the time of iter() (forking the workers), of the first next() (the workers start and build
    the first batch), and the first iteration's excess over the second (the copy-on-write faults
    the training process pays after the fork). The workers start by `worker_start` (the platform's
    default, as in a training process that torchrun or a shell started): a process started by
    multiprocessing's spawn would otherwise spawn them too, fresh interpreters that import torch."""
    try:
        multiprocessing.set_start_method(worker_start, force=True)
        if threads is not None:
            torch.set_num_threads(threads)
        device = torch.device("cuda", 0) if device_kind == "cuda" else torch.device("cpu")
        group = OneRankGroup(device)
        try:
            torch.manual_seed(0)
            model = convert_model(new_model(name, scripts).to(device), memory_format)
            net = DistributedDataParallel(model, device_ids=[0]) if device_kind == "cuda" else \
                DistributedDataParallel(model)
            step = loop_body(net, torch.randn(batch, 3, 32, 32).to(device),
                             torch.randint(0, 10, (batch,)).to(device), precision, memory_format)
            loader = cifar_data.train_loader(data, batch, workers, sampler=None, persistent=False,
                                             generator=cifar_data.seeded_generator(index))

            def body():
                step()
                sync(device)

            net.train()
            body()
            out = []
            for _ in range(cycles):
                barrier.wait()
                t0 = time.perf_counter()
                it = iter(loader)
                t1 = time.perf_counter()
                next(it)
                t2 = time.perf_counter()
                body()
                t3 = time.perf_counter()
                body()
                t4 = time.perf_counter()
                del it  # shuts the workers down
                out.append((t1 - t0, t2 - t1, (t3 - t2) - (t4 - t3)))
            results.put((index, out, multiprocessing.get_start_method()))
            del body, step, net, model
        finally:
            group.close()
    except BaseException as e:  # noqa: BLE001 (reported to the parent, which fails)
        results.put((index, "%s: %s" % (type(e).__name__, e), None))


def measure_fork(name, scripts, device, threads, batches, workers, ranks_list, data, cycles, log,
                 precision, memory_format, rank_start=None):
    """{workers, points: [{ranks, iter_s[], first_batch_s[], cow_s[]}]}: per number of processes k
    that start their workers at once, per batch, the medians over the cycles and processes."""
    # The training processes: `rank_start`, by default forked on CPU with one intra-op thread,
    # otherwise started fresh ("spawn"), as torchrun starts them: a child forked from this process
    # cannot use CUDA once it is initialised, nor OpenMP once a parallel region ran on more threads
    # (GNU OpenMP is not fork-safe: with --threads 2 on PyTorch 1.13 a forked rank hung at DDP's
    # first broadcast). Their DataLoader workers start as in a real run, by the platform's default
    # (fork on Linux): a spawned child would spawn them (7.9 s each on an H200 machine, against a
    # fork's milliseconds), which no torchrun-started rank does.
    if rank_start is None:
        rank_start = "spawn" if device.type == "cuda" or torch.get_num_threads() > 1 else "fork"
    worker_start = multiprocessing.get_start_method()
    ctx = multiprocessing.get_context(rank_start)
    points = []
    for k in ranks_list:
        point = {"ranks": k, "iter_s": [], "first_batch_s": [], "cow_s": []}
        for b in batches:
            barrier = ctx.Barrier(k)
            results = ctx.Queue()
            procs = [ctx.Process(target=_fork_cycles, args=(name, scripts, device.type, threads, b, workers,
                                                            data, cycles, barrier, results, i, worker_start,
                                                            precision, memory_format))
                     for i in range(k)]
            for p in procs:
                p.start()
            got = [results.get() for _ in procs]
            for p in procs:
                p.join()
            iters, firsts, cows, starts = [], [], [], set()
            for index, out, started_by in got:
                if isinstance(out, str):
                    raise RuntimeError("fork measurement, process %d: %s" % (index, out))
                starts.add(started_by)
                iters.extend(c[0] for c in out)
                firsts.extend(c[1] for c in out)
                cows.extend(c[2] for c in out)
            point["iter_s"].append(statistics.median(iters))
            point["first_batch_s"].append(statistics.median(firsts))
            point["cow_s"].append(max(0.0, statistics.median(cows)))
            log("%s: batch %d, %d %s process(es) starting %d worker(s) at once (by %s): iter() %.4f s, "
                "first batch %.4f s, copy-on-write %.4f s"
                % (name, b, k, "spawned" if rank_start == "spawn" else "forked", workers,
                   ", ".join(sorted(starts)), point["iter_s"][-1], point["first_batch_s"][-1],
                   point["cow_s"][-1]))
        points.append(point)
    return {"workers": workers, "points": points}


def measure_model(name, scripts, device, batches, warmup, repeats, log, probes, precision, memory_format):
    """The loop body per batch, with the plain module and under 1-rank DDP, in rounds: every
    (batch, variant) is built and warmed up first, then each of `repeats` rounds times the
    calibration probe (appended to `probes`) and one iteration of every batch and variant; each
    figure is the median over the rounds. A slow spell of the machine thus lands in a round or two
    of every figure alike instead of in all the repeats of one, and the probes say when it came."""
    result = {"batches": [], "iteration_s": [], "ddp_iteration_s": [], "minor_faults": [], "oom_batch": None}
    group = OneRankGroup(device)
    bodies = []  # (batch, plain TimedBody, DDP TimedBody), ascending batch
    try:
        for b in batches:
            try:
                torch.manual_seed(0)
                plain = TimedBody(convert_model(new_model(name, scripts).to(device), memory_format), device, b,
                                  warmup, precision, memory_format)
                torch.manual_seed(0)
                model = convert_model(new_model(name, scripts).to(device), memory_format)
                ddp = DistributedDataParallel(model, device_ids=[device.index]) if device.type == "cuda" \
                    else DistributedDataParallel(model)
                bodies.append((b, plain, TimedBody(ddp, device, b, warmup, precision, memory_format)))
            except Exception as e:  # noqa: BLE001 (OOM is data; anything else is re-raised)
                if not is_oom(e):
                    raise
                result["oom_batch"] = b
                log("%s: batch %d: out of memory; larger batches skipped" % (name, b))
                break
            finally:
                if device.type == "cuda":
                    torch.cuda.empty_cache()
        times = {b: ([], []) for b, _, _ in bodies}
        for r in range(repeats):
            probes.append(probe.run_probe(device))
            for b, plain, ddp in bodies:
                times[b][0].append(plain.time())
                times[b][1].append(ddp.time())
            log("%s: round %d of %d: probe %.4f s, %s" % (
                name, r + 1, repeats, probes[-1],
                ", ".join("batch %d %.4f / %.4f s" % (b, times[b][0][-1], times[b][1][-1]) for b, _, _ in bodies)))
        for b, plain, _ in bodies:
            result["batches"].append(b)
            result["iteration_s"].append(statistics.median(times[b][0]))
            result["ddp_iteration_s"].append(statistics.median(times[b][1]))
            # The faults of the timed plain bodies (the settling timings before the rounds too).
            result["minor_faults"].append(statistics.median(plain.faults))
            log("%s: batch %d: iteration %.4f s, ddp (1 rank) %.4f s (medians of %d rounds)" % (
                name, b, result["iteration_s"][-1], result["ddp_iteration_s"][-1], repeats))
        if bodies:
            # DataParallel's host mechanisms of this model (dataparallel_host.py).
            torch.manual_seed(0)
            net = new_model(name, scripts).to(device)
            result["forward_calls"] = dataparallel_host.forward_calls(net, device, bodies[0][0])
            log("%s: %d calls from Python into ATen per forward" % (name, result["forward_calls"]))
            try:
                result["replicate_s"] = dataparallel_host.replicate_s(net, repeats)
                log("%s: replicate: %.3f ms of Python per replica" % (name, result["replicate_s"] * 1e3))
            except RuntimeError as e:  # e.g. a TorchScript module, which DataParallel cannot replicate
                log("%s: replicate_s not measured: %s" % (name, str(e).strip().splitlines()[0]))
    finally:
        del bodies
        group.close()
    return result


def probe_drift(probes, log):
    """Warns when the machine's speed moved during the profile: the probes' spread beyond 10%."""
    low, high = min(probes), max(probes)
    if high > 1.10 * low:
        log("warning: the calibration probe moved %.0f%% during this profile (%.4f .. %.4f s over %d probes: "
            "%s): the machine's speed changed; every figure is a median over rounds, but a profile made "
            "on a quiet machine is better" % (100 * (high / low - 1), low, high, len(probes),
                                              ", ".join("%.4f" % p for p in probes)))


# ---------------------------------------------------------------------------------------------


def write_json_atomic(path, obj):
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def run(a):
    log = Log(a.quiet)
    kind = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is visible")
    if kind == "cuda" and a.rank_start == "fork":
        raise UsageError("--rank-start fork: CUDA training processes must be spawned (a fork of a "
                         "process that has initialised CUDA cannot use it)")
    device = torch.device("cuda", 0) if kind == "cuda" else torch.device("cpu")
    if kind == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = a.cudnn_benchmark == "on"
    elif not dist.is_gloo_available():
        raise UsageError("--device cpu: this PyTorch has no Gloo (needed for ddp_iteration_s)")
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    out_dir = os.path.dirname(os.path.abspath(a.out))
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageError("--out %s: %s is not a folder" % (a.out, out_dir))

    dataset = cifar_data.CIFAR10Binary(a.data, train=True, transform=cifar_data.train_transform())
    t_start = time.perf_counter()
    result = {
        "framework": "pytorch",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "python": platform.python_version(),
        "device": kind,
        "device_name": torch.cuda.get_device_name(device) if kind == "cuda"
        else machine_name.cpu_model(),
        "threads": torch.get_num_threads(),
        "data": "synthetic" if dataset.synthetic else "cifar10",
    }
    log("device %s (%s), %d thread(s), torch %s, data %s" % (
        kind, result["device_name"], result["threads"], torch.__version__, result["data"]))

    probes = [probe.run_probe(device)]
    log("probe: %.4f s" % probes[0])

    torch.manual_seed(0)
    # The rate at other batches: a batch's collation and its hand-over from the worker weigh
    # less per sample in a bigger batch. Cheaper than the main batch's full measurement: twice
    # its samples per repeat (and at least four rounds of every worker), fewer repeats.
    main_batch = a.loader_batch[0]
    samples = 2 * a.loader_batches * main_batch
    cheap_repeats = min(a.repeats, AT_BATCH_REPEATS)

    def cheap(b):
        return measure_loader(dataset, b, a.loader_workers, lambda w: max(-(-samples // b), 4 * max(w, 1)),
                              cheap_repeats, log)

    # --loader-only measures the main batch the cheap way too: every rate of the loader from one
    # run, so that the machine's speed that day is the same in all of them.
    result["loader"] = {"batch": main_batch,
                        "points": cheap(main_batch) if a.loader_only else
                        measure_loader(dataset, main_batch, a.loader_workers,
                                       lambda w: a.loader_batches, a.repeats, log)}
    if len(a.loader_batch) > 1:
        result["loader"]["at_batches"] = [{"batch": b, "points": cheap(b)} for b in sorted(a.loader_batch[1:])]
    result["models"] = {}
    if not a.loader_only and not a.no_gil:
        result["gil"], lines = dataparallel_host.measure_gil(a.repeats)
        for line in lines:
            log(line)
    fork_workers = [] if a.no_fork else [w for w in a.loader_workers if w >= 1]
    fork_ranks = a.fork_ranks if kind == "cpu" else [1]
    train_subset = Subset(dataset, list(range(min(len(dataset), 4096))))
    for name in [] if a.loader_only else a.models:
        model = measure_model(name, a.scripts, device, a.batches, a.warmup, a.repeats, log, probes, a.precision,
                              a.memory_format)
        if fork_workers and model["batches"]:
            model["fork"] = measure_fork(name, a.scripts, device, a.threads, model["batches"], fork_workers[0],
                                         fork_ranks, train_subset, a.fork_cycles, log, a.precision,
                                         a.memory_format, a.rank_start)
        result["models"][name] = model
    # The probe of the figures' own moments: the median of the one before the loader and the one
    # at the start of every round of the loop timings.
    result["probe_s"] = statistics.median(probes)
    probe_drift(probes, log)
    write_json_atomic(a.out, result)
    log("wrote %s in %.1f s" % (a.out, time.perf_counter() - t_start))


def main(argv=None):
    return cli.exit_code(lambda: run(parse_args(sys.argv[1:] if argv is None else argv)),
                         usage_errors=(UsageError, cifar_data.DataError))


if __name__ == "__main__":
    sys.exit(main())
