#!/usr/bin/env python3
"""Keeps the checkable statements of docs/design.md true. Fails (exit 1),
naming the statement, when

- a path it names in backticks (src/, include/, tests/, scripts/, tools/,
  python/, bench/, fuzz/, examples/; `{a,b}` alternatives and `*` globs
  expanded) does not exist;
- its public-header list ("Public headers: ...") differs from the headers
  under include/gpt2lab/ (the generated version.h aside);
- a file in src/ is longer than the limit it states ("No file in `src/` is
  over N lines");
- a Python function in tools/ is longer than the limit it states ("no
  function in `tools/` is over N lines": from its first decorator or `def`
  to its last line, docstring and nested functions included);
- its layer order ("core < dist, model < ...") differs from the one
  scripts/check_layers.py enforces.

Run by scripts/test.sh.
"""
import ast
import glob
import importlib.util
import itertools
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ROOTS = ("src/", "include/", "tests/", "scripts/", "tools/", "python/", "bench/", "fuzz/", "examples/")


def expand(spec):
    """'a/{b,c}.{h,cpp}' -> every alternative."""
    parts = re.split(r"\{([^{}]*)\}", spec)
    options = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*options)]


def named_paths(text):
    for m in re.finditer(r"`([^`\s]+)`", text):
        spec = m.group(1).rstrip(".,;:")
        if spec.startswith(ROOTS) and not re.search(r"[<>$]", spec):
            yield text.count("\n", 0, m.start()) + 1, spec


def check_paths(text, bad):
    for line, spec in named_paths(text):
        for path in expand(spec):
            path = path.split(":")[0]  # src/x.cpp:12 names a line
            if not glob.glob(os.path.join(ROOT, path)):
                bad.append(f"design.md:{line}: `{spec}` names {path}, which does not exist")


def check_public_headers(text, bad):
    m = re.search(r"Public headers: (.*?)\s+and the generated `version.h`", text, re.S)
    if not m:
        bad.append("design.md: no 'Public headers: ... and the generated `version.h`' statement")
        return
    listed = set()
    for spec in re.findall(r"`([^`]+)`", m.group(1)):
        listed.update(expand(spec))
    base = os.path.join(ROOT, "include", "gpt2lab")
    actual = {os.path.relpath(p, base) for p in glob.glob(os.path.join(base, "*", "*.h"))}
    for h in sorted(actual - listed):
        bad.append(f"design.md: public header {h} is not in the 'Public headers' list")
    for h in sorted(listed - actual):
        bad.append(f"design.md: the 'Public headers' list names {h}, which is not under include/gpt2lab/")


def check_file_sizes(text, bad):
    m = re.search(r"No file in `src/`\s+is over (\d+) lines", text)
    if not m:
        bad.append("design.md: no 'No file in `src/` is over N lines' statement")
        return
    limit = int(m.group(1))
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.*"), recursive=True)):
        if path.endswith((".h", ".cpp")):
            with open(path, encoding="utf-8") as f:
                n = sum(1 for _ in f)
            if n > limit:
                bad.append(f"{os.path.relpath(path, ROOT)} has {n} lines; "
                           f"design.md says no file in src/ is over {limit}")


def function_sizes(path):
    """(name, first line, lines) of every function in a Python file, nested ones too."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, first, node.end_lineno - first + 1


def check_function_sizes(text, bad):
    m = re.search(r"[Nn]o\s+function\s+in\s+`tools/`\s+is\s+over\s+(\d+)\s+lines", text)
    if not m:
        bad.append("design.md: no 'no function in `tools/` is over N lines' statement")
        return
    limit = int(m.group(1))
    for path in sorted(glob.glob(os.path.join(ROOT, "tools", "**", "*.py"), recursive=True)):
        for name, line, n in function_sizes(path):
            if n > limit:
                bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {name} has {n} lines; "
                           f"design.md says no function in tools/ is over {limit}")


def check_layers(text, bad):
    m = re.search(r"^\s+(core < .*< cli)$", text, re.M)
    if not m:
        bad.append("design.md: no layer order line ('core < ... < cli')")
        return
    stated = {name.strip(): rank for rank, level in enumerate(m.group(1).split("<")) for name in level.split(",")}
    spec = importlib.util.spec_from_file_location("check_layers", os.path.join(ROOT, "scripts", "check_layers.py"))
    layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layers)
    if stated != layers.RANK:
        bad.append(f"design.md's layer order {m.group(1)!r} is not scripts/check_layers.py's RANK {layers.RANK}")


def main():
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as f:
        text = f.read()
    bad = []
    for check in (check_paths, check_public_headers, check_file_sizes, check_function_sizes, check_layers):
        check(text, bad)
    for b in bad:
        print("check_design: " + b, file=sys.stderr)
    if bad:
        return 1
    print("check_design: docs/design.md's paths, public headers, file and function sizes and layers hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
