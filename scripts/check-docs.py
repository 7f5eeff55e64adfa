#!/usr/bin/env python3
"""Checks that the documentation agrees with the files it cites (a test: Docs.FiguresAndLinks).

1. Every relative link in README.md, docs/*.md and reports/**/*.md names a file that exists, and
   every #anchor a heading of that file (GitHub's slugs).
2. Every percentage in the figure column of README.md's "Validation figures" table appears, to
   the digits printed, in one of the files linked in the same row (the goals in [brackets] are
   not figures): a figure typed by hand that the report does not hold fails.
3. The large-batch tables (docs/LARGE_BATCH.md and reports/cpu-epyc-2c/README.md): in a table row
   whose first cell names a folder `largebatch-...` (or a row under it that names none, e.g. "of
   those, ..."), every error with its bias ("8.1% (+7.6%") is in that folder's report*.md under
   reports/cpu-epyc-2c/ as they print it ("8.1%, bias +7.6%"), and every other percentage,
   "N points" and "N of M" is there too.

4. A table in docs/*.md headed by a comment `<!-- figures: GLOB ... -->` (on the line before it):
   every percentage and "N of M" in its cells after the first (which names the row; goals in
   [brackets] aside) is in the files the globs name, relative to the repository root. A number
   that opens a cell of a column whose header holds "%" in a Markdown table of those files (as
   `simulate --compare`'s report.md prints its MAPE table: "5.6", "9.0 (40 of 40)") counts as
   that percentage.

Usage: scripts/check-docs.py [REPO_ROOT]. Prints each disagreement, one per line, and exits 1 if
there is any; 0 and a one-line summary otherwise.
"""

import functools
import glob
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")
POINTS = re.compile(r"(\d+(?:\.\d+)?) points")
WITH_BIAS = re.compile(r"(\d+(?:\.\d+)?)(%| points) \(([+-]\d+(?:\.\d+)?%?)")
OF = re.compile(r"\b(\d+) of (\d+)\b")
FOLDER = re.compile(r"^`(largebatch-[\w.-]+)`")
LARGE_BATCH_TABLES = ["docs/LARGE_BATCH.md", "reports/cpu-epyc-2c/README.md"]
LARGE_BATCH_REPORTS = "reports/cpu-epyc-2c"


def slug(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen, fenced = set(), {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fenced = not fenced
                m = None if fenced else re.match(r"^#+\s+(.*)", line)
                if m:
                    s = slug(m.group(1))
                    found.add(s if s not in seen else "%s-%d" % (s, seen[s] + 1))
                    seen[s] = seen.get(s, -1) + 1
        cache[path] = found
    return cache[path]


def check_links(files):
    problems = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(resolved):
                problems.append("%s: link to %s: no such file" % (path, target))
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append("%s: link to %s: no such heading" % (path, target))
    return problems


def held(figure, sources):
    """True when a percentage of `sources` prints as `figure` (e.g. 111% for 111.2%)."""
    decimals = len(figure.partition(".")[2])
    value = float(figure)
    return any(abs(float(p) - value) <= 0.5 * 10 ** -decimals + 1e-9 for p in PERCENT.findall(sources))


def check_figures(readme):
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    start = text.find("\n## Validation figures")
    if start < 0:
        return ["%s: no 'Validation figures' section" % readme], 0
    section = text[start + 1:]
    end = section.find("\n## ")
    section = section[:end] if end >= 0 else section
    problems, checked = [], 0
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3 or cells[0] in ("what", "---"):
            continue
        what, figure, source = cells[0], cells[1], cells[2]
        links = [m.group(1).partition("#")[0] for m in LINK.finditer(source)]
        texts = ""
        for link in links:
            path = os.path.join(os.path.dirname(readme), link)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    texts += f.read()
        for number in PERCENT.findall(re.sub(r"\[[^\]]*\]", "", figure)):
            checked += 1
            if not held(number, texts):
                problems.append("%s: Validation figures, '%s': %s%% is in none of %s"
                                % (readme, what[:60], number, ", ".join(links) or "(no source linked)"))
    return problems, checked


@functools.lru_cache(maxsize=None)
def folder_reports(folder):
    """The text of a large-batch folder's report*.md, read once."""
    texts = ""
    for path in sorted(glob.glob(os.path.join(LARGE_BATCH_REPORTS, folder, "report*.md"))):
        with open(path, encoding="utf-8") as f:
            texts += f.read()
    return texts


def check_large_batch_tables(doc):
    """Figures of the large-batch tables in `doc` against their folders' reports (rule 3)."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems, checked, folder = [], 0, None
    for number, line in enumerate(lines, 1):
        if not line.startswith("|"):
            folder = None  # a table ends: the next one names its folders anew
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        named = FOLDER.match(cells[0])
        if named:
            folder = named.group(1)
        if folder is None:
            continue
        texts = folder_reports(folder)
        figures = " | ".join(cells[1:])
        # An error with its bias, "8.1% (+7.6%" or "4.8 points (+2.4", is held as the reports print
        # the pair ("8.1%, bias +7.6%", "4.8 points, bias +2.4"); a figure without one alone.
        for value, unit, bias in WITH_BIAS.findall(figures):
            checked += 1
            if "%s%s, bias %s" % (value, unit, bias) not in texts:
                problems.append("%s:%d: '%s%s, bias %s' is in none of %s/report*.md"
                                % (doc, number, value, unit, bias, folder))
        alone = WITH_BIAS.sub("", figures)
        for value in POINTS.findall(alone):
            checked += 1
            if not re.search(r"\b%s points" % re.escape(value), texts):
                problems.append("%s:%d: %s points is in none of %s/report*.md" % (doc, number, value, folder))
        missing, n = unheld(alone, figures, texts)
        checked += n
        problems += ["%s:%d: %s is in none of %s/report*.md" % (doc, number, m, folder) for m in missing]
    return problems, checked


def unheld(percentages, counts, texts):
    """The percentages of `percentages` and the "N of M" of `counts` that `texts` does not hold, as
    they read ("8.1%", "'12 of 12'"), and how many were checked."""
    missing = ["%s%%" % value for value in PERCENT.findall(percentages) if not held(value, texts)]
    ofs = OF.findall(counts)
    missing += ["'%s of %s'" % (a, b) for a, b in ofs if not re.search(r"\b%s of %s\b" % (a, b), texts)]
    return missing, len(PERCENT.findall(percentages)) + len(ofs)


SOURCED_TABLE = re.compile(r"^<!-- figures: (.+?) -->$")
LEADING_NUMBER = re.compile(r"^[+-]?(\d+(?:\.\d+)?)(?!\S*%)")


def table_percentages(text):
    """The numbers that open the cells of %-headed columns of the Markdown tables in `text`, as
    percentages ("5.6%"), one per line: a report's table whose header says the unit."""
    found, header = [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells is None:
            header = None
        elif header is None:
            below = lines[i + 1] if i + 1 < len(lines) else ""
            if below.startswith("|") and set(below) <= set("|-: "):
                header = ["%" in c for c in cells]
        elif not set(line) <= set("|-: "):
            for percent_column, cell in zip(header, cells):
                number = LEADING_NUMBER.match(cell) if percent_column else None
                if number:
                    found.append(number.group(1) + "%")
    return "\n".join(found)


def check_sourced_tables(doc):
    """Rule 4: the figures of each table headed by `<!-- figures: GLOB ... -->` against the files."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems, checked, sources, texts = [], 0, None, ""
    for number, line in enumerate(lines, 1):
        marker = SOURCED_TABLE.match(line)
        if marker:
            sources = marker.group(1).split()
            paths = sorted({p for pattern in sources for p in glob.glob(pattern)})
            if not paths:
                problems.append("%s:%d: figures: no file matches %s" % (doc, number, " ".join(sources)))
            texts = ""
            for path in paths:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                texts += text + "\n" + table_percentages(text) + "\n"
            continue
        if not line.startswith("|"):
            if sources is not None and line.strip() and not line.startswith("<!--"):
                sources = None  # the table after the marker has ended
            continue
        if sources is None:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if set(cells[0]) <= set("-: "):
            continue  # the rule under the header
        figures = re.sub(r"\[[^\]]*\]", "", " | ".join(cells[1:]))
        missing, n = unheld(figures, figures, texts)
        checked += n
        problems += ["%s:%d: %s is in none of %s" % (doc, number, m, " ".join(sources)) for m in missing]
    return problems, checked


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    files = ["README.md"] + sorted(glob.glob("docs/*.md")) + sorted(glob.glob("reports/**/*.md", recursive=True))
    problems = check_links(files)
    figure_problems, checked = check_figures("README.md")
    problems += figure_problems
    large_batch_checked = 0
    for doc in LARGE_BATCH_TABLES:
        table_problems, n = check_large_batch_tables(doc)
        problems += table_problems
        large_batch_checked += n
    sourced_checked = 0
    for doc in sorted(glob.glob("docs/*.md")):
        table_problems, n = check_sourced_tables(doc)
        problems += table_problems
        sourced_checked += n
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check-docs: links in %d files resolve; %d figures of README.md's validation table, %d of the "
          "large-batch tables and %d of the docs' sourced tables are in their sources"
          % (len(files), checked, large_batch_checked, sourced_checked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
