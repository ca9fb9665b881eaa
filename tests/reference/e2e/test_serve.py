"""`gpt2lab serve` with a client nobody here wrote: OpenAI's own
Node package (`openai`, pinned in scripts/fetch_data.sh).

1. completions.create, without and with stream: true, give exactly the text
   `gpt2lab sample` prints for the same seed (n > 1: seed, seed+1, ...),
   with a stop string too; the stream ends with `data: [DONE]`; logprobs
   cover every drawn token and greedy picks the most likely one;
   models.list, /health, /tokenize and /detokenize answer.
2. Hostile requests get 4xx in OpenAI's error shape and the server keeps
   serving: bad JSON, deep nesting, invalid UTF-8, wrong types,
   negative/huge numbers, a prompt over the context, bodies over the limit
   (plain, chunked, gzip), unknown paths and methods, a missing or wrong
   key, a partial request left hanging (closed after --timeout), a client
   that hangs up mid-stream.
3. A client that hangs up stops its generation early, streamed or not:
   /metrics (Prometheus text) counts it cancelled after a few of its
   max_tokens, and counts a finished request's tokens exactly.
4. SIGTERM stops it cleanly (exit 0).

A tiny random model (1 layer, C 32, GPT-2's tokenizer) keeps it fast.
Skips only when node, the tokenizer or the openai package is missing
and CI is not set.
"""
import gzip
import json
import os
import shutil
import signal
import socket
import time

import pytest

import harness
import serve_util

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
OPENAI = os.path.join(DATA, "node_modules", "openai")
CLIENT = os.path.join(harness.REFERENCE, "openai_client.js")
KEY = "test-key-123"
PROMPT = "The economy"


def sample(model, seed, max_tokens, *flags):
    """The continuation `gpt2lab sample` prints (prompt and end of text cut)."""
    r = harness.run("sample", "--model", model, "--prompt", PROMPT, "--seed", str(seed), "--max-new-tokens",
                    str(max_tokens), "--threads", "1", "--stop-at-eot", "--quiet", *flags, check=True)
    text = r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout
    assert text.startswith(PROMPT), text
    text = text[len(PROMPT):]
    return text[:-len("<|endoftext|>")] if text.endswith("<|endoftext|>") else text


def client(srv, tmp, requests, key=KEY):
    path = os.path.join(tmp, "requests.json")
    with open(path, "w") as f:
        json.dump(requests, f)
    r = harness.command(["node", CLIENT, OPENAI, srv.url + "/v1", key, path], check=True, timeout=300)
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    if not shutil.which("node") or not os.path.exists(OPENAI) or not os.path.exists(os.path.join(DATA, "gpt2")):
        if os.environ.get("CI"):
            pytest.fail("node, data/gpt2 or the openai package missing under CI (scripts/setup.sh fetches them)")
        pytest.skip("node, data/gpt2 or the fetched openai package is missing")
    model = str(tmp_path_factory.mktemp("tiny") / "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    return model


@pytest.fixture(scope="module")
def srv(model, request):
    """The server every case but the cancellation one talks to; its log is
    printed when a case failed."""
    log = os.path.join(os.path.dirname(model), "serve.log")
    failed = request.session.testsfailed
    with serve_util.Server(model, "--threads", "1", "--api-key", KEY, "--max-body", "65536", "--timeout", "2",
                           log=log) as srv:
        yield srv
    if request.session.testsfailed > failed:
        print(open(log).read()[-3000:])


BASE = {"model": "tiny", "prompt": PROMPT, "max_tokens": 24, "temperature": 0.9, "top_k": 50, "seed": 7}


@pytest.fixture(scope="module")
def answers(srv, model, tmp_path_factory):
    """The openai client's answers to completions (plain, streamed, n=2 both
    ways, greedy with logprobs) and models.list."""
    return client(srv, str(tmp_path_factory.mktemp("client")), [
        {"kind": "create", "params": BASE},
        {"kind": "stream", "params": BASE},
        {"kind": "create", "params": {**BASE, "n": 2, "seed": 11}},
        {"kind": "stream", "params": {**BASE, "n": 2, "seed": 11, "stream_options": {"include_usage": True}}},
        {"kind": "create", "params": {**BASE, "temperature": 0, "logprobs": 2, "max_tokens": 8}},
        {"kind": "models"},
    ])


@pytest.fixture(scope="module")
def want(model):
    return sample(model, 7, 24, "--temperature", "0.9", "--top-k", "50")


def test_create_equals_sample(answers, want):
    assert answers[0]["choices"][0]["text"] == want, \
        f"completions.create equals gpt2lab sample for seed 7 ({want!r})"


def test_stream_gives_the_same_text(answers, want):
    assert answers[1]["choices"][0]["text"] == want, "stream: true gives the same text"


def test_stream_comes_in_chunks(answers):
    assert answers[1]["chunks"] > 2, f"the text came in chunks ({answers[1]['chunks']})"


def test_usage_and_object(answers):
    one = answers[0]
    assert one["usage"]["completion_tokens"] <= 24 and one["object"] == "text_completion", "usage and object"


@pytest.mark.parametrize("i,seed", [(0, 11), (1, 12)])
def test_n_choices_equal_sample_with_successive_seeds(answers, model, i, seed):
    w = sample(model, seed, 24, "--temperature", "0.9", "--top-k", "50")
    assert answers[2]["choices"][i]["text"] == w, f"n=2: choice {i} equals sample --seed {seed}"
    assert answers[3]["choices"][i]["text"] == w, f"n=2 streamed: choice {i} equals sample --seed {seed}"


def test_stream_include_usage_gives_the_same_usage(answers):
    two, two_streamed = answers[2], answers[3]
    assert (two_streamed["usage"] and two_streamed["usage"]["completion_tokens"] ==
            two["usage"]["completion_tokens"]), "stream_options.include_usage gives the same usage"


def test_logprobs_cover_every_token(answers):
    greedy = answers[4]
    lp = greedy["choices"][0]["logprobs"]
    n = greedy["usage"]["completion_tokens"]
    assert len(lp["tokens"]) == n and len(lp["token_logprobs"]) == n and len(lp["top_logprobs"]) == n, \
        f"logprobs for each of the {n} tokens"


def test_greedy_picks_the_most_likely_token(answers):
    lp = answers[4]["choices"][0]["logprobs"]
    assert all(x <= 0 and abs(x - max(t.values())) < 1e-9 for x, t in zip(lp["token_logprobs"], lp["top_logprobs"])), \
        "greedy: each chosen token is the most likely, its logprob <= 0"


def test_greedy_equals_sample(answers, model):
    assert answers[4]["choices"][0]["text"] == sample(model, 1, 8, "--temperature", "0"), "greedy equals sample"


def test_models_list_names_the_model(answers):
    models = answers[5]
    assert [m["id"] for m in models] == ["tiny"], f"models.list names the one model ({models})"


@pytest.fixture(scope="module")
def stopped(srv, model, want, tmp_path_factory):
    """(the stop string, the client's answers with it, plain and streamed, sample's text with it)."""
    mid = want[len(want) // 2:len(want) // 2 + 3]
    got = client(srv, str(tmp_path_factory.mktemp("stop")), [{"kind": "create", "params": {**BASE, "stop": [mid]}},
                                                             {"kind": "stream", "params": {**BASE, "stop": mid}}])
    return mid, got, sample(model, 7, 24, "--temperature", "0.9", "--top-k", "50", "--stop", mid)


def test_stop_equals_sample_stop(stopped):
    mid, got, w = stopped
    assert got[0]["choices"][0]["text"] == w and got[0]["choices"][0]["finish_reason"] == "stop", \
        f"stop {mid!r}: text equals sample --stop, finish_reason stop"


def test_stop_streamed_equals_sample_stop(stopped):
    _, got, w = stopped
    assert got[1]["choices"][0]["text"] == w, "stop, streamed: the same"


def test_health_needs_no_key(srv):
    status, _, body = srv.request("GET", "/health")
    assert status == 200 and body == {"status": "ok"}, "/health without a key"


def test_tokenize_and_detokenize(srv):
    text = "Hello, world! <|endoftext|> é"
    status, _, body = srv.request("POST", "/tokenize", {"content": text}, key=KEY)
    ids = [int(x) for x in harness.run("tokenize", "--allow-special", input=text, check=True).stdout.split()]
    assert status == 200 and body["tokens"] == ids and 50256 in ids, "/tokenize equals gpt2lab tokenize --allow-special"
    status, _, body = srv.request("POST", "/detokenize", {"tokens": body["tokens"]}, key=KEY)
    assert status == 200 and body["content"] == text, "/detokenize gives the text back"


def test_raw_stream_ends_with_done(srv):
    status, _, body = srv.request("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 4, "stream": True,
                                                              "seed": 3}, key=KEY)
    assert status == 200 and body.endswith("data: [DONE]\n\n"), "a raw stream ends with data: [DONE]"


def is_error(status, body, want_status, param=None):
    e = body.get("error") if isinstance(body, dict) else None
    return (status == want_status and isinstance(e, dict) and set(e) == {"message", "type", "param", "code"}
            and e["message"] and (param is None or e["param"] == param))


BAD_FIELDS = [
    ({"max_tokens": "10"}, "max_tokens"), ({"max_tokens": -1}, "max_tokens"), ({"max_tokens": 1e300}, "max_tokens"),
    ({"max_tokens": 2 ** 70}, "max_tokens"), ({"max_tokens": 10 ** 9}, "max_tokens"),
    ({"temperature": "hot"}, "temperature"), ({"temperature": -1}, "temperature"), ({"top_p": 2}, "top_p"),
    ({"top_p": 0}, "top_p"), ({"top_k": -5}, "top_k"), ({"n": 0}, "n"), ({"n": 10 ** 6}, "n"), ({"n": 1.5}, "n"),
    ({"seed": -1}, "seed"), ({"seed": "x"}, "seed"), ({"logprobs": 99}, "logprobs"), ({"stream": "yes"}, "stream"),
    ({"stop": 3}, "stop"), ({"stop": [""]}, "stop"), ({"stop": ["a"] * 9}, "stop"), ({"prompt": 5}, "prompt"),
    ({"prompt": []}, "prompt"), ({"prompt": ""}, "prompt"), ({"prompt": [50257]}, "prompt"),
    ({"prompt": [-1]}, "prompt"), ({"prompt": [[1, 2], "x", None]}, "prompt"), ({"model": 7}, "model"),
    ({"prompt": "word " * 200}, "prompt"), ({"suffix": "x"}, "suffix"), ({"best_of": 3}, "best_of"),
]


POST = "/v1/completions"


@pytest.mark.parametrize("body", [b"{", b"{\"prompt\": \"x\",}", b"[]", b"\"x\"", b"null", b"[" * 20000,
                                  b"{\"prompt\": \"\xff\xfe\"}"], ids=lambda b: repr(b[:12]))
def test_bad_body_gets_400(srv, body):
    status, _, got = srv.request("POST", POST, body, key=KEY)
    assert is_error(status, got, 400), f"body {body[:20]!r}: 400 in OpenAI's error shape"


@pytest.mark.parametrize("fields,param", BAD_FIELDS, ids=[json.dumps(f)[:30] for f, _ in BAD_FIELDS])
def test_bad_field_gets_400_naming_it(srv, fields, param):
    status, _, got = srv.request("POST", POST, {"prompt": "x", **fields}, key=KEY)
    assert is_error(status, got, 400, param), f"{json.dumps(fields)[:50]}: 400 naming {param}"


def test_prompt_over_the_context(srv):
    post = POST
    status, _, got = srv.request("POST", post, {"prompt": "word " * 200}, key=KEY)
    assert got["error"]["code"] == "context_length_exceeded", "a prompt over the context: context_length_exceeded"


BIG = b"{\"prompt\": \"" + b"a" * 100000 + b"\"}"


def test_body_over_max_body_gets_413(srv):
    big = BIG
    post = POST
    status, _, got = srv.request("POST", post, big, key=KEY)
    assert is_error(status, got, 413), "a body over --max-body: 413"


def test_chunked_body_over_max_body_gets_413(srv):
    big = BIG
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [big[i:i + 4096] for i in range(0, len(big), 4096)])
    reply = srv.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
                    b"\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + b"0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 413"), f"a chunked body over --max-body: 413 ({reply[:30]!r})"


def test_gzip_bomb_gets_413(srv):
    post = POST
    bomb = gzip.compress(b"{\"prompt\": \"" + b"a" * 600000 + b"\"}")
    status, _, got = srv.request("POST", post, bomb, key=KEY, headers={"Content-Encoding": "gzip",
                                                                       "Content-Type": "application/json"})
    assert is_error(status, got, 413), f"a gzip body that inflates past --max-body ({len(bomb)} bytes sent): 413"


def test_unknown_path_gets_404(srv):
    status, _, got = srv.request("GET", "/nowhere", key=KEY)
    assert is_error(status, got, 404), "unknown path: 404"


def test_wrong_method_gets_405(srv):
    status, _, got = srv.request("GET", POST, key=KEY)
    assert is_error(status, got, 405), "GET /v1/completions: 405"


def test_missing_key_gets_401(srv):
    status, headers, got = srv.request("POST", POST, {"prompt": "x"})
    assert is_error(status, got, 401) and got["error"]["code"] == "invalid_api_key", "no key: 401"


def test_wrong_key_gets_401(srv):
    status, _, got = srv.request("GET", "/v1/models", key="wrong")
    assert is_error(status, got, 401), "a wrong key: 401"


def test_half_sent_requests_are_closed_by_the_timeout(srv):
    """A request left half-sent is closed after --timeout, and other clients
    are served meanwhile."""
    partial = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    partial.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"pro")
    headers_only = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    headers_only.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    status, _, _ = srv.request("GET", "/health")
    assert status == 200, "served while two requests hang half-sent"
    for s, what in ((partial, "half a body"), (headers_only, "half the headers")):
        try:
            while s.recv(65536):
                pass
            closed = True
        except socket.timeout:
            closed = False
        s.close()
        assert closed, f"a connection with {what} is closed by the server's timeout"


def test_client_hanging_up_mid_stream_stops_nothing_else(srv):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    body = json.dumps({"prompt": PROMPT, "max_tokens": 40, "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    s.recv(10)
    s.close()
    status, _, got = srv.request("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 4}, key=KEY)
    assert status == 200 and got["choices"][0]["text"] is not None, "served after a client hung up mid-stream"


def metrics(srv):
    return srv.metrics(key=KEY)


def wait_for(srv, what, test):
    """Polls /metrics until test(metrics) holds (60 s at most)."""
    for _ in range(6000):
        m = metrics(srv)
        if test(m):
            return m
        time.sleep(0.01)
    pytest.fail(f"/metrics never showed {what}: {m}")


def post_raw(srv, body):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
              b"\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
    return s


@pytest.fixture(scope="module")
def cancelled(model):
    """A model with a 1,024-token context, slow enough per token (50,257 x
    128 head) that 1,000 tokens take seconds: a client that hangs up after
    the first streamed event, or while a plain request runs, must stop its
    generation long before max_tokens. Yields (the server, the request)."""
    tmp = os.path.dirname(model)
    model = os.path.join(tmp, "ctx1024")
    harness.run("init", "--out", model, "--n-layer", "2", "--n-head", "4", "--n-embd", "128", "--block-size", "1024",
                "--vocab-size", "50257", "--seed", "6", check=True)
    req = {"prompt": PROMPT, "max_tokens": 1000, "seed": 1}
    with serve_util.Server(model, "--threads", "1", "--api-key", KEY, log=os.path.join(tmp, "cancel.log")) as srv:
        yield srv, req


@pytest.fixture(scope="module")
def streamed_cancelled(cancelled):
    """(/metrics, tokens predicted) once a streamed request's client hung up after the first event."""
    srv, req = cancelled
    s = post_raw(srv, {**req, "stream": True})
    got = b""
    while b"data: " not in got:
        got += s.recv(4096)
    s.close()
    m = wait_for(srv, "the streamed request ended", lambda m: m["requests_total"] == 1)
    return m, m["tokens_predicted_total"]


def test_hanging_up_a_stream_stops_generation(streamed_cancelled, cancelled):
    m, streamed = streamed_cancelled
    req = cancelled[1]
    # Any count under max_tokens shows that it stopped; how many came
    # before the hang-up reached it depends on scheduling, not on the server.
    assert m["requests_cancelled_total"] == 1 and streamed < req["max_tokens"], \
        f"stream: hanging up after the first event stops generation ({streamed:.0f} of 1000 tokens)"


@pytest.fixture(scope="module")
def plain_cancelled(cancelled, streamed_cancelled):
    """(/metrics, tokens predicted) once a plain request's client hung up while it ran."""
    srv, req = cancelled
    streamed = streamed_cancelled[1]
    s = post_raw(srv, req)
    wait_for(srv, "the plain request running", lambda m: m["requests_processing"] == 1)
    s.close()
    m = wait_for(srv, "the plain request ended", lambda m: m["requests_total"] == 2)
    return m, m["tokens_predicted_total"] - streamed


def test_hanging_up_a_plain_request_stops_generation(plain_cancelled, cancelled):
    m, whole = plain_cancelled
    req = cancelled[1]
    assert m["requests_cancelled_total"] == 2 and whole < req["max_tokens"], \
        f"plain: hanging up while it runs stops generation ({whole:.0f} of 1000 tokens)"


def test_finished_request_is_counted_exactly(cancelled, streamed_cancelled, plain_cancelled):
    srv, req = cancelled
    streamed, whole = streamed_cancelled[1], plain_cancelled[1]
    status, _, got = srv.request("POST", "/v1/completions", {**req, "max_tokens": 40}, key=KEY)
    m = metrics(srv)
    assert (status == 200 and got["usage"]["completion_tokens"] == 40 and m["requests_total"] == 3 and
            m["requests_cancelled_total"] == 2 and m["tokens_predicted_total"] == streamed + whole + 40 and
            m["prompt_tokens_total"] == 3 * got["usage"]["prompt_tokens"] and m["requests_processing"] == 0), \
        f"a finished request is counted exactly, not cancelled ({m})"


def test_server_still_serves_after_all_that(srv):
    status, _, got = srv.request("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 4}, key=KEY)
    assert status == 200 and srv.proc.poll() is None, "after all that, the server still serves"


def test_sigterm_exits_0(srv):
    code = srv.stop(signal.SIGTERM)
    assert code == 0, f"SIGTERM: the server exits 0 (got {code})"
