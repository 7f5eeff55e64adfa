"""runs.csv rows of the PyTorch reference trainer: the header, number formatting, and the locked
atomic append.

The file is shared with concurrent writers through an exclusive flock on FILE.lock (the lock
file the C++ writer in measure/runs/runs_csv.cpp uses too): under the lock the file is read, its
header checked, and header + old rows + the new row written to FILE.tmp.<pid>, fsynced and
renamed over FILE. A crash never leaves a torn file and concurrent appenders never lose a row.
"""

import fcntl
import os

COLUMNS = [
    "strategy", "gpus", "batch_per_gpu", "loader_workers", "train_samples", "epoch_s", "train_s",
    "loader_wait_s", "iterations", "epochs", "threads", "device", "data", "final_loss",
    "final_accuracy", "samples_per_s", "date", "trainer", "test_samples", "test_s", "probe_s",
    "load_before", "load_after",
]
HEADER = ",".join(COLUMNS)


class RunsFileError(Exception):
    """A runs file that cannot take the row; the message is the whole error line's text."""


def number(value):
    """A float as C's %.6g (what the C++ writer prints); None -> empty field."""
    if value is None:
        return ""
    return "%.6g" % float(value)


def format_row(fields):
    """One CSV line (no newline) from a dict holding every column. Floats are printed as %.6g,
    None as an empty field; text must not contain commas or line breaks."""
    missing = [c for c in COLUMNS if c not in fields]
    if missing:
        raise ValueError("row lacks column(s): " + ", ".join(missing))
    out = []
    for c in COLUMNS:
        v = fields[c]
        if v is None:
            text = ""
        elif isinstance(v, bool):
            text = "true" if v else "false"
        elif isinstance(v, int):
            text = str(v)
        elif isinstance(v, float):
            text = number(v)
        else:
            text = str(v)
        if "," in text or "\n" in text or "\r" in text:
            raise ValueError("column %s: text %r contains a comma or a line break" % (c, text))
        out.append(text)
    return ",".join(out)


def _header_error(path, found):
    return RunsFileError("%s:1: header: expected '%s', found '%s'" % (path, HEADER, found))


def _first_line(content):
    return content.split("\n", 1)[0].rstrip("\r")


def check_header(path):
    """Raises RunsFileError unless `path` is missing, empty, or starts with HEADER."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace", newline="") as f:
            first = f.readline()
    except FileNotFoundError:
        return
    except OSError as e:
        raise RunsFileError("%s: cannot read: %s" % (path, e.strerror or e))
    if first == "":
        return
    line = _first_line(first)
    if line != HEADER:
        raise _header_error(path, line)


def append_line(path, line):
    """Appends one row (a line without newline) to `path` under the lock, atomically."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    lock_fd = os.open(path + ".lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)  # retried on EINTR by Python (PEP 475)
        try:
            with open(path, "r", encoding="utf-8", newline="") as f:
                content = f.read()
        except FileNotFoundError:
            content = ""
        if content == "":
            content = HEADER + "\n"
        else:
            first = _first_line(content)
            if first != HEADER:
                raise _header_error(path, first)
            if not content.endswith("\n"):
                content += "\n"
        content += line + "\n"
        tmp = "%s.tmp.%d" % (path, os.getpid())
        fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY | os.O_CLOEXEC, 0o644)
        try:
            data = content.encode("utf-8")
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        try:
            os.rename(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    finally:
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
        os.close(lock_fd)


def append_row(path, fields):
    append_line(path, format_row(fields))
