#!/usr/bin/env python3
"""Fails when a source file includes a header from a higher layer.

The library is layered so that each folder of src/ depends only on the ones
below it:

    core < dist, model < io < tokenizer < data < train, sample < study < cli

(dist and model are independent of each other, and so are train and
sample.) An include of another folder at the same level, or above, is
reported as FILE:LINE and the script exits 1. Run by scripts/test.sh.
"""
import os
import re
import sys

RANK = {"core": 0, "dist": 1, "model": 1, "io": 2, "tokenizer": 3, "data": 4, "train": 5, "sample": 5,
        "study": 6, "cli": 7}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main(root):
    src = os.path.join(root, "src")
    bad = []
    for layer in sorted(os.listdir(src)):
        folder = os.path.join(src, layer)
        if not os.path.isdir(folder):
            continue
        if layer not in RANK:
            bad.append(f"src/{layer}/: a folder with no layer (add it to RANK in scripts/check_layers.py)")
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".h", ".cpp", ".inc")):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or m.group(1) == layer:
                        continue
                    dep = m.group(1)
                    if dep not in RANK or RANK[dep] >= RANK[layer]:
                        bad.append(f"src/{layer}/{name}:{n}: {layer} includes {dep}/ (layers: "
                                   "core < dist, model < io < tokenizer < data < train, sample < study < cli)")
    for b in bad:
        print(b)
    print(f"check_layers: {len(bad)} include(s) against the layering")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
