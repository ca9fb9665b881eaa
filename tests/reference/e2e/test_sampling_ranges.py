"""The sampling options' one table (sample/options.h): `gpt2lab sample`, the
Python module's Model.generate and `gpt2lab serve`'s /v1/completions refuse
the same out-of-range values, naming the same range in the same words
(top_p below 1e-06 was once taken by the server and refused by the others).

Skips when the Python module is not built or data/gpt2 (the server's
tokenizer) is missing and CI is not set.
"""

import pytest

import harness

# (Python keyword, flag, request field, value, the range every one names)
CASES = [
    ("top_p", "--top-p", "top_p", 1e-7, "a finite number >= 1e-06 and <= 1"),
    ("top_p", "--top-p", "top_p", 1.5, "a finite number >= 1e-06 and <= 1"),
    ("temperature", "--temperature", "temperature", -1, "a finite number >= 0 and <= 1e+06"),
    ("top_k", "--top-k", "top_k", -1, "an integer in [0, 16777216]"),
    ("top_k", "--top-k", "top_k", 2 ** 24 + 1, "an integer in [0, 16777216]"),
    ("repetition_penalty", "--repetition-penalty", "repeat_penalty", 0, "a finite number >= 0.001 and <= 1000"),
    ("repetition_penalty", "--repetition-penalty", "repeat_penalty", 1e4, "a finite number >= 0.001 and <= 1000"),
]


def range_named(message, name):
    """The range a message names: what follows "NAME = V is out of range:
    it must be " ("" when the message is not of that form)."""
    head = " is out of range: it must be "
    if not message.startswith(name + " = ") or head not in message:
        return ""
    return message.split(head, 1)[1].strip().split("\n")[0].rstrip(".")


@pytest.fixture(scope="module")
def m(gpt2lab_gpt2, tiny_gpt2_model):
    return gpt2lab_gpt2.Model.load(tiny_gpt2_model)


def case_id(case):
    return f"{case[0]}={case[3]!r}"


@pytest.mark.parametrize("key,flag,field,value,want", CASES, ids=[case_id(c) for c in CASES])
def test_sample_refuses_naming_the_range(tiny_gpt2_model, key, flag, field, value, want):
    r = harness.run("sample", "--model", tiny_gpt2_model, "--prompt-ids", "1", flag, str(value), timeout=60)
    cli = r.stderr.split("error: ", 1)[-1]
    assert r.returncode != 0 and range_named(cli, flag) == want, \
        f"{key} = {value!r}: sample {flag} refuses it naming {want!r} ({cli.strip()!r})"


@pytest.mark.parametrize("key,flag,field,value,want", CASES, ids=[case_id(c) for c in CASES])
def test_generate_refuses_naming_the_range(gpt2lab_gpt2, m, key, flag, field, value, want):
    try:
        m.generate([1], max_new_tokens=1, **{key: value})
        py = ""
    except gpt2lab_gpt2.Error as e:
        py = str(e)
    assert range_named(py, key) == want, f"{key} = {value!r}: Model.generate refuses it naming {want!r} ({py!r})"


@pytest.mark.parametrize("key,flag,field,value,want", CASES, ids=[case_id(c) for c in CASES])
def test_server_refuses_naming_the_range(tiny_server, key, flag, field, value, want):
    status, _, got = tiny_server.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 1, field: value})
    server = got["error"]["message"] if status == 400 else ""
    assert status == 400 and range_named(server, field) == want and got["error"]["param"] == field, \
        f"{key} = {value!r}: /v1/completions refuses it (400) naming {want!r} ({status} {server!r})"


# The lowest top_p all three take.

def test_sample_takes_the_lowest_top_p(tiny_gpt2_model):
    r = harness.run("sample", "--model", tiny_gpt2_model, "--prompt-ids", "1", "--top-p", "1e-6",
                    "--max-new-tokens", "1", "--format", "ids", "--quiet", timeout=60)
    assert r.returncode == 0, f"sample --top-p 1e-6 is taken ({r.stderr.strip()!r})"


def test_generate_takes_the_lowest_top_p(m):
    assert len(m.generate([1], max_new_tokens=1, top_p=1e-6)) == 1, "generate(top_p=1e-6) is taken"


def test_server_takes_the_lowest_top_p(tiny_server):
    status, _, got = tiny_server.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 1, "top_p": 1e-6})
    assert status == 200, f"/v1/completions top_p 1e-6 is taken ({status} {got})"
