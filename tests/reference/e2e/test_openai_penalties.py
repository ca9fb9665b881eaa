"""OpenAI's presence_penalty and frequency_penalty, applied by the shared
sampler: /v1/completions (which once refused them unless 0), `gpt2lab
sample --presence-penalty/--frequency-penalty` and Model.generate give the
same text for the same seed, a different one than without them, and refuse
values outside OpenAI's [-2, 2] in the same words. (The adjustment itself
is checked against a hand computation in tests/sample/openai_penalties_test.cpp.)

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


with harness.scratch() as tmp:
    model = os.path.join(tmp, "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    m = gpt2lab.Model.load(model)
    with serve_util.Server(model, "--threads", "1") as srv:
        plain = server(srv)
        # (-2, 2) would leave a token drawn once as it was: 2 * 1 - 2 = 0.
        for presence, frequency in ((0.5, 1.5), (-2, 1), (2, -1)):
            want = cli(model, "--presence-penalty", str(presence), "--frequency-penalty", str(frequency))
            got = server(srv, presence_penalty=presence, frequency_penalty=frequency)
            py = m.generate(PROMPT, max_new_tokens=N, seed=3, presence_penalty=presence, frequency_penalty=frequency,
                            stop_at_eot=True)
            what = f"presence {presence}, frequency {frequency}"
            expect(got == want, f"{what}: /v1/completions gives sample's text ({got!r} / {want!r})")
            expect(py.split("<|endoftext|>")[0] == want, f"{what}: Model.generate gives sample's text ({py!r})")
            expect(want != plain, f"{what}: the text differs from the unpenalized one ({plain!r})")
        for field, value in (("presence_penalty", 2.5), ("frequency_penalty", -3)):
            status, _, got = srv.request("POST", "/v1/completions", {"prompt": PROMPT, field: value})
            msg = got["error"]["message"] if status == 400 else ""
            expect(status == 400 and got["error"]["param"] == field
                   and msg.endswith("is out of range: it must be a finite number >= -2 and <= 2"),
                   f"{field} {value}: 400 naming OpenAI's range ({status} {msg!r})")
    r = harness.run("sample", "--model", model, "--prompt", PROMPT, "--presence-penalty", "2.5")
    expect(r.returncode != 0 and "--presence-penalty = 2.5 is out of range: it must be a finite number >= -2 and <= 2"
           in r.stderr, f"sample --presence-penalty 2.5 is refused in the same words ({r.stderr.strip()!r})")
harness.finish("openai penalties")
