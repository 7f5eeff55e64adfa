"""runs.csv writing of the PyTorch trainer (measure/pytorch/runs_csv.py) and the default machine
name (machine_name.py, mirroring measure/machine.cpp)."""

import os
import re
import textwrap
import unittest

import pytorch_test_util as util

import machine_name
import runs_csv


def cpp_columns():
    """kRunsColumns of format/runs_columns.h, runs.csv's one column list (the C++ trainer writes
    it, simulate --compare reads it)."""
    with open(os.path.join(util.REPO, "format", "runs_columns.h")) as f:
        text = f.read()
    body = re.search(r"kRunsColumns = \{(.*?)\};", text, re.S)
    assert body, "no kRunsColumns = {...}; in format/runs_columns.h"
    return re.findall(r'"([^"]*)"', body.group(1))


def cpp_precision_column():
    """kRunsPrecisionColumn of format/runs_columns.h: the optional column after kRunsColumns."""
    with open(os.path.join(util.REPO, "format", "runs_columns.h")) as f:
        found = re.search(r'kRunsPrecisionColumn = "([^"]*)"', f.read())
    assert found, "no kRunsPrecisionColumn in format/runs_columns.h"
    return found.group(1)


def cpp_memory_format_column():
    """kRunsMemoryFormatColumn of format/runs_columns.h: the optional column after
    kRunsPrecisionColumn, only with it."""
    with open(os.path.join(util.REPO, "format", "runs_columns.h")) as f:
        found = re.search(r'kRunsMemoryFormatColumn = "([^"]*)"', f.read())
    assert found, "no kRunsMemoryFormatColumn in format/runs_columns.h"
    return found.group(1)


HEADER = ",".join(cpp_columns())


def row(**changes):
    r = {"strategy": "ddp", "gpus": 2, "batch_per_gpu": 32, "loader_workers": 2,
         "train_samples": 1024, "epoch_s": 12.3456789, "train_s": 11.0, "loader_wait_s": 1.3456789,
         "iterations": 16, "epochs": 2, "threads": 1, "device": "cpu", "data": "synthetic",
         "final_loss": 2.25, "final_accuracy": 0.125, "samples_per_s": 82.9456789,
         "date": "2025-01-31T12:34:56Z", "trainer": "pytorch", "test_samples": 0, "test_s": None,
         "probe_s": 0.000123456789, "load_before": 1234567.0, "load_after": 0.5}
    r.update(changes)
    return r


class RunsCsvTest(unittest.TestCase):
    def setUp(self):
        self.tmp = util.TempDir()
        self.dir = self.tmp.__enter__()
        self.path = os.path.join(self.dir, "sub", "folder", "runs.csv")

    def tearDown(self):
        self.tmp.__exit__(None, None, None)

    def lines(self):
        with open(self.path) as f:
            return f.read().split("\n")

    def test_columns_are_the_cpp_writers(self):
        # One schema for both trainers: the Python list is the C++ one, name for name.
        self.assertEqual(runs_csv.COLUMNS, cpp_columns())
        self.assertEqual(runs_csv.HEADER, HEADER)
        self.assertEqual(len(runs_csv.COLUMNS), 23)
        self.assertEqual(runs_csv.columns(True, False), cpp_columns() + ["model"])
        self.assertEqual(runs_csv.columns(False, True), cpp_columns() + [cpp_precision_column()])
        self.assertEqual(runs_csv.MEMORY_FORMAT_COLUMN, cpp_memory_format_column())
        self.assertEqual(runs_csv.columns(False, True, True),
                         cpp_columns() + [cpp_precision_column(), cpp_memory_format_column()])
        self.assertEqual(runs_csv.columns(True, True, True), cpp_columns() + [
            "model", cpp_precision_column(), cpp_memory_format_column()])
        with self.assertRaises(ValueError):  # memory_format only after precision
            runs_csv.columns(False, False, True)

    def test_the_six_headers(self):
        # HEADER, then model or not, then nothing, precision, or precision and memory_format: each
        # takes a resnet18-cifar fp32 nchw row as it is; anything else is refused.
        extras = [e + p for e in ("", ",model") for p in ("", ",precision", ",precision,memory_format")]
        self.assertEqual(set(runs_csv._HEADERS), {HEADER + e for e in extras})
        for i, extra in enumerate(extras):
            path = os.path.join(self.dir, "h%d.csv" % i)
            with open(path, "w") as f:
                f.write(HEADER + extra + "\n")
            runs_csv.check_header(path)
            runs_csv.append_row(path, row())
            with open(path) as f:
                self.assertEqual(f.read().split("\n"), [
                    HEADER + extra, runs_csv.format_row(row()) + {
                        "": "", ",precision": ",fp32", ",precision,memory_format": ",fp32,nchw",
                        ",model": ",resnet18-cifar", ",model,precision": ",resnet18-cifar,fp32",
                        ",model,precision,memory_format": ",resnet18-cifar,fp32,nchw"}[extra], ""])
        for i, extra in enumerate([",memory_format", ",model,memory_format", ",memory_format,precision",
                                   ",precision,model", ",precision,memory_format,model"]):
            path = os.path.join(self.dir, "bad%d.csv" % i)
            with open(path, "w") as f:
                f.write(HEADER + extra + "\n")
            with self.assertRaises(runs_csv.RunsFileError) as e:
                runs_csv.check_header(path)
            self.assertEqual(str(e.exception), "%s:1: header: expected '%s', found '%s'"
                             % (path, HEADER, HEADER + extra))
            with self.assertRaises(runs_csv.RunsFileError):
                runs_csv.append_row(path, row(memory_format="channels_last"))
            with open(path) as f:
                self.assertEqual(f.read(), HEADER + extra + "\n")  # untouched

    def test_precision_is_a_column_of_its_own(self):
        # A bf16-amp run makes a file with the precision column (the C++ writer's header), which
        # takes fp32 rows too; a file without it gets the column with the first bf16-amp row, its
        # rows fp32.
        runs_csv.append_row(self.path, row(precision="bf16-amp"))
        runs_csv.append_row(self.path, row(gpus=1))
        lines = self.lines()
        self.assertEqual(lines[0], HEADER + ",precision")
        self.assertEqual(lines[1], runs_csv.format_row(row()) + ",bf16-amp")
        self.assertEqual(lines[2].split(",")[1::22], ["1", "fp32"])
        runs_csv.check_header(self.path, precision="bf16-amp")
        both = os.path.join(self.dir, "both.csv")
        runs_csv.append_row(both, row(model="vit-tiny", precision="bf16-amp"))
        with open(both) as f:
            self.assertEqual(f.readline(), HEADER + ",model,precision\n")
        plain = os.path.join(self.dir, "plain.csv")
        runs_csv.append_row(plain, row())
        runs_csv.check_header(plain, precision="bf16-amp")
        runs_csv.append_row(plain, row(precision="bf16-amp"))
        with open(plain) as f:
            self.assertEqual(f.read().split("\n"), [HEADER + ",precision", runs_csv.format_row(row()) + ",fp32",
                                                    runs_csv.format_row(row()) + ",bf16-amp", ""])
        # The same as the C++ writer makes of such a file (format/run_row.cpp; RunsCsv test).
        model = os.path.join(self.dir, "model.csv")
        runs_csv.append_row(model, row(model="vit-tiny"))
        runs_csv.append_row(model, row(model="vit-tiny", precision="bf16-amp"))
        with open(model) as f:
            self.assertEqual(f.read().split("\n")[:3], [HEADER + ",model,precision",
                                                        runs_csv.format_row(row()) + ",vit-tiny,fp32",
                                                        runs_csv.format_row(row()) + ",vit-tiny,bf16-amp"])

    def test_memory_format_is_a_column_after_precision(self):
        # An nchw row needs neither column; a channels_last row makes a file with precision and
        # memory_format (the C++ writer's header), which takes nchw rows too.
        runs_csv.append_row(self.path, row(memory_format="nchw"))
        self.assertEqual(self.lines(), [HEADER, runs_csv.format_row(row()), ""])
        fresh = os.path.join(self.dir, "fresh.csv")
        runs_csv.check_header(fresh, memory_format="channels_last")  # missing: fine
        runs_csv.append_row(fresh, row(memory_format="channels_last"))
        runs_csv.append_row(fresh, row(precision="bf16-amp"))
        with open(fresh) as f:
            self.assertEqual(f.read().split("\n"), [HEADER + ",precision,memory_format",
                                                    runs_csv.format_row(row()) + ",fp32,channels_last",
                                                    runs_csv.format_row(row()) + ",bf16-amp,nchw", ""])
        # A file with precision only gains memory_format with the first channels_last row, its
        # rows nchw (what a row without the column is).
        old = os.path.join(self.dir, "old.csv")
        runs_csv.append_row(old, row())
        runs_csv.append_row(old, row(precision="bf16-amp"))
        runs_csv.check_header(old, precision="bf16-amp", memory_format="channels_last")
        runs_csv.append_row(old, row(precision="bf16-amp", memory_format="channels_last"))
        with open(old) as f:
            self.assertEqual(f.read().split("\n"), [HEADER + ",precision,memory_format",
                                                    runs_csv.format_row(row()) + ",fp32,nchw",
                                                    runs_csv.format_row(row()) + ",bf16-amp,nchw",
                                                    runs_csv.format_row(row()) + ",bf16-amp,channels_last",
                                                    ""])
        # A file with neither gains both, its rows fp32 and nchw.
        plain = os.path.join(self.dir, "plain.csv")
        runs_csv.append_row(plain, row(gpus=1))
        runs_csv.append_row(plain, row(memory_format="channels_last"))
        with open(plain) as f:
            self.assertEqual(f.read().split("\n"), [HEADER + ",precision,memory_format",
                                                    runs_csv.format_row(row(gpus=1)) + ",fp32,nchw",
                                                    runs_csv.format_row(row()) + ",fp32,channels_last", ""])
        # With the model column: after it, as the precision column is.
        model = os.path.join(self.dir, "model.csv")
        runs_csv.append_row(model, row(model="vit-tiny"))
        runs_csv.append_row(model, row(model="vit-tiny", memory_format="channels_last"))
        with open(model) as f:
            self.assertEqual(f.read().split("\n"), [HEADER + ",model,precision,memory_format",
                                                    runs_csv.format_row(row()) + ",vit-tiny,fp32,nchw",
                                                    runs_csv.format_row(row()) + ",vit-tiny,fp32,channels_last",
                                                    ""])
        # A file without the model column still refuses another model's row, channels_last or not.
        with self.assertRaises(runs_csv.RunsFileError) as e:
            runs_csv.check_header(plain, "vit-tiny", memory_format="channels_last")
        self.assertIn("no model column", str(e.exception))
        with self.assertRaises(runs_csv.RunsFileError):
            runs_csv.append_row(self.path, row(model="vit-tiny", memory_format="channels_last"))
        self.assertEqual(self.lines(), [HEADER, runs_csv.format_row(row()), ""])  # untouched
        # A header no row can go under names the one a channels_last row needs.
        bad = os.path.join(self.dir, "bad.csv")
        with open(bad, "w") as f:
            f.write("strategy\n")
        with self.assertRaises(runs_csv.RunsFileError) as e:
            runs_csv.check_header(bad, memory_format="channels_last")
        self.assertEqual(str(e.exception), "%s:1: header: expected '%s', found 'strategy'"
                         % (bad, HEADER + ",precision,memory_format"))

    def test_format_is_percent_g_and_empty_for_none(self):
        line = runs_csv.format_row(row())
        self.assertEqual(line, "ddp,2,32,2,1024,12.3457,11,1.34568,16,2,1,cpu,synthetic,2.25,"
                               "0.125,82.9457,2025-01-31T12:34:56Z,pytorch,0,,0.000123457,"
                               "1.23457e+06,0.5")
        with self.assertRaises(ValueError):
            runs_csv.format_row(row(data="a,b"))
        r = row()
        del r["probe_s"]
        with self.assertRaises(ValueError):
            runs_csv.format_row(r)

    def test_append_creates_folders_header_and_rows(self):
        runs_csv.check_header(self.path)  # missing: fine
        runs_csv.append_row(self.path, row())
        runs_csv.append_row(self.path, row(gpus=1))
        lines = self.lines()
        self.assertEqual(lines[0], HEADER)
        self.assertEqual(len(lines), 4)  # header, 2 rows, "" after the last newline
        self.assertEqual(lines[2].split(",")[1], "1")
        self.assertEqual(lines[3], "")
        self.assertTrue(os.path.exists(self.path + ".lock"))
        leftovers = [n for n in os.listdir(os.path.dirname(self.path)) if ".tmp." in n]
        self.assertEqual(leftovers, [])

    def test_empty_file_gets_the_header(self):
        os.makedirs(os.path.dirname(self.path))
        open(self.path, "w").close()
        runs_csv.check_header(self.path)
        runs_csv.append_row(self.path, row())
        self.assertEqual(self.lines()[0], HEADER)

    def test_missing_final_newline_is_repaired(self):
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "w") as f:
            f.write(HEADER + "\n" + runs_csv.format_row(row(gpus=3)))
        runs_csv.append_row(self.path, row(gpus=4))
        self.assertEqual([l.split(",")[1] for l in self.lines()[1:3]], ["3", "4"])

    def test_other_header_is_refused_with_the_error_line(self):
        os.makedirs(os.path.dirname(self.path))
        cpp_header = HEADER.split(",date,")[0] + ",date"  # the C++ trainer's 17 columns
        with open(self.path, "w") as f:
            f.write(cpp_header + "\nddp,1\n")
        expected = "%s:1: header: expected '%s', found '%s'" % (self.path, HEADER, cpp_header)
        with self.assertRaises(runs_csv.RunsFileError) as e:
            runs_csv.check_header(self.path)
        self.assertEqual(str(e.exception), expected)
        with self.assertRaises(runs_csv.RunsFileError) as e:
            runs_csv.append_row(self.path, row())
        self.assertEqual(str(e.exception), expected)
        with open(self.path) as f:
            self.assertEqual(f.read(), cpp_header + "\nddp,1\n")  # untouched

    def test_concurrent_processes_lose_no_row(self):
        per_process = 150
        go = os.path.join(self.dir, "go")
        # Each process waits for the go file, so the appends really overlap.
        script = textwrap.dedent("""
            import os, sys, time
            sys.path.append(%r)
            import runs_csv
            tag, path, go = sys.argv[1], sys.argv[2], sys.argv[3]
            while not os.path.exists(go):
                time.sleep(0.001)
            for i in range(%d):
                runs_csv.append_line(path, "%%s,%%d" %% (tag, i))
        """ % (util.PYTORCH_DIR, per_process))
        import subprocess
        procs = [subprocess.Popen([util.PYTHON, "-c", script, tag, self.path, go],
                                  env=util.clean_env(), stderr=subprocess.PIPE, text=True)
                 for tag in ("a", "b", "c")]
        open(go, "w").close()
        for p in procs:
            _, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, err)
        lines = [l for l in self.lines() if l]
        self.assertEqual(lines[0], HEADER)
        self.assertEqual(lines.count(HEADER), 1)
        self.assertEqual(sorted(lines[1:]),
                         sorted("%s,%d" % (t, i) for t in "abc" for i in range(per_process)))


class MachineNameTest(unittest.TestCase):
    def test_slug(self):
        self.assertEqual(machine_name.slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3")
        self.assertEqual(machine_name.slug("  --A__b!! "), "a-b")
        self.assertEqual(machine_name.slug("NVIDIA A100-SXM4-40GB"), "nvidia-a100-sxm4-40gb")

    def test_short_cpu_slug(self):
        s = machine_name.short_cpu_slug
        self.assertEqual(s("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"), "xeon-platinum-8375c")
        self.assertEqual(s("AMD EPYC 7B13 64-Core Processor"), "epyc-7b13")
        self.assertEqual(s("Intel(R) Xeon(R) Processor"), "xeon")
        self.assertEqual(s("Intel(R) CPU"), "cpu")

    def test_default_cpu_name(self):
        name = machine_name.default_machine_name("cpu")
        self.assertRegex(name, r"^cpu-[a-z0-9-]+-%dc$" % len(os.sched_getaffinity(0)))


if __name__ == "__main__":
    unittest.main()
