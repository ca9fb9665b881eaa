"""`gpt2lab serve`: GET /v1/models/{id} (the openai client's
models.retrieve) and request fields the server does not apply.

1. /v1/models/ID (and /models/ID) of the served id: 200 with the model
   object /v1/models lists; any other id: 404 in OpenAI's error format
   (code model_not_found, param model); the openai npm client's
   models.retrieve gets both.
2. /v1/completions refuses fields it would not apply (llama.cpp's min_p,
   typical_p, mirostat, a typo) with a 400 naming every one of them, rather
   than ignoring them; OpenAI's `user` (no effect on the text) is taken.

Skips when data/gpt2 (GPT-2's tokenizer) is missing and CI is not set;
the client checks need node and the fetched openai package too.
"""
import json
import os
import shutil

import pytest

import harness
import serve_util

DATA = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
OPENAI = os.path.join(DATA, "node_modules", "openai")
CLIENT = os.path.join(harness.REFERENCE, "openai_client.js")
KEY = "models-key"


def openai_error(status, body, want_status, code, param):
    """The body is OpenAI's error object with this status, code and param."""
    if status != want_status or not isinstance(body, dict) or set(body) != {"error"}:
        return False
    e = body["error"]
    return (set(e) == {"message", "type", "param", "code"} and e["type"] == "invalid_request_error"
            and e["code"] == code and e["param"] == param and isinstance(e["message"], str))


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    if not os.path.exists(os.path.join(DATA, "gpt2")):
        if os.environ.get("CI"):
            pytest.fail("data/gpt2 missing under CI (scripts/setup.sh fetches it)")
        pytest.skip("data/gpt2 (GPT-2's tokenizer) is missing")
    tmp = str(tmp_path_factory.mktemp("tiny"))
    model = os.path.join(tmp, "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    with serve_util.Server(model, "--threads", "1", "--api-key", KEY, log=os.path.join(tmp, "serve.log")) as srv:
        yield srv


@pytest.fixture(scope="module")
def listed(srv):
    """What /v1/models answers: (status, body)."""
    status, _, listed = srv.request("GET", "/v1/models", key=KEY)
    return status, listed


def test_models_lists_the_model(listed):
    status, listed = listed
    assert status == 200 and len(listed["data"]) == 1, f"/v1/models lists the model ({status} {listed})"


@pytest.mark.parametrize("path", ["/v1/models/tiny", "/models/tiny"])
def test_retrieve_gives_the_listed_object(srv, listed, path):
    model = listed[1]["data"][0]
    status, _, got = srv.request("GET", path, key=KEY)
    assert status == 200 and got == model, f"GET {path}: 200, the object /v1/models lists ({status} {got})"


@pytest.mark.parametrize("other", ["gpt-3.5-turbo-instruct", "tiny2", "tin"])
def test_other_id_gets_404(srv, other):
    status, _, got = srv.request("GET", "/v1/models/" + other, key=KEY)
    assert (openai_error(status, got, 404, "model_not_found", "model") and other in got["error"]["message"]
            and "tiny" in got["error"]["message"]), \
        f"GET /v1/models/{other}: 404 model_not_found naming it and the served id ({status} {got})"


def test_post_gets_405(srv):
    status, headers, got = srv.request("POST", "/v1/models/tiny", {}, key=KEY)
    assert status == 405 and headers.get("Allow") == "GET", f"POST /v1/models/tiny: 405, Allow GET ({status} {got})"


def test_retrieve_needs_the_key(srv):
    status, _, got = srv.request("GET", "/v1/models/tiny")
    assert status == 401, f"GET /v1/models/tiny without the key: 401 ({status})"


BASE = {"prompt": "Hi", "max_tokens": 2, "seed": 1}


@pytest.mark.parametrize("extra", [{"min_p": 0.05}, {"typical_p": 0.9}, {"mirostat": 2}, {"temprature": 0.5}],
                         ids=lambda e: next(iter(e)))
def test_unknown_field_gets_400_naming_it(srv, extra):
    base = BASE
    (name,) = extra
    status, _, got = srv.request("POST", "/v1/completions", {**base, **extra}, key=KEY)
    msg = got["error"]["message"] if isinstance(got, dict) and "error" in got else ""
    assert openai_error(status, got, 400, None, name) and f"'{name}'" in msg, \
        f"{name}: 400 naming it, not ignored ({status} {got})"


def test_400_names_every_unknown_field(srv):
    base = BASE
    status, _, got = srv.request("POST", "/v1/completions", {**base, "min_p": 0.1, "mirostat": 1, "typical_p": 1},
                                 key=KEY)
    msg = got["error"]["message"] if status == 400 else ""
    assert status == 400 and all(f"'{k}'" in msg for k in ("min_p", "mirostat", "typical_p")), \
        f"three unknown fields: the 400 names all of them ({msg!r})"


def test_user_field_is_taken_and_changes_nothing(srv):
    base = BASE
    status, _, got = srv.request("POST", "/v1/completions", {**base, "user": "someone"}, key=KEY)
    assert status == 200, f"OpenAI's user field is taken ({status} {got})"
    status, _, plain = srv.request("POST", "/v1/completions", base, key=KEY)
    assert status == 200 and plain["choices"][0]["text"] == got["choices"][0]["text"], \
        "user changes nothing in the text"


@pytest.fixture(scope="module")
def client(srv, tmp_path_factory):
    """The openai client's answers to models.retrieve('tiny'), ('nope') and
    completions.create with min_p."""
    if not shutil.which("node") or not os.path.exists(OPENAI):
        if os.environ.get("CI"):
            pytest.fail("node or the openai package missing under CI (scripts/setup.sh fetches them)")
        pytest.skip("node or the fetched openai package is missing: the openai client checks are skipped")
    tmp = str(tmp_path_factory.mktemp("client"))
    path = os.path.join(tmp, "requests.json")
    with open(path, "w") as f:
        json.dump([{"kind": "retrieve", "params": {"id": "tiny"}}, {"kind": "retrieve", "params": {"id": "nope"}},
                   {"kind": "create", "params": {"model": "tiny", "prompt": "Hi", "max_tokens": 2, "min_p": 0.1}}],
                  f)
    r = harness.command(["node", CLIENT, OPENAI, srv.url + "/v1", KEY, path], check=True, timeout=300)
    return json.loads(r.stdout)


def test_client_retrieve_gets_the_model(client):
    found = client[0]
    assert found.get("id") == "tiny" and found.get("object") == "model", \
        f"openai client models.retrieve('tiny') gets the model ({found})"


def test_client_retrieve_of_another_id_gets_not_found(client):
    missing = client[1]
    assert missing.get("error", {}).get("status") == 404 and missing["error"].get("code") == "model_not_found", \
        f"openai client models.retrieve('nope'): a 404 NotFoundError, model_not_found ({missing})"


def test_client_create_with_min_p_gets_400(client):
    extra = client[2]
    assert extra.get("error", {}).get("status") == 400 and extra["error"].get("param") == "min_p", \
        f"openai client completions.create with min_p: a 400 naming min_p ({extra})"
