"""`gpt2lab serve`'s /v1/chat/completions and /v1/embeddings through
OpenAI's own Node client (the `openai` npm package, pinned in
scripts/fetch_data.sh; tests/reference/openai_chat_client.js drives it).

1. chat.completions.create, whole and streamed (chat.completion.chunk
   deltas, the role first, a finish_reason, usage with
   stream_options.include_usage), with n=2 and a seed, gives exactly the
   choices /v1/completions gives for the prompt the template renders as
   docs/serve.md describes, stopped at its end_of_turn; max_completion_tokens
   is max_tokens; logprobs come in chat's format.
2. A template of the server's own (--chat-template) is applied as written;
   a bad template file stops the server at start, naming file and field.
3. embeddings.create (base64, decoded by the client, and float) equals the
   mean of the final hidden states (after ln_f), scaled to unit length, of
   an independent PyTorch model (tests/reference/gpt2_torch.py) on the same
   checkpoint, for text and token inputs; usage counts the tokens.
4. Bad requests get 400 naming the field (unknown fields, messages,
   an empty or too-long input by its index, dimensions).

A tiny random model (1 layer, C 32, context 64, GPT-2's tokenizer).
Skips (77) when node, data/gpt2, the openai package or torch is missing and
CI is not set.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
import serve_util  # noqa: E402

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
OPENAI = os.path.join(DATA, "node_modules", "openai")
CLIENT = os.path.join(harness.REFERENCE, "openai_chat_client.js")
KEY = "chat-key"
DEFAULT_TEMPLATE = {"begin": "", "system": "<|system|>\n", "user": "<|user|>\n", "assistant": "<|assistant|>\n",
                    "end_of_turn": "\n"}
CUSTOM_TEMPLATE = {"begin": "<|endoftext|>", "user": "Q: ", "assistant": "A:", "end_of_turn": "\n\n"}
CHAT = [{"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "What is the economy?"},
        {"role": "assistant", "content": "Money."},
        {"role": "user", "content": [{"type": "text", "text": "And "}, {"type": "text", "text": "trade?"}]}]
SAMPLING = {"model": "tiny", "temperature": 0.9, "top_k": 50, "seed": 11, "max_tokens": 12}


def missing():
    """Why this test cannot run here, or None."""
    if not shutil.which("node") or not os.path.exists(OPENAI) or not os.path.exists(os.path.join(DATA, "gpt2")):
        return "node, data/gpt2 or the fetched openai package is missing"
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is missing"
    return None


def render(template, messages):
    """The prompt docs/serve.md says a chat becomes."""
    t = {**DEFAULT_TEMPLATE, **template}
    text = t["begin"]
    for m in messages:
        content = m["content"] if isinstance(m["content"], str) else "".join(p["text"] for p in m["content"])
        role = "system" if m["role"] == "developer" else m["role"]
        text += t[role] + content + t["end_of_turn"]
    return text + t["assistant"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    reason = missing()
    if reason:
        if os.environ.get("CI"):
            raise SystemExit(reason + " under CI (scripts/setup.sh fetches them)")
        pytest.skip(reason)
    tmp = str(tmp_path_factory.mktemp("serve_chat"))
    model = os.path.join(tmp, "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    custom = os.path.join(tmp, "custom_template.json")
    with open(custom, "w") as f:
        json.dump(CUSTOM_TEMPLATE, f)
    with serve_util.Server(model, "--threads", "1", "--api-key", KEY, log=os.path.join(tmp, "serve.log")) as srv, \
            serve_util.Server(model, "--threads", "1", "--api-key", KEY, "--chat-template", custom,
                              log=os.path.join(tmp, "custom.log")) as custom_srv:
        yield {"tmp": tmp, "model": model, "srv": srv, "custom": custom_srv}


def client(setup, requests, srv=None):
    path = os.path.join(setup["tmp"], "requests.json")
    with open(path, "w") as f:
        json.dump(requests, f)
    srv = srv or setup["srv"]
    r = harness.command(["node", CLIENT, OPENAI, srv.url + "/v1", KEY, path], check=True, timeout=300)
    return json.loads(r.stdout)


def test_chat_equals_completions_of_the_rendered_prompt(setup):
    base = {**SAMPLING, "messages": CHAT, "n": 2}
    completion = {**SAMPLING, "prompt": render({}, CHAT), "n": 2, "stop": ["\n"]}
    chat, streamed, plain, by_new_name = client(setup, [
        {"kind": "chat", "params": base},
        {"kind": "chat_stream", "params": {**base, "stream_options": {"include_usage": True}}},
        {"kind": "completion", "params": completion},
        {"kind": "chat", "params": {**{k: v for k, v in base.items() if k != "max_tokens"},
                                    "max_completion_tokens": 12}},
    ])
    assert chat["object"] == "chat.completion" and chat["id"].startswith("chatcmpl-")
    assert len(chat["choices"]) == 2
    for i in range(2):
        got, want = chat["choices"][i], plain["choices"][i]
        assert got["index"] == i and got["message"]["role"] == "assistant"
        assert got["message"]["content"] == want["text"], i
        assert got["finish_reason"] == want["finish_reason"], i
        s = streamed["choices"][i]
        assert (s["role"], s["content"], s["finish_reason"]) == ("assistant", want["text"], want["finish_reason"])
        assert by_new_name["choices"][i]["message"]["content"] == want["text"]
    assert chat["choices"][0]["message"]["content"] != chat["choices"][1]["message"]["content"]
    assert chat["usage"] == plain["usage"]
    assert streamed["usage"] == plain["usage"]
    assert streamed["objects"] == ["chat.completion.chunk"] and streamed["chunks"] > 4


def test_generation_stops_at_the_end_of_turn(setup):
    # "\n" (id 198) all but forced: the reply ends before it, at once.
    forced = {**SAMPLING, "messages": CHAT, "logit_bias": {"198": 100}}
    whole, streamed = client(setup, [{"kind": "chat", "params": forced}, {"kind": "chat_stream", "params": forced}])
    assert whole["choices"][0]["message"]["content"] == "" and whole["choices"][0]["finish_reason"] == "stop"
    assert whole["usage"]["completion_tokens"] == 1
    assert streamed["choices"][0]["content"] == "" and streamed["choices"][0]["finish_reason"] == "stop"


def test_a_servers_own_template_is_applied_as_written(setup):
    chat, plain = client(setup, [
        {"kind": "chat", "params": {**SAMPLING, "messages": CHAT}},
        {"kind": "completion", "params": {**SAMPLING, "prompt": render(CUSTOM_TEMPLATE, CHAT), "stop": "\n\n"}},
    ], srv=setup["custom"])
    assert chat["choices"][0]["message"]["content"] == plain["choices"][0]["text"]
    assert chat["usage"] == plain["usage"]
    srv = setup["srv"]
    status, _, ids = srv.request("POST", "/tokenize", {"content": render(CUSTOM_TEMPLATE, CHAT)}, key=KEY)
    assert status == 200 and ids["tokens"][0] == 50256  # begin's <|endoftext|> is the special token
    assert chat["usage"]["prompt_tokens"] == len(ids["tokens"])


def test_a_bad_template_stops_the_server_at_start(setup):
    bad = os.path.join(setup["tmp"], "bad_template.json")
    with open(bad, "w") as f:
        json.dump({"user": "U: ", "end_of_trun": "\n"}, f)
    r = subprocess.run([harness.BIN, "serve", "--model", setup["model"], "--port", "0", "--chat-template", bad],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "listening" not in r.stdout
    assert bad in r.stderr and "unknown field \"end_of_trun\"" in r.stderr, r.stderr


def test_chat_logprobs(setup):
    greedy = {**SAMPLING, "temperature": 0, "max_tokens": 6, "messages": CHAT}
    chat, streamed, plain = client(setup, [
        {"kind": "chat", "params": {**greedy, "logprobs": True, "top_logprobs": 3}},
        {"kind": "chat_stream", "params": {**greedy, "logprobs": True, "top_logprobs": 3}},
        {"kind": "completion", "params": {**{k: v for k, v in greedy.items() if k != "messages"},
                                          "prompt": render({}, CHAT), "stop": "\n", "logprobs": 3}},
    ])
    content = chat["choices"][0]["logprobs"]["content"]
    want = plain["choices"][0]["logprobs"]
    assert len(content) == chat["usage"]["completion_tokens"] == len(want["token_logprobs"])
    for entry, lp, token in zip(content, want["token_logprobs"], want["tokens"]):
        assert entry["token"] == token and entry["logprob"] == pytest.approx(lp, abs=1e-9)
        assert bytes(entry["bytes"]).decode("utf-8", errors="replace") == token
        assert len(entry["top_logprobs"]) == 3
        assert entry["top_logprobs"][0]["logprob"] == pytest.approx(entry["logprob"], abs=1e-9)  # greedy
        assert entry["top_logprobs"][0]["logprob"] >= entry["top_logprobs"][1]["logprob"]
    assert [e["logprob"] for e in streamed["choices"][0]["logprobs"]] == [e["logprob"] for e in content]


def reference_embedding(model, ids):
    import numpy as np
    import torch
    sys.path.insert(0, harness.REFERENCE)
    import gpt2_torch
    with torch.no_grad():
        h = gpt2_torch.load_checkpoint(model).hidden(torch.tensor([ids]))[0].double().numpy()
    mean = h.mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_embeddings_equal_an_independent_reference(setup):
    srv = setup["srv"]
    texts = ["The economy grew.", "Hello, world!", "a"]
    ids = [srv.request("POST", "/tokenize", {"content": t}, key=KEY)[2]["tokens"] for t in texts]
    long_ids = [(i * 97) % 50257 for i in range(64)]  # the whole context
    decoded, floats, tokens, one = client(setup, [
        {"kind": "embed", "params": {"model": "tiny", "input": texts}},
        {"kind": "embed", "params": {"model": "tiny", "input": texts, "encoding_format": "float"}},
        {"kind": "embed", "params": {"model": "tiny", "input": [ids[0], long_ids], "dimensions": 32}},
        {"kind": "embed", "params": {"model": "tiny", "input": "Hello, world!", "encoding_format": "float"}},
    ])
    assert decoded["object"] == "list" and decoded["model"] == "tiny"
    assert decoded["usage"] == {"prompt_tokens": sum(map(len, ids)), "total_tokens": sum(map(len, ids))}
    for got in (decoded, floats):
        assert [d["index"] for d in got["data"]] == [0, 1, 2]
        for d, t in zip(got["data"], ids):
            want = reference_embedding(setup["model"], t)
            assert d["object"] == "embedding" and len(d["embedding"]) == 32
            assert max(abs(a - b) for a, b in zip(d["embedding"], want)) < 1e-4, d["index"]
    assert decoded["data"][0]["embedding"] == pytest.approx(floats["data"][0]["embedding"], abs=1e-7)
    want_long = reference_embedding(setup["model"], long_ids)
    assert max(abs(a - b) for a, b in zip(tokens["data"][1]["embedding"], want_long)) < 1e-4
    assert tokens["data"][0]["embedding"] == pytest.approx(floats["data"][0]["embedding"], abs=1e-6)
    assert tokens["usage"]["prompt_tokens"] == len(ids[0]) + 64
    assert one["data"][0]["embedding"] == pytest.approx(floats["data"][1]["embedding"], abs=1e-6)


def is_openai_error(got, param, words):
    """got is OpenAI's error object naming `param`, its message holding every word."""
    e = got.get("error") if isinstance(got, dict) else None
    return (isinstance(e, dict) and set(e) == {"message", "type", "param", "code"}
            and e["type"] == "invalid_request_error" and e["param"] == param and all(w in e["message"] for w in words))


@pytest.mark.parametrize("path,body,param,words", [
    ("/v1/chat/completions", {"messages": CHAT, "tools": [], "min_p": 0.1}, "min_p",
     ["unknown fields 'min_p', 'tools'"]),
    ("/v1/chat/completions", {"messages": CHAT, "prompt": "x"}, "prompt", ["unknown field 'prompt'"]),
    ("/v1/chat/completions", {"messages": []}, "messages", ["messages must be a non-empty list"]),
    ("/v1/chat/completions", {"messages": [{"role": "tool", "content": "x"}]}, "messages", ["messages[0].role"]),
    ("/v1/chat/completions", {"messages": CHAT, "temperature": -1}, "temperature", ["temperature"]),
    ("/v1/chat/completions", {"messages": CHAT, "max_tokens": 60}, "messages", ["maximum context length is 64"]),
    ("/v1/chat/completions", {"messages": CHAT, "max_tokens": 3, "max_completion_tokens": 4}, "max_tokens",
     ["differ"]),
    ("/v1/chat/completions", {"messages": CHAT, "top_logprobs": 2}, "top_logprobs", ["logprobs"]),
    ("/v1/embeddings", {"input": ["a", ""]}, "input", ["input 1 is empty"]),
    ("/v1/embeddings", {"input": ["a", [1] * 65]}, "input", ["input 1 has 65 tokens", "context of 64"]),
    ("/v1/embeddings", {"input": "a", "dimensions": 16}, "dimensions", ["n_embd 32"]),
    ("/v1/embeddings", {"input": "a", "pooling": "last"}, "pooling", ["unknown field 'pooling'"]),
])
def test_bad_requests_get_400_naming_the_field(setup, path, body, param, words):
    status, _, got = setup["srv"].request("POST", path, body, key=KEY)
    assert status == 400 and is_openai_error(got, param, words), (status, got)


def test_the_client_sees_400s_and_raw_streams_end_with_done(setup):
    bad, = client(setup, [{"kind": "chat", "params": {"model": "tiny", "messages": CHAT, "best_of": 2}}])
    assert bad["error"]["status"] == 400 and bad["error"]["param"] == "best_of"
    status, _, body = setup["srv"].request("POST", "/v1/chat/completions",
                                           {"messages": CHAT, "max_tokens": 3, "stream": True, "seed": 3}, key=KEY)
    assert status == 200 and body.startswith("data: {") and body.endswith("data: [DONE]\n\n")
    status, headers, _ = setup["srv"].request("GET", "/v1/chat/completions", key=KEY)
    assert status == 405 and headers.get("Allow") == "POST"
    status, _, _ = setup["srv"].request("POST", "/v1/embeddings", {"input": "a"})
    assert status == 401


if __name__ == "__main__":
    if missing() and not os.environ.get("CI"):
        harness.skip(missing())
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
