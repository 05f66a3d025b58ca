#!/usr/bin/env python3
"""Checks that every repository path the documentation names exists: README.md, every .md file
under docs/, and the indexes of records/ (records/**/README.md). A path is a word starting with one of the repository's top folders
(compare/..., records/runs/...; {a,b} and * expanded, a path cut at a line end after - or /
joined to the next line) or a relative markdown link. It exists if it is in the tree, is the stem
of a file there (bench/kernels_ab/matvec_q2_word names its .comp and .json), or is a build output
that a .gitignore covers (bench/kernels_ab/ab.json, written by bench/kernels_ab/build.sh).
spec/ is left out (its pages are written elsewhere).

Usage: scripts/check_doc_paths.py [ROOT]   (exit 1 and one line per missing path if any)"""
import glob
import itertools
import os
import re
import subprocess
import sys

TOPS = ("bench", "cli", "cmake", "compare", "docs", "examples", "fixtures", "fuzz", "include",
        "kernels_cpu", "oracle", "python", "records", "scripts", "tests", ".ci")
PATH = re.compile(r"(?<![\w./-])(?:%s)/[\w./{},*-]*[\w*}/]" % "|".join(re.escape(t) for t in TOPS))
LINK = re.compile(r"\]\(([^)\s]+)\)")
WRAPPED = re.compile(r"((?:%s)/[\w./{},*-]*[-/])\n\s*(?=[\w{])" % "|".join(re.escape(t) for t in TOPS))


def expand(path):
    """The paths a brace pattern names: a{b,c}d -> abd, acd."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def ignored(root, path):
    return subprocess.run(["git", "-C", root, "check-ignore", "-q", "--no-index", path]).returncode == 0


def exists(root, path):
    full = os.path.join(root, path)
    if "*" in path:
        return bool(glob.glob(full))
    return (os.path.exists(full) or bool(glob.glob(glob.escape(full) + ".*")) or ignored(root, path))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    # Of records/, the indexes only: a dated record describes the tree of its day, whose paths may
    # have moved since (git has them).
    files = ["README.md"] + sorted(glob.glob("docs/**/*.md", root_dir=root, recursive=True)) + \
        sorted(glob.glob("records/**/README.md", root_dir=root, recursive=True))
    missing = []
    for md in files:
        text = WRAPPED.sub(r"\1", open(os.path.join(root, md), encoding="utf-8").read())
        names = [m.group(0).rstrip(".") for m in PATH.finditer(text)]
        for m in LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if target and not re.match(r"[a-z]+:", target) and not target.startswith(TOPS):
                names.append(os.path.normpath(os.path.join(os.path.dirname(md), target)))
        for name in dict.fromkeys(names):
            for path in expand(name):
                if not exists(root, path):
                    missing.append(f"{md}: {path}")
    for line in missing:
        print(line)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
