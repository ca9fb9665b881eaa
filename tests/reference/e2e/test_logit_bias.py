"""OpenAI's logit_bias, applied by the shared sampler: /v1/completions
(which once refused it unless {}), `gpt2lab sample --logit-bias ID=BIAS`
and Model.generate(logit_bias={ID: BIAS}) give the same text for the same
seed; +100 all but forces a token, -100 bans the greedy choice; ids outside
the vocabulary and biases outside [-100, 100] are refused. (The adjustment
itself is checked against a hand computation in tests/sample/logit_bias_test.cpp.)

Skips (77) when the Python module is not built or data/gpt2 (the
tokenizer) is missing and CI is not set.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402
import serve_util  # noqa: E402

gpt2lab = harness.gpt2lab_module()

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


with harness.scratch() as tmp:
    model = os.path.join(tmp, "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    m = gpt2lab.Model.load(model)
    tok = m.tokenizer
    forced = cli(model, "--logit-bias", "1000=100")
    expect(forced == [1000] * N, f"--logit-bias 1000=100: every token is 1000 ({forced})")
    py = m.generate(PROMPT, max_new_tokens=N, seed=3, logit_bias={1000: 100})
    expect(py == forced, f"Model.generate(logit_bias={{1000: 100}}) draws the same ({py})")
    greedy = cli(model, "--temperature", "0")
    banned = cli(model, "--temperature", "0", "--logit-bias", f"{greedy[0]}=-100")
    expect(isinstance(banned, list) and banned[0] != greedy[0] and greedy[0] not in banned,
           f"greedy with its first choice {greedy[0]} at -100: never drawn ({banned})")
    mixed = ["--logit-bias", "1000=3.5", "--logit-bias", f"{greedy[0]}=-2"]
    want = cli(model, *mixed)
    expect(want != cli(model), "the two biases change the tokens drawn")
    py = m.generate(PROMPT, max_new_tokens=N, seed=3, logit_bias={1000: 3.5, greedy[0]: -2})
    expect(py == want, f"Model.generate with two biases draws sample's tokens ({py} / {want})")
    with serve_util.Server(model, "--threads", "1") as srv:
        got = server(srv, logit_bias={"1000": 3.5, str(greedy[0]): -2})
        texts = [tok.decode([i]) for i in want]
        expect(got == texts, f"/v1/completions with the same logit_bias gives sample's tokens ({got} / {texts})")
        status, body = server(srv, logit_bias={"50257": 1})
        expect(status == 400 and body["error"]["param"] == "logit_bias" and "[0, 50257)" in body["error"]["message"],
               f"/v1/completions logit_bias id 50257: 400 ({status} {body})")
        status, body = server(srv, logit_bias={"5": -101})
        expect(status == 400 and body["error"]["message"] == "logit_bias of token 5 = -101 is out of range: it must be"
               " a finite number >= -100 and <= 100", f"bias -101: 400, in sample's words ({status} {body})")
        got = server(srv, logit_bias={"1000": 100})
        expect(got == [tok.decode([1000])] * N, f"/v1/completions logit_bias 1000: 100 draws only 1000 ({got})")
    refused = cli(model, "--logit-bias", "50257=1")
    expect(refused == "gpt2lab: error: logit_bias names token 50257, outside the model's vocabulary of 50257",
           f"sample --logit-bias 50257=1 is refused ({refused!r})")
    refused = cli(model, "--logit-bias", "5=101")
    expect("logit_bias of token 5 = 101 is out of range" in refused, f"sample --logit-bias 5=101 ({refused!r})")
    try:
        m.generate(PROMPT, max_new_tokens=1, logit_bias={5: 101})
        expect(False, "generate(logit_bias={5: 101}) is refused")
    except gpt2lab.Error as e:
        expect(str(e) == "logit_bias of token 5 = 101 is out of range: it must be a finite number >= -100 and <= 100",
               f"generate(logit_bias={{5: 101}}) is refused in sample's words: {e}")
harness.finish("logit bias")
