"""The sampling options' one table (sample/options.h): `gpt2lab sample`, the
Python module's Model.generate and `gpt2lab serve`'s /v1/completions refuse
the same out-of-range values, naming the same range in the same words
(top_p below 1e-06 was once taken by the server and refused by the others).

Skips (77) when the Python module is not built or data/gpt2 (the server's
tokenizer) is missing and CI is not set.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402
import serve_util  # noqa: E402

gpt2lab = harness.gpt2lab_module()

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


def main():
    with harness.scratch() as tmp:
        model = os.path.join(tmp, "tiny")
        harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                    "--vocab-size", "50257", "--seed", "5", check=True)
        m = gpt2lab.Model.load(model)
        with serve_util.Server(model, "--threads", "1") as srv:
            for key, flag, field, value, want in CASES:
                r = harness.run("sample", "--model", model, "--prompt-ids", "1", flag, str(value), timeout=60)
                cli = r.stderr.split("error: ", 1)[-1]
                try:
                    m.generate([1], max_new_tokens=1, **{key: value})
                    py = ""
                except gpt2lab.Error as e:
                    py = str(e)
                status, _, got = srv.request("POST", "/v1/completions",
                                             {"prompt": "Hi", "max_tokens": 1, field: value})
                server = got["error"]["message"] if status == 400 else ""
                what = f"{key} = {value!r}"
                expect(r.returncode != 0 and range_named(cli, flag) == want,
                       f"{what}: sample {flag} refuses it naming {want!r} ({cli.strip()!r})")
                expect(range_named(py, key) == want, f"{what}: Model.generate refuses it naming {want!r} ({py!r})")
                expect(status == 400 and range_named(server, field) == want
                       and got["error"]["param"] == field,
                       f"{what}: /v1/completions refuses it (400) naming {want!r} ({status} {server!r})")
            # The lowest top_p all three take.
            r = harness.run("sample", "--model", model, "--prompt-ids", "1", "--top-p", "1e-6", "--max-new-tokens",
                            "1", "--format", "ids", "--quiet", timeout=60)
            expect(r.returncode == 0, f"sample --top-p 1e-6 is taken ({r.stderr.strip()!r})")
            expect(len(m.generate([1], max_new_tokens=1, top_p=1e-6)) == 1, "generate(top_p=1e-6) is taken")
            status, _, got = srv.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 1, "top_p": 1e-6})
            expect(status == 200, f"/v1/completions top_p 1e-6 is taken ({status} {got})")
    harness.finish("sampling ranges")


if __name__ == "__main__":
    main()
