#!/usr/bin/env python3
"""Checks that the documentation agrees with the files it cites (a test: Docs.FiguresAndLinks).

1. Every relative link in README.md, docs/*.md and reports/**/*.md names a file that exists, and
   every #anchor a heading of that file (GitHub's slugs).
2. Every percentage in the figure column of README.md's "Validation figures" table appears, to
   the digits printed, in one of the files linked in the same row (the goals in [brackets] are
   not figures): a figure typed by hand that the report does not hold fails.

Usage: scripts/check-docs.py [REPO_ROOT]. Prints each disagreement, one per line, and exits 1 if
there is any; 0 and a one-line summary otherwise.
"""

import glob
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")
PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")


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


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    files = ["README.md"] + sorted(glob.glob("docs/*.md")) + sorted(glob.glob("reports/**/*.md", recursive=True))
    problems = check_links(files)
    figure_problems, checked = check_figures("README.md")
    problems += figure_problems
    for p in problems:
        print(p)
    if problems:
        return 1
    print("check-docs: links in %d files resolve; %d figures of README.md's validation table are in "
          "their sources" % (len(files), checked))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
