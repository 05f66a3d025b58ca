#!/usr/bin/env python3
"""Flags any change between REV and the working tree (or REV2) in .c/.cpp/.h/.comp/.py files that is not
in a comment (C family: // and /* */, string literals kept; Python: # comments and docstrings). A .comp
file must also keep its line count and the code part of every line (mutation claims name line:column
sites). Other files are listed as not checked. Exits 1 on any flagged change.
Usage: python3 scripts/check_comment_only.py REPO [REV (default HEAD)] [REV2 (default: the working tree)]"""
import ast, re, subprocess, sys

repo = sys.argv[1]; rev = sys.argv[2] if len(sys.argv) > 2 else 'HEAD'; rev2 = sys.argv[3] if len(sys.argv) > 3 else None

def git(*a):
    return subprocess.run(['git', '-C', repo, *a], capture_output=True, text=True, check=True).stdout

def c_strip(src):
    """Code tokens of a C-family source with comments removed (strings kept verbatim)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); i = n if j < 0 else j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2); i = n if j < 0 else j + 2; out.append(' ')
        elif c == 'R' and src.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', src[i:]); d = m.group(1); j = src.find(')' + d + '"', i); j = n if j < 0 else j + len(d) + 2
            out.append(src[i:j]); i = j
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            out.append(src[i:j + 1]); i = j + 1
        else:
            out.append(c); i += 1
    return re.sub(r'\s+', ' ', ''.join(out)).strip()

def code_part(line):
    # GLSL: no string literals; the code part of a line is what precedes //
    return line.split('//', 1)[0].rstrip()

def py_norm(src):
    t = ast.parse(src)
    for node in ast.walk(t):
        body = getattr(node, 'body', None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], 'value', None), ast.Constant) and isinstance(body[0].value.value, str):
            body[0].value.value = '<doc>'
    return ast.dump(t)

def content(path, r):
    if r is None:
        return open(f'{repo}/{path}', encoding='utf-8').read()
    return git('show', f'{r}:{path}')

files = git('diff', '--name-only', rev, *( [rev2] if rev2 else [] )).split()
bad = 0
for f in files:
    try:
        old = content(f, rev); new = content(f, rev2)
    except subprocess.CalledProcessError:
        continue  # added or removed file
    except FileNotFoundError:
        continue
    if f.endswith('.comp'):
        ol, nl = old.split('\n'), new.split('\n')
        if len(ol) != len(nl):
            print(f'{f}: line count {len(ol)} -> {len(nl)}'); bad += 1; continue
        for k, (a, b) in enumerate(zip(ol, nl), 1):
            if a != b and code_part(a) != code_part(b):
                print(f'{f}:{k}: code part changed'); bad += 1
    elif f.endswith(('.cpp', '.h', '.c', '.hpp', '.cc')):
        if c_strip(old) != c_strip(new):
            print(f'{f}: non-comment change'); bad += 1
    elif f.endswith('.py'):
        if py_norm(old) != py_norm(new):
            print(f'{f}: non-comment/docstring change'); bad += 1
    else:
        print(f'{f}: not a source file (docs/data), not checked')
print('non-comment changes:', bad)
sys.exit(1 if bad else 0)
