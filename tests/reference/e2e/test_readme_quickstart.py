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
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402


def quick_start():
    """The quick start's commands, continuation lines joined, comments kept."""
    text = open(os.path.join(harness.SOURCE, "README.md"), encoding="utf-8").read()
    block = re.search(r"## Quick start\n+```\w*\n(.*?)```", text, re.S)
    if not block:
        harness.fail("README.md has a quick start code block")
        harness.finish("readme quick start")
    return block.group(1).replace("\\\n", " ").splitlines()


def argv(line):
    """The command's arguments as bash hands them over (quotes, $'..')."""
    r = subprocess.run(["bash", "-c", 'B=gpt2lab; set -- ' + line.split("  #")[0] +
                        '; for a; do printf "%s\\0" "$a"; done'], capture_output=True, text=True, timeout=60)
    expect(r.returncode == 0, f"bash reads {line[:60]!r} ({r.stderr.strip()!r})")
    return r.stdout.split("\0")[:-1]


if not shutil.which("bash"):
    harness.skip("bash is missing")
written, commands = set(), []
for line in quick_start():
    if not line.startswith("$B "):
        continue
    args = argv(line)
    commands.append(args)
    name = args[1]
    reads = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--model"]
    if name == "plot":
        reads += [a for a in args[2:args.index("--out")] if not a.startswith("-")]
    for run in reads:
        expect(run in written, f"`{name}` reads {run}, which an earlier quick-start line writes")
    written.update(args[i + 1] for i, a in enumerate(args[:-1]) if a == "--out")

samples = [a for a in commands if a[1] == "sample"]
if expect(len(samples) == 1, "the quick start samples once"):
    sample = samples[0]
    stop = sample[sample.index("--stop") + 1] if "--stop" in sample else None
    expect(stop == "\n\n", f"sample's --stop reaches the program as a blank line, two newlines (got {stop!r})")
    data = os.environ.get("GPT2LAB_DATA") or os.path.join(harness.SOURCE, "data")
    if not os.path.exists(os.path.join(data, "gpt2")):
        print("note: data/gpt2 (GPT-2's tokenizer) is missing: the sample run is skipped")
    else:
        with harness.scratch() as tmp:
            model = os.path.join(tmp, "tiny")
            harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32",
                        "--block-size", "128", "--vocab-size", "50257", check=True)
            args = sample[2:]
            args[args.index("--model") + 1] = model
            r = harness.run("sample", *args, "--quiet", timeout=120)
            expect(r.returncode == 0 and r.stdout.startswith("The economy") and "\n\n" not in r.stdout[:-1],
                   f"the quick start's sample command runs on a tiny model and stops before a blank line "
                   f"({r.stderr.strip()[-200:]!r})")
harness.finish("readme quick start")
