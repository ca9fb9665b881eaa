"""`gpt2lab serve` against hostile and careless clients (reliability, round
three). Every check is about what comes back, over raw sockets where the
framing matters, never about how long it took; each read has a hang guard.

1. --api-key '' (what --api-key "$KEY" gives with KEY unset), blank keys and
   keys a header cannot carry are refused at start.
2. Range is ignored: /health, /metrics, completions (plain and streamed),
   401 and 404 come back whole, 200 and JSON, with one range or hundreds.
3. Every refusal is an HTTP reply with OpenAI's error JSON, sent at once:
   bodies over the limit by their length or after gzip, unknown or garbled
   codings, a bad chunk size, multipart bodies, negative and 20-digit
   Content-Length, a POST with no length, Expect: 100-continue over the limit, a bad request line,
   a long URI, headers over their cap, a malformed Range.
4. Prompts that cannot fit the context are refused before they are
   tokenized, and /tokenize and /detokenize take bounded inputs: a few
   1 MB prompts leave the server's peak memory (VmHWM) near where it was.
5. Clients that send a request a byte at a time, or stop halfway, are cut
   off by --request-timeout with a 408 even when --timeout (each read) is
   long, and /health is answered while more of them than there are
   connection threads wait.
6. top_p 1e-300 is refused as sent (below `sample --top-p`'s 1e-06, not
   "got 0"); temperature 1e39 is refused naming 1e+39, not inf.

Skips only when data/gpt2 (GPT-2's tokenizer) is missing and CI is not set.
"""
import gzip
import json
import os
import random
import socket
import subprocess
import threading
import zlib

import pytest

import harness
import serve_util

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
KEY = "hostile-key"
GUARD = 40  # seconds a read may wait before the check counts it as a hang


def exchange(port, data, guard=GUARD, shut=False):
    """Sends `data` on a new connection and reads until the server closes
    it; returns (status, headers with lower-case names, body bytes, raw) or
    status None when nothing (or no reply) came back before `guard`."""
    s = socket.create_connection(("127.0.0.1", port), timeout=guard)
    got = b""
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError, BrokenPipeError) as e:
        got += f"<{type(e).__name__}>".encode()
    finally:
        s.close()
    return parse(got)


def parse(raw):
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    if not sep or not lines[0].startswith(b"HTTP/1.1 "):
        return None, {}, b"", raw
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.decode().strip().lower()] = value.decode().strip()
    if "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return int(lines[0].split()[1]), headers, body, raw


def error_of(body):
    """The error object of OpenAI's error JSON in `body`, else None."""
    try:
        e = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return None
    ok = isinstance(e, dict) and set(e) == {"message", "type", "param", "code"} and e["message"]
    return e if ok else None


def request(method, path, headers=(), body=b"", key=KEY):
    lines = [f"{method} {path} HTTP/1.1", "Host: x", *(["Authorization: Bearer " + key] if key else []), *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def expect_error(got, status, what, message=None):
    st, headers, body, raw = got
    e = error_of(body)
    assert (st == status and headers.get("content-type") == "application/json" and e is not None and
            (message is None or message in e["message"])), \
        f"{what}: {status} with OpenAI's error JSON (got {st}, {raw[:160]!r})"


def start(model, key):
    """`serve --api-key KEY`: its CompletedProcess, or None when it was still
    serving after 30 s (and was killed)."""
    try:
        return harness.run("serve", "--model", model, "--port", "0", "--quiet", "--api-key", key, timeout=30)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    if not os.path.exists(os.path.join(DATA, "gpt2")):
        if os.environ.get("CI"):
            pytest.fail("data/gpt2 missing under CI (scripts/setup.sh fetches it)")
        pytest.skip("data/gpt2 (GPT-2's tokenizer) is missing")
    model = str(tmp_path_factory.mktemp("tiny") / "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    return model


@pytest.fixture(scope="module")
def srv(model):
    with serve_util.Server(model, "--threads", "1", "--api-key", KEY, "--max-body", "65536", "--timeout", "600",
                           log=os.path.join(os.path.dirname(model), "serve.log")) as srv:
        yield srv


@pytest.mark.parametrize("key,what", [("", "an empty key"), ("   ", "a blank key"), ("a b", "a key with a space"),
                                      ("k\x01", "a key with a control character"), ("kéy", "a non-ASCII key")])
def test_bad_api_key_is_refused_at_start(model, key, what):
    r = start(model, key)
    assert r is not None and r.returncode != 0 and "--api-key" in r.stderr and "listening" not in r.stdout, \
        f"--api-key {key!r} ({what}) is refused at start ({r and r.stderr.strip()[-120:]!r})"
    if key == "":
        assert r is not None and "--api-key is empty" in r.stderr, "the empty key's message says it is empty"


RANGE_CASES = [("GET", "/health", None, b"", 200), ("GET", "/metrics", KEY, b"", 200),
               ("GET", "/v1/models", None, b"", 401), ("GET", "/nowhere", KEY, b"", 404),
               ("POST", "/v1/completions", KEY, b'{"prompt": "Hello", "max_tokens": 8, "seed": 3}', 200),
               ("POST", "/v1/completions", KEY, b'{"prompt": "Hello", "max_tokens": 8, "seed": 3, "stream": true}',
                200)]


@pytest.mark.parametrize("method,path,key,body,status", RANGE_CASES,
                         ids=[f"{c[0]}-{c[1]}" + ("-stream" if b"stream" in c[3] else "") for c in RANGE_CASES])
def test_range_is_ignored(srv, method, path, key, body, status):
    multi = "bytes=" + ",".join(["0-"] * 900)
    plain = exchange(srv.port, request(method, path, ["Connection: close", f"Content-Length: {len(body)}"],
                                       body, key))
    for rng in ("bytes=0-20", "bytes=5-", multi):
        st, headers, got, raw = exchange(srv.port, request(
            method, path, ["Connection: close", f"Range: {rng}", f"Content-Length: {len(body)}"], body, key))
        whole = "content-range" not in headers and "multipart" not in headers.get("content-type", "")
        try:
            same = same_body(path, body, got, plain[2])
        except (ValueError, KeyError, TypeError):
            same = False
        assert st == status and whole and same, \
            f"{method} {path} with Range {rng[:12]}...: {status}, whole (got {st}, {raw[:120]!r})"


def test_malformed_range_gets_416(srv):
    expect_error(exchange(srv.port, request("GET", "/health", ["Range: bytes=abc"])), 416, "a malformed Range")


def same_body(path, body, got, plain):
    """Whether `got` is the whole response `plain` was (up to what changes between requests)."""
    if path == "/metrics":
        return got.startswith(b"# ") and len(got) < 2 * len(plain) + 1000
    if b'"stream": true' in body:
        return got.count(b"data: ") == plain.count(b"data: ") and got.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    if path == "/v1/completions":
        return json.loads(got)["choices"] == json.loads(plain)["choices"]
    return got == plain and json.loads(got) is not None


def post(*h, body=b"", key=KEY):
    return request("POST", "/v1/completions", h, body, key)


def test_bodies_over_the_limit_get_413(srv):
    big = b'{"prompt": "' + b"a" * 3_000_000 + b'"}'
    expect_error(exchange(srv.port, post(f"Content-Length: {len(big)}", body=big)), 413,
                 "a 3 MB body with its Content-Length")
    expect_error(exchange(srv.port, post("Content-Length: 999999999999999999")), 413,
                 "an 18-digit Content-Length, no body sent")
    bomb = gzip.compress(b'{"prompt": "' + b"a" * 3_000_000 + b'"}')
    expect_error(exchange(srv.port, post("Content-Encoding: gzip", f"Content-Length: {len(bomb)}", body=bomb)), 413,
                 "gzip that inflates past the limit")


def test_content_encodings(srv):
    raw_deflate = zlib.compressobj(wbits=-15)
    deflated = raw_deflate.compress(b'{"prompt": "x"}') + raw_deflate.flush()
    expect_error(exchange(srv.port, post("Content-Encoding: deflate", f"Content-Length: {len(deflated)}",
                                         body=deflated)), 400, "raw deflate under Content-Encoding: deflate")
    ok = zlib.compress(b'{"prompt": "x", "max_tokens": 2}')
    st, _, body, _ = exchange(srv.port, post("Connection: close", "Content-Encoding: deflate",
                                             f"Content-Length: {len(ok)}", body=ok))
    assert st == 200 and json.loads(body)["choices"], f"zlib deflate is read ({st})"
    expect_error(exchange(srv.port, post("Content-Encoding: compress", "Content-Length: 2", body=b"{}")), 415,
                 "Content-Encoding: compress")
    garbled = b"\x1f\x8b\x08\x00" + bytes(random.Random(1).randrange(256) for _ in range(200))
    expect_error(exchange(srv.port, post("Content-Encoding: gzip", f"Content-Length: {len(garbled)}", body=garbled)),
                 400, "garbled gzip")


def test_bad_chunk_size_gets_400(srv):
    expect_error(exchange(srv.port, post("Transfer-Encoding: chunked", body=b"zz\r\n{}\r\n0\r\n\r\n")), 400,
                 "a bad chunk size")


def test_multipart_bodies_get_415(srv):
    expect_error(exchange(srv.port, post("Content-Type: multipart/form-data", "Content-Length: 2", body=b"{}")), 415,
                 "multipart without a boundary")
    form = b"--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi\r\n--b--\r\n"
    expect_error(exchange(srv.port, post("Content-Type: multipart/form-data; boundary=b",
                                         f"Content-Length: {len(form)}", body=form)), 415, "multipart with a boundary")


def test_bad_lengths_and_framing_are_refused(srv):
    for cl in ("-5", "99999999999999999999", "12abc", "+5"):
        expect_error(exchange(srv.port, post(f"Content-Length: {cl}")), 400, f"Content-Length: {cl}, no body sent")
    expect_error(exchange(srv.port, post()), 411, "a POST with neither Content-Length nor chunked")
    expect_error(exchange(srv.port, post("Content-Length: 2", "Content-Length: 3", body=b"{}")), 400,
                 "two Content-Lengths")
    expect_error(exchange(srv.port, post("Content-Length: 7", "Transfer-Encoding: chunked", body=b"0\r\n\r\n")), 400,
                 "Content-Length and chunked")
    expect_error(exchange(srv.port, post("Transfer-Encoding: gzip", body=b"{}"), shut=True), 501,
                 "Transfer-Encoding: gzip")


def test_expect_100_continue_over_the_limit_gets_413(srv):
    st, headers, body, raw = exchange(srv.port, post("Content-Length: 5000000", "Expect: 100-continue"))
    assert not raw.startswith(b"HTTP/1.1 100") and st == 413 and error_of(body), \
        f"Expect: 100-continue over the limit: 413 without 100 Continue ({raw[:40]!r})"


def test_bad_request_lines_and_headers_are_refused(srv):
    expect_error(exchange(srv.port, b"GARBAGE\r\n\r\n"), 400, "a malformed request line")
    expect_error(exchange(srv.port, request("GET", "/health?" + "a" * 9000)), 414, "a URI over 8192 bytes")
    expect_error(exchange(srv.port, request("GET", "/health", [f"X-{i}: " + "v" * 1000 for i in range(100)])), 431,
                 "100 KB of headers")
    expect_error(exchange(srv.port, request("POST", "/health", ["Content-Length: 2"], b"{}")), 405, "POST /health")


def test_get_with_a_body_is_answered_and_closed(srv):
    st, headers, body, _ = exchange(srv.port, request("GET", "/health", ["Content-Length: 5"], b"hello"))
    assert st == 200 and headers.get("connection") == "close" and json.loads(body) == {"status": "ok"}, \
        f"a GET with a body is answered and the connection closed ({st}, {headers})"


def test_server_still_serves_after_the_refusals(srv):
    status, _, got = srv.request("GET", "/health")
    assert status == 200, "after all that the server still serves"


def tokenize_text(n, seed):
    """n bytes of words that rarely repeat (so that no cache shortens the work)."""
    rnd = random.Random(seed)
    words = []
    size = 0
    while size < n:
        w = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randrange(2, 9)))
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:n]


def vm_hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    pytest.fail("no VmHWM in /proc")


def test_big_inputs_are_refused_with_bounded_memory(model, tmp):
    # --max-requests 1: 5 connection threads, each with its allocator arena.
    with serve_util.Server(model, "--threads", "1", "--api-key", KEY, "--max-body", str(4 << 20), "--max-requests",
                           "1", log=os.path.join(tmp, "big.log")) as srv:
        status, _, got = srv.request("POST", "/tokenize", {"content": tokenize_text(200_000, 0)}, key=KEY)
        assert status == 200 and len(got["tokens"]) > 10_000, "/tokenize takes 200 KB"
        before = vm_hwm_kb(srv.proc.pid)
        for i in range(4):
            text = tokenize_text(1_000_000, i + 1)
            status, _, got = srv.request("POST", "/v1/completions", {"prompt": text, "max_tokens": 4}, key=KEY)
            assert (status == 400 and error_of(json.dumps(got)) and got["error"]["code"] == "context_length_exceeded"
                    and "at least" in got["error"]["message"]), \
                f"a 1 MB prompt: 400 context_length_exceeded ({status})"
            status, _, got = srv.request("POST", "/v1/completions", {"prompt": [text], "n": 1}, key=KEY)
            assert status == 400 and got["error"]["code"] == "context_length_exceeded", "a 1 MB prompt in a list"
            status, _, got = srv.request("POST", "/tokenize", {"content": text}, key=KEY)
            assert status == 400 and got["error"]["param"] == "content", f"/tokenize of 1 MB: 400 ({status})"
        status, _, got = srv.request("POST", "/v1/completions", {"prompt": [[1] * 500], "max_tokens": 4}, key=KEY)
        assert status == 400 and got["error"]["code"] == "context_length_exceeded", "500 ids in a 64-token context"
        status, _, got = srv.request("POST", "/detokenize", {"tokens": [1] * 300_000}, key=KEY)
        assert status == 400 and got["error"]["param"] == "tokens", f"/detokenize of 300,000 ids: 400 ({status})"
        status, _, got = srv.request("POST", "/v1/completions", {"prompt": ["a"] * 100_000}, key=KEY)
        assert status == 400 and "choices" in got["error"]["message"], "100,000 prompts: refused by count"
        grown = (vm_hwm_kb(srv.proc.pid) - before) / 1024
        # A 1 MB body is held twice while it is read (its text, then JSON),
        # and each thread's allocator keeps some; tokenizing 1 MB took 60.
        assert grown < 100, f"peak memory grew {grown:.0f} MB over 12 one-megabyte requests (bound 100)"


def test_stalled_clients_are_cut_off_by_the_request_timeout(model, tmp):
    """--max-requests 1: 5 connection threads. 9 clients that stall, in each
    part of a request, outnumber them; --timeout 600 leaves only the
    request deadline (2 s) to cut them off."""
    with serve_util.Server(model, "--threads", "1", "--max-requests", "1", "--timeout", "600", "--request-timeout",
                           "2", log=os.path.join(tmp, "slow.log")) as srv:
        stalls = [b"G", b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ",
                  b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"content\": "] * 3
        socks = []
        for data in stalls:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=GUARD)
            s.sendall(data)
            socks.append(s)
        try:
            status, _, _ = srv.request("GET", "/health", timeout=GUARD)
        except (socket.timeout, ConnectionError) as e:
            status = type(e).__name__
        assert status == 200, f"/health answered while 9 stalled requests outnumber the 5 connection threads ({status})"
        results = [None] * len(socks)

        def drain(i):
            got = b""
            try:
                while chunk := socks[i].recv(65536):
                    got += chunk
            except (socket.timeout, ConnectionResetError) as e:
                got += f"<{type(e).__name__}>".encode()
            results[i] = parse(got)

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(socks))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for data, got in zip(stalls, results):
            expect_error(got, 408, f"a request stalled after {data[-14:]!r}", "--request-timeout")
        for s in socks:
            s.close()


def test_tiny_top_p_is_refused_as_sent(srv):
    status, _, got = srv.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2, "top_p": 1e-300,
                                                             "seed": 1}, key=KEY)
    msg = got["error"]["message"] if status == 400 else ""
    assert status == 400 and msg.startswith("top_p = 1e-300 is out of range: it must be a finite number >= 1e-06"), \
        f"top_p 1e-300 is below 1e-06: refused as sent ({status} {got})"


def test_huge_temperature_is_named_not_inf(srv):
    status, _, got = srv.request("POST", "/v1/completions", {"prompt": "Hi", "temperature": 1e39}, key=KEY)
    msg = got["error"]["message"] if status == 400 else ""
    assert status == 400 and "1e+39" in msg and "got inf" not in msg, f"temperature 1e39: the message names it ({msg})"


def test_sample_names_a_huge_temperature(model):
    r = harness.run("sample", "--model", model, "--prompt", "Hi", "--temperature", "1e39", timeout=60)
    assert r.returncode != 0 and "1e+39" in r.stderr and "inf" not in r.stderr, \
        f"sample --temperature 1e39 is refused naming it ({r.stderr.strip()[-100:]!r})"
