#!/usr/bin/env python3
"""Tests of scripts/check-docs.py's sourced-table rule (rule 4) on a made-up repository: a table
whose figures its files hold passes, one figure changed by hand fails with the doc's line, and a
report's %-headed Markdown column counts as that percentage. Usage: check_docs_test.py REPO_ROOT."""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
SCRIPT = os.path.join(os.path.abspath(ROOT), "scripts", "check-docs.py")

README = """# x

## Validation figures

| what | figure | source |
|---|---|---|
| none | - | - |
"""

# A report as `simulate --compare` prints its MAPE table: the unit in the header, bare numbers.
REPORT = """# report

| configurations | n | MAPE epoch_s % | noise floor % (of n with >= 2 runs) | bias: mean error epoch_s % | explained |
| :-- | --: | --: | --: | --: | --: |
| pytorch, 1 rank | 10 | 5.6 | 5.9 (10 of 10) | -4.6 | 9/10 |
| all | 40 | 6.2 | 9.0 (40 of 40) | -4.7 | 35/40 |
"""


def doc(figures):
    return ("# Doc\n\n<!-- figures: reports/r/report.md -->\n"
            "| trainer | MAPE | noise floor | bias |\n|---|---:|---:|---:|\n"
            "| PyTorch, 1 rank | %s |\n\nAfter the table, 7.7%% in prose is not checked.\n" % figures)


class SourcedTables(unittest.TestCase):
    def check(self, figures, report=REPORT):
        with tempfile.TemporaryDirectory() as repo:
            os.makedirs(os.path.join(repo, "docs"))
            os.makedirs(os.path.join(repo, "reports", "r"))
            os.makedirs(os.path.join(repo, "reports", "cpu-epyc-2c"))
            files = {"README.md": README, "docs/LARGE_BATCH.md": "# lb\n", "reports/cpu-epyc-2c/README.md": "# r\n",
                     "reports/r/report.md": report, "docs/DOC.md": doc(figures)}
            for path, text in files.items():
                with open(os.path.join(repo, path), "w", encoding="utf-8") as f:
                    f.write(text)
            run = subprocess.run([sys.executable, SCRIPT, repo], capture_output=True, text=True)
            return run.returncode, run.stdout

    def test_figures_in_a_percent_column_are_held(self):
        rc, out = self.check("5.6% | 5.9% (10 of 10) | -4.6%")
        self.assertEqual(rc, 0, out)
        self.assertIn("4 of the docs' sourced tables", out)

    def test_a_figure_changed_by_hand_fails_with_its_line(self):
        rc, out = self.check("5.7% | 5.9% | -4.6%")
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/DOC.md:6: 5.7% is in none of reports/r/report.md", out)

    def test_a_count_changed_by_hand_fails(self):
        rc, out = self.check("5.6% | 5.9% (9 of 10) | -4.6%")
        self.assertEqual(rc, 1, out)
        self.assertIn("'9 of 10' is in none of", out)

    def test_a_number_outside_a_percent_column_is_not_a_percentage(self):
        # 10 is the n column's (no % in its header): "10%" is not held.
        rc, out = self.check("10% | 5.9% | -4.6%")
        self.assertEqual(rc, 1, out)
        self.assertIn("10% is in none of", out)

    def test_a_table_without_a_rule_under_its_header_is_not_read_as_one(self):
        rc, out = self.check("5.6% | 5.9% | -4.6%", report=REPORT.replace("| :-- | --: | --: | --: | --: | --: |\n", ""))
        self.assertEqual(rc, 1, out)


if __name__ == "__main__":
    unittest.main()
