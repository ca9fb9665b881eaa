"""Every numeric option of every subcommand takes a plain decimal only
(cli/app.cpp's strict check), ranged ones too: an option with a range had
the type name "INT:INT in [a - b]", which the check did not recognise, so
`--seeds 0x10` was taken as 16 and `--seeds abc` was "not in range 3 to
1000". The options are read from each subcommand's --help, so a new one is
covered without a change here."""
import re

import pytest

import harness

COMMANDS = [["init"], ["info"], ["tokenize"], ["prepare"], ["tokenizer", "train"], ["prepare-translation"], ["train"],
            ["eval"], ["score"], ["eval-translation"], ["sample"], ["convert"], ["serve"], ["plot"], ["study"]]
OPTION = re.compile(r"^\s+(?:-\w, )?(--[a-z0-9-]+) (INT|UINT|FLOAT)\b", re.M)


def numeric_options():
    found = []
    for cmd in COMMANDS:
        r = harness.command([harness.BIN, *cmd, "--help"])
        assert r.returncode == 0, f"gpt2lab {' '.join(cmd)} --help: {r.stderr[-200:]}"
        found += [(" ".join(cmd), flag, kind) for flag, kind in OPTION.findall(r.stdout)]
    return found


OPTIONS = numeric_options()


def test_the_help_lists_ranged_numeric_options():
    ranged = [o for o in OPTIONS if o[:2] in (("study", "--seeds"), ("serve", "--port"), ("score", "--chrf-beta"))]
    assert len(ranged) == 3, f"--help's numeric options were not found as expected: {OPTIONS}"


@pytest.mark.parametrize("cmd,flag,kind", OPTIONS, ids=[f"{c} {f}" for c, f, _ in OPTIONS])
def test_non_decimal_numbers_are_refused_as_such(cmd, flag, kind):
    for bad in ("abc", "0x10", " 4", "", "4x"):
        r = harness.command([harness.BIN, *cmd.split(), flag, bad])
        assert r.returncode != 0, f"{cmd} {flag} {bad!r} was accepted"
        assert "is not a decimal" in r.stderr and "not in range" not in r.stderr, \
            f"{cmd} {flag} {bad!r}: {r.stderr.strip()[-200:]}"
