"""`gpt2lab tokenize` streams: memory bounded by its chunk size,
not by the input. A 32 MB line without white space (one pre-token for the
whole-input encoder, which took about 26 bytes per input byte, 830 MB) stays
under 300 MB of peak memory. The ids themselves are checked against tiktoken
by test_tokenizer_stream.py.

Skips under AddressSanitizer (ASAN_OPTIONS set, as scripts/sanitize.sh
does): ASan keeps freed memory in quarantine (256 MB) and maps shadow
memory, so peak RSS says nothing there.
"""
import os
import resource
import subprocess

import pytest

import harness
from shards import random_letters as letters


def test_long_line_without_white_space_has_bounded_memory(tmp_path):
    if os.environ.get("ASAN_OPTIONS"):
        pytest.skip("peak memory of a 32 MB line: not measurable under AddressSanitizer")
    path = os.path.join(tmp_path, "big.txt")
    with open(path, "wb") as f:
        for s in range(32):
            f.write(letters(1 << 20, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 100 + s))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(path, "rb") as f:
        r = harness.run("tokenize", "--threads", "2", stdin=f, stdout=subprocess.DEVNULL)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert r.returncode == 0 and peak_mb < 300, \
        (f"a 32 MB line without white space: peak RSS {peak_mb:.0f} MB (< 300; earlier children peaked at "
         f"{before / 1024:.0f} MB)")
