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
- a C++ function in src/ is longer than the limit it states ("no function
  in `src/` is over N lines ... say so where they are ...: `a`, `b`"),
  unless it is one of the functions that sentence names and carries
  NOLINTNEXTLINE(readability-function-size); a named one is not long, or a
  marker stands before another function; or the limit is not .clang-tidy's
  LineThreshold. Measured from the line that opens the body to the line
  that closes it, for the definitions clang-format puts at the start of a
  line (functions at namespace scope; clang-tidy measures the others);
- its layer order ("core < dist, model < ...") differs from the one
  scripts/check_layers.py enforces (its RANK, and the order its docstring
  and messages print), or its table of folders names other layers than
  RANK, or a folder of src/ or include/gpt2lab/ is not in RANK;
- a name it gives in backticks as code (snake_case, CamelCase, A::b or
  f()) occurs in no source file, CMake file or script.

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
    if layers.ORDER != m.group(1) or layers.ORDER not in (layers.__doc__ or ""):
        bad.append(f"scripts/check_layers.py prints or documents another order than design.md's {m.group(1)!r}")
    table = set()
    folders = re.search(r"^\| folder \| what lives there \|\n((?:\|.*\n)+)", text, re.M)
    for row in re.findall(r"^\| ([^|]*) \|", folders.group(1) if folders else "", re.M):
        table.update(re.findall(r"`(\w+)`", row))
    if table != set(layers.RANK):
        bad.append(f"design.md's table of folders names {sorted(table)}, and RANK has {sorted(layers.RANK)}")
    for base in ("src", os.path.join("include", "gpt2lab")):
        for folder in sorted(os.listdir(os.path.join(ROOT, base))):
            if os.path.isdir(os.path.join(ROOT, base, folder)) and folder not in layers.RANK:
                bad.append(f"{base}/{folder}/ is not a layer of scripts/check_layers.py's RANK")


CPP_MARKER = "NOLINTNEXTLINE(readability-function-size)"


def cpp_functions(path):
    """(name, first line, body lines, marked) of each function defined at the
    start of a line in a clang-formatted C++ file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0] in " #/}" or line.startswith(("namespace", "extern")):
            i += 1
            continue
        start, text = i, line
        while not text.rstrip().endswith(("{", ";", "}")) and i + 1 < len(lines):
            i += 1
            text += " " + lines[i].strip()
        head = text.rstrip()
        paren = head.find("(")
        if head.endswith("{") and paren > 0 and "=" not in head[:paren] and ")" in head:
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            name = re.findall(r"[~\w:]+", head[:paren])[-1]
            marked = start > 0 and CPP_MARKER in lines[start - 1]
            yield name.split("::")[-1], start + 1, end - i + 1, marked
            i = end
        i += 1


def check_cpp_function_sizes(text, bad):
    m = re.search(r"no\s+function\s+in\s+`src/`\s+is\s+over\s+(\d+)\s+lines(.*?)\.\s", text, re.S)
    if not m:
        bad.append("design.md: no 'no function in `src/` is over N lines' statement")
        return
    limit = int(m.group(1))
    named = set(re.findall(r"`(\w+)`", m.group(2).split("):", 1)[-1]))
    with open(os.path.join(ROOT, ".clang-tidy"), encoding="utf-8") as f:
        tidy = re.search(r"LineThreshold\s*\n\s*value:\s*(\d+)", f.read())
    if not tidy or int(tidy.group(1)) != limit:
        bad.append(f"design.md's function limit ({limit} lines) is not .clang-tidy's LineThreshold")
    long_ones = set()
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.*"), recursive=True)):
        if not path.endswith((".h", ".cpp")):
            continue
        shown = os.path.relpath(path, ROOT)
        for name, line, n, marked in cpp_functions(path):
            if n > limit:
                long_ones.add(name)
                if name not in named or not marked:
                    bad.append(f"{shown}:{line}: {name} has {n} lines; design.md says no function in src/ is "
                               f"over {limit} but {', '.join(sorted(named))} (each marked {CPP_MARKER})")
            elif marked:
                bad.append(f"{shown}:{line}: {name} ({n} lines) is marked {CPP_MARKER} but is not long")
    for name in sorted(named - long_ones):
        bad.append(f"design.md names {name} as a function over {limit} lines, and none in src/ is")


def check_names(text, bad):
    names = set()
    for m in re.finditer(r"`([^`\s]+)`", text):
        code = re.fullmatch(r"([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)(\(\))?", m.group(1))
        if code and (code.group(2) or "::" in code.group(1) or "_" in code.group(1).strip("_")
                     or re.search(r"[a-z][A-Z]|^[A-Z][a-z]", code.group(1))):
            names.add((text.count("\n", 0, m.start()) + 1, code.group(1)))
    words = set()
    for pattern in ("src/**/*.*", "include/**/*.h", "python/**/*.*", "tools/**/*.py", "tests/**/*.*",
                    "bench/**/*.*", "fuzz/**/*.*", "scripts/*", "cmake/*", "**/CMakeLists.txt"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            if os.path.isfile(path) and not path.startswith(os.path.join(ROOT, "build")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    words.update(re.findall(r"\w+", f.read()))
    for line, name in sorted(names):
        if name.split("::")[-1] not in words:
            bad.append(f"design.md:{line}: `{name}` is named as code, and no source file has it")


def main():
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as f:
        text = f.read()
    bad = []
    for check in (check_paths, check_public_headers, check_file_sizes, check_function_sizes,
                  check_cpp_function_sizes, check_layers, check_names):
        check(text, bad)
    for b in bad:
        print("check_design: " + b, file=sys.stderr)
    if bad:
        return 1
    print("check_design: docs/design.md's paths, public headers, file and function sizes, layers and names hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
