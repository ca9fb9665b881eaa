"""OpenAI's logit_bias, applied by the shared sampler: /v1/completions
(which once refused it unless {}), `gpt2lab sample --logit-bias ID=BIAS`
and Model.generate(logit_bias={ID: BIAS}) give the same text for the same
seed; +100 all but forces a token, -100 bans the greedy choice; ids outside
the vocabulary and biases outside [-100, 100] are refused. (The adjustment
itself is checked against a hand computation in tests/sample/logit_bias_test.cpp.)

Skips when the Python module is not built or data/gpt2 (the
tokenizer) is missing and CI is not set.
"""

import pytest

import harness

PROMPT = [464, 3773]  # "The economy"
N = 12


def cli(model, *flags):
    r = harness.run("sample", "--model", model, "--prompt-ids", " ".join(map(str, PROMPT)), "--seed", "3",
                    "--max-new-tokens", str(N), "--threads", "1", "--format", "ids", "--quiet", *flags)
    return [int(x) for x in r.stdout.split()] if r.returncode == 0 else r.stderr.strip()


def server(srv, **fields):
    status, _, got = srv.request("POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": N, "seed": 3,
                                                             "logprobs": 0, **fields})
    if status != 200:
        return status, got
    return got["choices"][0]["logprobs"]["tokens"]


@pytest.fixture(scope="module")
def m(gpt2lab_gpt2, tiny_gpt2_model):
    return gpt2lab_gpt2.Model.load(tiny_gpt2_model)


@pytest.fixture(scope="module")
def forced(tiny_gpt2_model):
    return cli(tiny_gpt2_model, "--logit-bias", "1000=100")


@pytest.fixture(scope="module")
def greedy(tiny_gpt2_model):
    return cli(tiny_gpt2_model, "--temperature", "0")


@pytest.fixture(scope="module")
def mixed(tiny_gpt2_model, greedy):
    """(two biases, the tokens sample draws with them)."""
    biases = {1000: 3.5, greedy[0]: -2}
    return biases, cli(tiny_gpt2_model, "--logit-bias", "1000=3.5", "--logit-bias", f"{greedy[0]}=-2")


def test_plus_100_forces_a_token(forced):
    assert forced == [1000] * N, f"--logit-bias 1000=100: every token is 1000 ({forced})"


def test_generate_forced_draws_the_same(m, forced):
    py = m.generate(PROMPT, max_new_tokens=N, seed=3, logit_bias={1000: 100})
    assert py == forced, f"Model.generate(logit_bias={{1000: 100}}) draws the same ({py})"


def test_minus_100_bans_the_greedy_choice(tiny_gpt2_model, greedy):
    banned = cli(tiny_gpt2_model, "--temperature", "0", "--logit-bias", f"{greedy[0]}=-100")
    assert isinstance(banned, list) and banned[0] != greedy[0] and greedy[0] not in banned, \
        f"greedy with its first choice {greedy[0]} at -100: never drawn ({banned})"


def test_two_biases_change_the_tokens(tiny_gpt2_model, mixed):
    assert mixed[1] != cli(tiny_gpt2_model), "the two biases change the tokens drawn"


def test_generate_with_two_biases_draws_samples_tokens(m, mixed):
    biases, want = mixed
    py = m.generate(PROMPT, max_new_tokens=N, seed=3, logit_bias=biases)
    assert py == want, f"Model.generate with two biases draws sample's tokens ({py} / {want})"


def test_server_with_two_biases_gives_samples_tokens(m, tiny_server, mixed, greedy):
    got = server(tiny_server, logit_bias={"1000": 3.5, str(greedy[0]): -2})
    texts = [m.tokenizer.decode([i]) for i in mixed[1]]
    assert got == texts, f"/v1/completions with the same logit_bias gives sample's tokens ({got} / {texts})"


def test_server_refuses_an_id_outside_the_vocabulary(tiny_server):
    status, body = server(tiny_server, logit_bias={"50257": 1})
    assert status == 400 and body["error"]["param"] == "logit_bias" and "[0, 50257)" in body["error"]["message"], \
        f"/v1/completions logit_bias id 50257: 400 ({status} {body})"


def test_server_refuses_a_bias_out_of_range(tiny_server):
    status, body = server(tiny_server, logit_bias={"5": -101})
    assert (status == 400 and body["error"]["message"] == "logit_bias of token 5 = -101 is out of range: it must be"
            " a finite number >= -100 and <= 100"), f"bias -101: 400, in sample's words ({status} {body})"


def test_server_plus_100_draws_only_that_token(m, tiny_server):
    got = server(tiny_server, logit_bias={"1000": 100})
    assert got == [m.tokenizer.decode([1000])] * N, f"/v1/completions logit_bias 1000: 100 draws only 1000 ({got})"


def test_sample_refuses_an_id_outside_the_vocabulary(tiny_gpt2_model):
    refused = cli(tiny_gpt2_model, "--logit-bias", "50257=1")
    assert refused == "gpt2lab: error: logit_bias names token 50257, outside the model's vocabulary of 50257", \
        f"sample --logit-bias 50257=1 is refused ({refused!r})"


def test_sample_refuses_a_bias_out_of_range(tiny_gpt2_model):
    refused = cli(tiny_gpt2_model, "--logit-bias", "5=101")
    assert "logit_bias of token 5 = 101 is out of range" in refused, f"sample --logit-bias 5=101 ({refused!r})"


def test_generate_refuses_a_bias_out_of_range(gpt2lab_gpt2, m):
    with pytest.raises(gpt2lab_gpt2.Error) as e:
        m.generate(PROMPT, max_new_tokens=1, logit_bias={5: 101})
    assert str(e.value) == ("logit_bias of token 5 = 101 is out of range: it must be a finite number >= -100 "
                            "and <= 100"), f"generate(logit_bias={{5: 101}}) is refused in sample's words: {e.value}"
