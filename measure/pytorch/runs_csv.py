"""runs.csv rows of the PyTorch reference trainer: the header, number formatting, and the locked
atomic append.

The file is shared with concurrent writers through an exclusive flock on FILE.lock (the lock
file the C++ writer in format/run_row.cpp uses too): under the lock the file is read, its
header checked, and header + old rows + the new row written to FILE.tmp.<pid>, fsynced and
renamed over FILE. A crash never leaves a torn file and concurrent appenders never lose a row.

COLUMNS is runs.csv's column list of format/runs_columns.h, the one the C++ writer and simulate
--compare's reader use (tests/pytorch/test_runs_csv.py holds the two lists equal).

Six headers are accepted. HEADER (23 columns) is the one the C++ writer shares; a file with it
holds ResNet-18 CIFAR fp32 nchw rows only (both trainers trained nothing else when it was
defined). Up to three more columns may follow HEADER, in this order: `model`, for rows of other
models (train.py --model or --arch); `precision` (format/runs_columns.h's kRunsPrecisionColumn),
for runs in another precision than fp32 (--precision bf16-amp); and `memory_format`
(kRunsMemoryFormatColumn), for runs in another memory format than nchw (--memory-format
channels_last), only after `precision`: HEADER, then `model` or not, then none of the other two,
`precision`, or both. A new file gets the columns its row needs (HEADER for a resnet18-cifar fp32
nchw row; a channels_last row needs `precision` too, filled as usual); a row goes into any file
whose header has the columns it needs, its `model`, `precision` and `memory_format` filled where
the columns exist. A file without the precision or the memory_format column gets the ones a row
needs when it comes, its rows `fp32` and `nchw` (what a row without the column is), as the C++
writer does; a file without the model column still refuses another model's row. simulate
--compare reads every such header.
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
MODEL_COLUMN = "model"
DEFAULT_MODEL = "resnet18-cifar"  # the model of every row of a file without the model column
PRECISION_COLUMN = "precision"
DEFAULT_PRECISION = "fp32"  # the precision of every row of a file without the precision column
MEMORY_FORMAT_COLUMN = "memory_format"
DEFAULT_MEMORY_FORMAT = "nchw"  # the memory format of every row of a file without its column


def columns(model_column, precision_column, memory_format_column=False):
    """COLUMNS, then `model`, `precision` and `memory_format` where asked: the columns of one of
    the six headers (`memory_format` only with `precision`)."""
    if memory_format_column and not precision_column:
        raise ValueError("the %s column comes only after the %s column"
                         % (MEMORY_FORMAT_COLUMN, PRECISION_COLUMN))
    return COLUMNS + [MODEL_COLUMN] * model_column + [PRECISION_COLUMN] * precision_column + \
        [MEMORY_FORMAT_COLUMN] * memory_format_column


# Every header a file may have: its text -> (has the model column, has the precision column, has
# the memory_format column).
_HEADERS = {",".join(columns(m, p, f)): (m, p, f) for m in (False, True)
            for p, f in ((False, False), (True, False), (True, True))}


def _needs(model, precision, memory_format=DEFAULT_MEMORY_FORMAT):
    """The extra columns a row of `model` in `precision` and `memory_format` needs: (model,
    precision, memory_format). The memory_format column brings the precision column with it."""
    memory_format_column = memory_format != DEFAULT_MEMORY_FORMAT
    return (model != DEFAULT_MODEL, precision != DEFAULT_PRECISION or memory_format_column,
            memory_format_column)


class RunsFileError(Exception):
    """A runs file that cannot take the row; the message is the whole error line's text."""


def number(value):
    """A float as C's %.6g (what the C++ writer prints); None -> empty field."""
    if value is None:
        return ""
    return "%.6g" % float(value)


def format_row(fields, columns=None):
    """One CSV line (no newline) from a dict holding every column of `columns` (default COLUMNS).
    Floats are printed as %.6g, None as an empty field; text must not contain commas or line
    breaks."""
    columns = COLUMNS if columns is None else columns
    missing = [c for c in columns if c not in fields]
    if missing:
        raise ValueError("row lacks column(s): " + ", ".join(missing))
    out = []
    for c in columns:
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


def _header_error(path, found, model=DEFAULT_MODEL, precision=DEFAULT_PRECISION,
                  memory_format=DEFAULT_MEMORY_FORMAT):
    expected = ",".join(columns(*_needs(model, precision, memory_format)))
    return RunsFileError("%s:1: header: expected '%s', found '%s'" % (path, expected, found))


def _check_header_line(path, line, model, precision=DEFAULT_PRECISION,
                       memory_format=DEFAULT_MEMORY_FORMAT):
    """The extra columns of the header `line`, (model, precision, memory_format); RunsFileError
    unless a row of `model` in `precision` and `memory_format` may go under it (a missing
    precision or memory_format column is added by the append)."""
    has = _HEADERS.get(line)
    if has is None:
        raise _header_error(path, line, model, precision, memory_format)
    if model != DEFAULT_MODEL and not has[0]:
        raise RunsFileError("%s:1: header: no model column (the file holds %s rows only); write "
                            "the rows of %s to another file (--runs)" % (path, DEFAULT_MODEL, model))
    return has


def _with_columns(content, added):
    """`content` with the columns `added` ((name, default) pairs, in the header's order) after its
    last: their names in the header, their defaults in every row."""
    names = "".join("," + name for name, _ in added)
    defaults = "".join("," + default for _, default in added)
    lines = content.split("\n")
    out = [lines[0] + names] + [l + defaults for l in lines[1:] if l]
    return "\n".join(out) + "\n"


def _first_line(content):
    return content.split("\n", 1)[0].rstrip("\r")


def check_header(path, model=DEFAULT_MODEL, precision=DEFAULT_PRECISION,
                 memory_format=DEFAULT_MEMORY_FORMAT):
    """Raises RunsFileError unless `path` is missing, empty, or has a header that can take a row
    of `model` in `precision` and `memory_format` (a header without the precision or the
    memory_format column can: the append adds them)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace", newline="") as f:
            first = f.readline()
    except FileNotFoundError:
        return
    except OSError as e:
        raise RunsFileError("%s: cannot read: %s" % (path, e.strerror or e))
    if first == "":
        return
    _check_header_line(path, _first_line(first), model, precision, memory_format)


def append_line(path, line):
    """Appends one row (a line without newline) to `path` under the lock, atomically. The file
    must be new or empty (it gets HEADER) or have HEADER."""
    def extend(content):
        if _first_line(content) != HEADER:
            raise _header_error(path, _first_line(content))
        return content + line + "\n"
    _append(path, HEADER, extend)


def _append(path, new_header, extend):
    """Writes extend(content) over `path` under the lock, atomically: content is the file (ending
    in a newline), or `new_header` and a newline for a new or empty file. extend raises
    RunsFileError when the row cannot go into it."""
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
            content = new_header + "\n"
        elif not content.endswith("\n"):
            content += "\n"
        content = extend(content)
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
    """Appends the row `fields` (every column of COLUMNS; `model`, default DEFAULT_MODEL,
    `precision`, default DEFAULT_PRECISION, and `memory_format`, default DEFAULT_MEMORY_FORMAT,
    too) under the header the file has, with the precision and memory_format columns it lacks
    and the row needs added, or the one its row needs in a new file."""
    model = fields.get(MODEL_COLUMN) or DEFAULT_MODEL
    precision = fields.get(PRECISION_COLUMN) or DEFAULT_PRECISION
    memory_format = fields.get(MEMORY_FORMAT_COLUMN) or DEFAULT_MEMORY_FORMAT
    full = dict(fields, **{MODEL_COLUMN: model, PRECISION_COLUMN: precision,
                           MEMORY_FORMAT_COLUMN: memory_format})
    needs = _needs(model, precision, memory_format)

    def extend(content):
        has_model, has_precision, has_memory_format = _check_header_line(
            path, _first_line(content), model, precision, memory_format)
        # The missing columns in the header's order: precision before memory_format.
        added = [(PRECISION_COLUMN, DEFAULT_PRECISION)] * (needs[1] and not has_precision) + \
            [(MEMORY_FORMAT_COLUMN, DEFAULT_MEMORY_FORMAT)] * (needs[2] and not has_memory_format)
        if added:
            content = _with_columns(content, added)
            has_precision, has_memory_format = has_precision or needs[1], \
                has_memory_format or needs[2]
        return content + format_row(full, columns(has_model, has_precision, has_memory_format)) + \
            "\n"

    format_row(full, columns(True, True, True))  # bad fields: no lock
    _append(path, ",".join(columns(*needs)), extend)
