"""README.md's quick start does what it says, as the shell reads it: every
run a command reads (--model, plot's runs) is one an earlier line of the
block writes (--out), and sample's --stop reaches the program as the blank
line it means (a "\\n\\n" in double quotes arrives as four characters,
which generated text never holds). Then that sample command, pointed at a
tiny model, runs and prints no blank line (needs data/gpt2, else skipped
with a note).
"""
import os
import re
import shutil
import subprocess

import pytest

import harness


def quick_start():
    """The quick start's commands, continuation lines joined, comments kept."""
    text = open(os.path.join(harness.SOURCE, "README.md"), encoding="utf-8").read()
    block = re.search(r"## Quick start\n+```\w*\n(.*?)```", text, re.S)
    assert block, "README.md has a quick start code block"
    return block.group(1).replace("\\\n", " ").splitlines()


def argv(line):
    """The command's arguments as bash hands them over (quotes, $'..')."""
    r = subprocess.run(["bash", "-c", 'B=gpt2lab; set -- ' + line.split("  #")[0] +
                        '; for a; do printf "%s\\0" "$a"; done'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"bash reads {line[:60]!r} ({r.stderr.strip()!r})"
    return r.stdout.split("\0")[:-1]


@pytest.fixture(scope="module")
def commands():
    """The quick start's gpt2lab commands, as bash hands them over."""
    if not shutil.which("bash"):
        pytest.skip("bash is missing")
    return [argv(line) for line in quick_start() if line.startswith("$B ")]


def test_every_run_read_is_written_earlier(commands):
    written = set()
    for args in commands:
        name = args[1]
        reads = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model"]
        if name == "plot":
            reads += [a for a in args[2:args.index("--out")] if not a.startswith("-")]
        for run in reads:
            assert run in written, f"`{name}` reads {run}, which an earlier quick-start line writes"
        written.update(args[i + 1] for i, a in enumerate(args[:-1]) if a == "--out")


@pytest.fixture(scope="module")
def sample(commands):
    samples = [a for a in commands if a[1] == "sample"]
    assert len(samples) == 1, "the quick start samples once"
    return samples[0]


def test_stop_reaches_the_program_as_a_blank_line(sample):
    stop = sample[sample.index("--stop") + 1] if "--stop" in sample else None
    assert stop == "\n\n", f"sample's --stop reaches the program as a blank line, two newlines (got {stop!r})"


def test_sample_command_stops_before_a_blank_line(sample, tmp_path):
    data = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
    if not os.path.exists(os.path.join(data, "gpt2")):
        pytest.skip("data/gpt2 (GPT-2's tokenizer) is missing: the sample run is skipped")
    model = os.path.join(tmp_path, "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32",
                "--block-size", "128", "--vocab-size", "50257", check=True)
    args = sample[2:]
    args[args.index("--model") + 1] = model
    r = harness.run("sample", *args, "--quiet", timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("The economy") and "\n\n" not in r.stdout[:-1], \
        (f"the quick start's sample command runs on a tiny model and stops before a blank line "
         f"({r.stderr.strip()[-200:]!r})")
