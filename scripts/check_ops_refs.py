#!/usr/bin/env python3
"""Checks that every citation of the op semantics, `docs/ops/<file>.md "<Heading>"` (more headings of the
same file may follow as `, "<Heading>"`), names a file of docs/ops/ and an exact `##`/`###` heading in it.
Inside docs/ops/ the short form `<file>.md "<Heading>"` is checked too. Outside records/ (history), no file
may point at the research notes the semantics were first written from (spec/ops.md,
reference-semantics.md), which are not in the repository. Prints each bad citation with its place;
exits 1 if there is any. Usage: python3 scripts/check_ops_refs.py [REPO_ROOT]"""
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ops = os.path.join(root, 'docs', 'ops')
heads = {}
for f in os.listdir(ops):
    if f.endswith('.md'):
        with open(os.path.join(ops, f), encoding='utf-8') as fh:
            heads[f] = {m.group(1).strip() for line in fh for m in [re.match(r'#{2,4} (.*)', line)] if m}

Q = r'\\?"'  # a quote, escaped inside JSON strings
cite = re.compile(r'(docs/ops/)?([A-Za-z-]+)\.md(?: ' + Q + r'([^"\\]+)' + Q + r'((?:, ' + Q + r'[^"\\]+' + Q + r')*))?')
listed = subprocess.run(['git', '-C', root, 'ls-files', '-co', '--exclude-standard'],
                        capture_output=True, text=True, check=True).stdout.split('\n')
OUTSIDE = re.compile(r'spec/ops\.md|reference-semantics(\.md)?\b')
bad = count = 0
for rel in filter(None, listed):
    try:
        with open(os.path.join(root, rel), encoding='utf-8') as fh:
            text = fh.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        continue
    in_ops = rel.startswith('docs/ops/')
    outside = not rel.startswith('records/') and rel != 'scripts/check_ops_refs.py'
    for n, line in enumerate(text.split('\n'), 1):
        if outside and OUTSIDE.search(line):
            print(f'{rel}:{n}: cites a document that is not in the repository: {line.strip()[:100]}'); bad += 1
        for m in cite.finditer(line):
            full = bool(m.group(1))
            if not full and not (in_ops and m.group(3)):
                continue
            f = m.group(2) + '.md'
            count += 1
            if f not in heads:
                print(f'{rel}:{n}: docs/ops/{f} does not exist'); bad += 1
                continue
            names = [m.group(3)] if m.group(3) else []
            names += re.findall(Q + r'([^"\\]+)' + Q, m.group(4) or '')
            for h in names:
                if h not in heads[f]:
                    print(f'{rel}:{n}: docs/ops/{f} has no heading "{h}"'); bad += 1
print(f'{count} citations, {bad} bad')
sys.exit(1 if bad else 0)
