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

Skips like test_tokenizer_tiktoken.py: only when node or the
fetched data are missing and CI is not set.
"""
import os
import shutil

import numpy as np

import pytest

import harness
from shards import random_letters as letters

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
HELPER = os.path.join(harness.REFERENCE, "tiktoken_encode.js")
TIKTOKEN = os.path.join(DATA, "node_modules", "tiktoken")


def ours(path, *extra):
    with open(path, "rb") as f:
        r = harness.run("tokenize", *extra, stdin=f, text=False)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.split()


def _cases():
    rng = np.random.default_rng(1)
    words = ["the", " and", " ", "  ", "\n", "\n\n", "'s", "'re", " don't", " éà", "日本語", " 123", "4.5", "!?", "\t",
             " x", "qz", "Zq", "<|endoftext|>"]
    mixed = "".join(words[i] for i in rng.integers(0, len(words), size=40000)).encode()
    return {
        "mixed-case letters": letters(60000, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 2),
        "lower-case letters": letters(60000, "abcdefghijklmnopqrstuvwxyz", 3),
        "acgt": letters(20000, "acgt", 4),
        "one letter": b"a" * 20000,
        "mixed text": mixed,
        "letters between lines": b"\n".join(letters(5000, "abcdefghijklmnopqrstuvwxyzXYZ", s) for s in range(10)),
    }


CASES = _cases()


@pytest.fixture(scope="module", autouse=True)
def tiktoken():
    if not shutil.which("node") or not os.path.exists(TIKTOKEN):
        if os.environ.get("CI"):
            pytest.fail("node or tiktoken missing under CI (scripts/setup.sh installs both)")
        pytest.skip("node or the fetched tiktoken package is missing")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A function: case name -> (its input file, tiktoken's ids), each computed once."""
    tmp = tmp_path_factory.mktemp("reference")
    done = {}

    def get(name):
        if name not in done:
            path = os.path.join(tmp, name.replace(" ", "-") + ".txt")
            open(path, "wb").write(CASES[name])
            ref = harness.command(["node", HELPER, TIKTOKEN, "gpt2", "ordinary", path], check=True,
                                  text=False).stdout.split()
            done[name] = path, ref
        return done[name]
    return get


@pytest.mark.parametrize("chunk", ["64", "4096"])
@pytest.mark.parametrize("name", list(CASES))
def test_ids_equal_tiktoken_however_cut(reference, name, chunk):
    path, ref = reference(name)
    got = ours(path, "--chunk-bytes", chunk)
    assert got == ref, f"{name} ({len(CASES[name])} bytes), cut every ~{chunk} bytes: ids equal tiktoken's"


@pytest.mark.parametrize("name", list(CASES))
def test_decode_gives_the_bytes_back(reference, tmp_path, name):
    _, ref = reference(name)
    ids = os.path.join(tmp_path, "ids.txt")
    open(ids, "wb").write(b" ".join(ref))
    with open(ids, "rb") as f:
        back = harness.run("tokenize", "--decode", stdin=f, text=False).stdout
    assert back == CASES[name], f"{name}: --decode gives the bytes back"


@pytest.fixture
def files(tmp_path):
    """(three cases and an empty file as files, `tokenize` of them all)."""
    paths = []
    for i, text in enumerate(list(CASES.values())[:3] + [b""]):
        paths.append(os.path.join(tmp_path, f"file{i}.txt"))
        open(paths[-1], "wb").write(text)
    return paths, harness.run("tokenize", "--chunk-bytes", "4096", *paths, text=False)


def id_files_of(tmp_path, r):
    id_files = []
    for i, line in enumerate(r.stdout.split(b"\n")[:-1]):
        id_files.append(os.path.join(tmp_path, f"ids{i}.txt"))
        open(id_files[-1], "wb").write(line)
    return id_files


def test_files_give_one_line_each(files):
    paths, r = files
    lines = r.stdout.split(b"\n")
    assert (r.returncode == 0 and len(lines) == len(paths) + 1 and
            all(line.split() == ours(p, "--chunk-bytes", "4096") for line, p in zip(lines, paths))), \
        f"{len(paths)} files (one empty): one line each, equal to the file on stdin"


def test_decode_of_files_writes_their_bytes_in_turn(files, tmp_path):
    paths, r = files
    back = harness.run("tokenize", "--decode", *id_files_of(tmp_path, r), text=False)
    assert back.returncode == 0 and back.stdout == b"".join(open(p, "rb").read() for p in paths), \
        "--decode of the id files writes the files' bytes in turn"


@pytest.mark.parametrize("bad,what", [("missing.txt", "cannot open"), ("", "is a folder")])
def test_bad_file_is_refused_by_name(files, tmp_path, bad, what):
    paths, _ = files
    bad = os.path.join(tmp_path, bad) if bad else str(tmp_path)
    r = harness.run("tokenize", paths[0], bad, text=False)
    err = r.stderr.decode()
    assert r.returncode != 0 and r.stdout == b"" and what in err and bad in err, \
        f"{what}: refused naming it, nothing written ({err.strip()[:80]})"


def test_bad_id_in_a_file_names_the_file_and_byte(files, tmp_path):
    id_files = id_files_of(tmp_path, files[1])
    open(id_files[0], "wb").write(b"12 x")
    r = harness.run("tokenize", "--decode", id_files[0], text=False)
    assert r.returncode != 0 and id_files[0] + ", byte 3" in r.stderr.decode(), \
        "a bad id in a file: the error names the file and the byte"
