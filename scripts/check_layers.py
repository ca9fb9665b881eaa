#!/usr/bin/env python3
"""Fails when a source file includes a header from a higher layer.

The library is layered so that each folder of src/ depends only on the ones
below it:

    core < dist, model < io < tokenizer < data < train, sample < translation < study, serve < cli

(dist and model are independent of each other, and so are train and
sample, and study and serve.) translation is the machine-translation case
(catalogs, pairs, datasets, greedy translation, BLEU and chrF): it builds on
data and sample, and the study and the command line use it. A layer's
public headers live in include/gpt2lab/<layer>/ and count as that layer.
An include of another folder at the same level, or above, is reported as
FILE:LINE and the script exits 1; so is a public header that includes a
private one (an installed header would not find it). The Python module (python/) is a consumer like the examples: it may
include public headers only. Run by scripts/test.sh.
"""
import os
import re
import sys

RANK = {"core": 0, "dist": 1, "model": 1, "io": 2, "tokenizer": 3, "data": 4, "train": 5, "sample": 5,
        "translation": 6, "study": 7, "serve": 7, "cli": 8}
ORDER = "core < dist, model < io < tokenizer < data < train, sample < translation < study, serve < cli"
INCLUDE = re.compile(r'^\s*#\s*include\s+"(gpt2lab/)?([a-z_]+)/')


def check_folder(folder, shown, layer, public, bad):
    for name in sorted(os.listdir(folder)):
        if not name.endswith((".h", ".cpp", ".inc")):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                if public and not m.group(1):
                    bad.append(f"{shown}/{name}:{n}: a public header includes a private one ({line.strip()})")
                    continue
                dep = m.group(2)
                if dep == layer:
                    continue
                if dep not in RANK or RANK[dep] >= RANK[layer]:
                    bad.append(f"{shown}/{name}:{n}: {layer} includes {dep}/ (layers: {ORDER})")


def main(root):
    bad = []
    for base, public in (("src", False), (os.path.join("include", "gpt2lab"), True)):
        top = os.path.join(root, base)
        for layer in sorted(os.listdir(top)):
            folder = os.path.join(top, layer)
            if not os.path.isdir(folder):
                continue
            if layer not in RANK:
                bad.append(f"{base}/{layer}/: a folder with no layer (add it to RANK in scripts/check_layers.py)")
                continue
            check_folder(folder, f"{base}/{layer}", layer, public, bad)
    python = os.path.join(root, "python")
    if os.path.isdir(python):
        for name in sorted(os.listdir(python)):
            if not name.endswith((".h", ".cpp")):
                continue
            with open(os.path.join(python, name), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and not m.group(1):
                        bad.append(f"python/{name}:{n}: the Python module includes a private header "
                                   f"({line.strip()}); add what it needs to include/gpt2lab/")
    for b in bad:
        print(b)
    print(f"check_layers: {len(bad)} include(s) against the layering")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
