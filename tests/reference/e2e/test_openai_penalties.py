"""OpenAI's presence_penalty and frequency_penalty, applied by the shared
sampler: /v1/completions (which once refused them unless 0), `gpt2lab
sample --presence-penalty/--frequency-penalty` and Model.generate give the
same text for the same seed, a different one than without them, and refuse
values outside OpenAI's [-2, 2] in the same words. (The adjustment itself
is checked against a hand computation in tests/sample/openai_penalties_test.cpp.)

Skips when the Python module is not built or data/gpt2 (the
tokenizer) is missing and CI is not set.
"""

import pytest

import harness

PROMPT = "The economy"
N = 24


def cli(model, *flags):
    r = harness.run("sample", "--model", model, "--prompt", PROMPT, "--seed", "3", "--max-new-tokens", str(N),
                    "--threads", "1", "--stop-at-eot", "--quiet", *flags, check=True)
    text = r.stdout[:-1][len(PROMPT):]
    return text[:-len("<|endoftext|>")] if text.endswith("<|endoftext|>") else text


def server(srv, **fields):
    status, _, got = srv.request("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": N, "seed": 3, **fields})
    return got["choices"][0]["text"] if status == 200 else (status, got)


@pytest.fixture(scope="module")
def m(gpt2lab_gpt2, tiny_gpt2_model):
    return gpt2lab_gpt2.Model.load(tiny_gpt2_model)


@pytest.fixture(scope="module")
def plain(tiny_server):
    return server(tiny_server)


# (-2, 2) would leave a token drawn once as it was: 2 * 1 - 2 = 0.
PENALTIES = [(0.5, 1.5), (-2, 1), (2, -1)]


def sample_text(model, presence, frequency):
    return cli(model, "--presence-penalty", str(presence), "--frequency-penalty", str(frequency))


@pytest.mark.parametrize("presence,frequency", PENALTIES)
def test_server_gives_samples_text(tiny_gpt2_model, tiny_server, presence, frequency):
    want = sample_text(tiny_gpt2_model, presence, frequency)
    got = server(tiny_server, presence_penalty=presence, frequency_penalty=frequency)
    what = f"presence {presence}, frequency {frequency}"
    assert got == want, f"{what}: /v1/completions gives sample's text ({got!r} / {want!r})"


@pytest.mark.parametrize("presence,frequency", PENALTIES)
def test_generate_gives_samples_text(tiny_gpt2_model, m, presence, frequency):
    want = sample_text(tiny_gpt2_model, presence, frequency)
    py = m.generate(PROMPT, max_new_tokens=N, seed=3, presence_penalty=presence, frequency_penalty=frequency,
                    stop_at_eot=True)
    what = f"presence {presence}, frequency {frequency}"
    assert py.split("<|endoftext|>")[0] == want, f"{what}: Model.generate gives sample's text ({py!r})"


@pytest.mark.parametrize("presence,frequency", PENALTIES)
def test_penalties_change_the_text(tiny_gpt2_model, plain, presence, frequency):
    want = sample_text(tiny_gpt2_model, presence, frequency)
    what = f"presence {presence}, frequency {frequency}"
    assert want != plain, f"{what}: the text differs from the unpenalized one ({plain!r})"


@pytest.mark.parametrize("field,value", [("presence_penalty", 2.5), ("frequency_penalty", -3)])
def test_server_refuses_values_outside_openais_range(tiny_server, field, value):
    status, _, got = tiny_server.request("POST", "/v1/completions", {"prompt": PROMPT, field: value})
    msg = got["error"]["message"] if status == 400 else ""
    assert (status == 400 and got["error"]["param"] == field
            and msg.endswith("is out of range: it must be a finite number >= -2 and <= 2")), \
        f"{field} {value}: 400 naming OpenAI's range ({status} {msg!r})"


def test_sample_refuses_in_the_same_words(tiny_gpt2_model):
    r = harness.run("sample", "--model", tiny_gpt2_model, "--prompt", PROMPT, "--presence-penalty", "2.5")
    assert (r.returncode != 0 and "--presence-penalty = 2.5 is out of range: it must be a finite number >= -2 and <= 2"
            in r.stderr), f"sample --presence-penalty 2.5 is refused in the same words ({r.stderr.strip()!r})"
