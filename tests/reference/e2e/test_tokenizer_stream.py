"""`gpt2lab tokenize` streams: ids identical to tiktoken's
however the input is cut (the memory bound: test_tokenizer_stream_memory.py).

The input is read in blocks and cut only at exact cuts (see
src/tokenizer/stream_encoder.h): before a space or newline that follows
printable ASCII, and between two letters that no token contains together.
Checked here:
1. ids equal tiktoken 1.0.22 (npm, run with node) on long runs of letters
   with no white space (mixed case, lower case, a 4-letter alphabet, one
   repeated letter), and on a mixed text, with --chunk-bytes 64 so that
   every input is cut thousands of times;
2. --decode streamed gives back the bytes;
3. files as arguments: one line of ids per file, equal to each file on
   stdin; --decode of files writes their bytes in turn; a missing file or a
   folder is refused by name before anything is written.
The memory bound (a 32 MB line without white space under 300 MB of peak
memory) is test_tokenizer_stream_memory.py.

Skips (exit 77) like test_tokenizer_tiktoken.py: only when node or the
fetched data are missing and CI is not set.
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402
from shards import random_letters as letters  # noqa: E402

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
HELPER = os.path.join(harness.REFERENCE, "tiktoken_encode.js")
TIKTOKEN = os.path.join(DATA, "node_modules", "tiktoken")


def ours(path, *extra):
    with open(path, "rb") as f:
        r = harness.run("tokenize", *extra, stdin=f, text=False)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.split()


def check_files(tmp, cases):
    paths = []
    for i, text in enumerate(list(cases.values())[:3] + [b""]):
        paths.append(os.path.join(tmp, f"file{i}.txt"))
        open(paths[-1], "wb").write(text)
    r = harness.run("tokenize", "--chunk-bytes", "4096", *paths, text=False)
    lines = r.stdout.split(b"\n")
    expect(r.returncode == 0 and len(lines) == len(paths) + 1 and
           all(line.split() == ours(p, "--chunk-bytes", "4096") for line, p in zip(lines, paths)),
           f"{len(paths)} files (one empty): one line each, equal to the file on stdin")
    id_files = []
    for i, line in enumerate(lines[:-1]):
        id_files.append(os.path.join(tmp, f"ids{i}.txt"))
        open(id_files[-1], "wb").write(line)
    back = harness.run("tokenize", "--decode", *id_files, text=False)
    expect(back.returncode == 0 and back.stdout == b"".join(open(p, "rb").read() for p in paths),
           "--decode of the id files writes the files' bytes in turn")
    for bad, what in ((os.path.join(tmp, "missing.txt"), "cannot open"), (tmp, "is a folder")):
        r = harness.run("tokenize", paths[0], bad, text=False)
        err = r.stderr.decode()
        expect(r.returncode != 0 and r.stdout == b"" and what in err and bad in err,
               f"{what}: refused naming it, nothing written ({err.strip()[:80]})")
    open(id_files[0], "wb").write(b"12 x")
    r = harness.run("tokenize", "--decode", id_files[0], text=False)
    expect(r.returncode != 0 and id_files[0] + ", byte 3" in r.stderr.decode(),
           "a bad id in a file: the error names the file and the byte")


def main():
    if not shutil.which("node") or not os.path.exists(TIKTOKEN):
        if os.environ.get("CI"):
            raise SystemExit("node or tiktoken missing under CI (scripts/setup.sh installs both)")
        harness.skip("node or the fetched tiktoken package is missing")
    rng = np.random.default_rng(1)
    words = ["the", " and", " ", "  ", "\n", "\n\n", "'s", "'re", " don't", " éà", "日本語", " 123", "4.5", "!?", "\t",
             " x", "qz", "Zq", "<|endoftext|>"]
    mixed = "".join(words[i] for i in rng.integers(0, len(words), size=40000)).encode()
    cases = {
        "mixed-case letters": letters(60000, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 2),
        "lower-case letters": letters(60000, "abcdefghijklmnopqrstuvwxyz", 3),
        "acgt": letters(20000, "acgt", 4),
        "one letter": b"a" * 20000,
        "mixed text": mixed,
        "letters between lines": b"\n".join(letters(5000, "abcdefghijklmnopqrstuvwxyzXYZ", s) for s in range(10)),
    }
    with harness.scratch() as tmp:
        for name, text in cases.items():
            path = os.path.join(tmp, "in.txt")
            open(path, "wb").write(text)
            ref = harness.command(["node", HELPER, TIKTOKEN, "gpt2", "ordinary", path], check=True,
                                  text=False).stdout.split()
            for chunk in ("64", "4096"):
                got = ours(path, "--chunk-bytes", chunk)
                expect(got == ref, f"{name} ({len(text)} bytes), cut every ~{chunk} bytes: ids equal tiktoken's")
            ids = os.path.join(tmp, "ids.txt")
            open(ids, "wb").write(b" ".join(ref))
            with open(ids, "rb") as f:
                back = harness.run("tokenize", "--decode", stdin=f, text=False).stdout
            expect(back == text, f"{name}: --decode gives the bytes back")
        check_files(tmp, cases)
    harness.finish("streaming tokenizer")


if __name__ == "__main__":
    main()
