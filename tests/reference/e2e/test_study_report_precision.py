"""tools/report on a study trained in bf16 (`gpt2lab study --bf16`): the
header says the precision, and each verdict that rests on a trained preset
whose bf16 control did not pass at the study's budget and seeds is marked
in the verdict table (tools/report/precision.py holds the controls'
outcomes, docs/study/README.md the controls). An fp32 study's verdicts are
never marked. The budget's name decides which controls count, so a bf16
study's budget must be the one its name says (tools/report/budgets.json,
held here to gpt2lab's own)."""
import gzip
import json
import os
import shutil
import sys

import pytest

import harness
import synthetic_study as syn

REPORT = os.path.join(harness.SOURCE, "tools", "report")
harness.report_package()
from report import precision  # noqa: E402

MARK = "bf16 without a passed control"


def synthetic_report(tmp, budget):
    """A copy of tools/report whose named budgets are the synthetic
    study's (its runs are tiny, whatever its budget is named): a bf16
    study's budget must be the one its name says."""
    tools = os.path.join(tmp, "tools-" + budget["name"])  # the report reads tools/metrics_file.py too
    if not os.path.isdir(tools):
        shutil.copytree(os.path.dirname(REPORT), tools, ignore=shutil.ignore_patterns("__pycache__"))
        with open(os.path.join(tools, "report", "budgets.json"), "w") as f:
            json.dump({budget["name"]: budget}, f)
    return os.path.join(tools, "report")


def rendered(tmp, name, budget, bf16):
    """The synthetic paper study of every preset, its budget renamed and
    its precision set, reported without figures: the verdict table's rows
    by claim, and the header's precision sentence."""
    out = os.path.join(tmp, name)
    syn.make_study(out, syn.World.paper(presets=syn.PRESETS + ["atlas"]))
    path = os.path.join(out, "study.json")
    with open(path) as f:
        s = json.load(f)
    s["budget"]["name"] = budget
    if bf16:
        s["budget"]["bf16"] = True
    with open(path, "w") as f:
        json.dump(s, f)
    r = harness.command([sys.executable, synthetic_report(tmp, s["budget"]), out, "--no-figures"])
    assert r.returncode == 0, r.stderr
    with open(os.path.join(out, "report.md")) as f:
        md = f.read()
    rows = {}
    for line in md.splitlines():
        cells = line.split(" | ")
        if line.startswith("| ") and len(cells) == 4:
            rows.setdefault(cells[0][2:], cells[2])
    note = next(line for line in md.splitlines() if line.startswith("Precision: "))
    return rows, note


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return str(tmp_path_factory.mktemp("precision"))


def test_bf16_full_marks_the_presets_without_a_passed_control(tmp):
    rows, note = rendered(tmp, "bf16-full", "full", bf16=True)
    # Passed at the full budget with 3 seeds: norm, lr-edge, translation.
    assert "norm (second control: 0 of 14 verdicts changed)" in note, note
    assert "lr-edge (sixth control" in note and "translation (seventh control" in note, note
    # Not passed: atlas (its control changed a verdict); depth and init at
    # 3 seeds, below the seeds their passing controls ran.
    assert "atlas (eighth control: 1 of 3 verdicts changed)" in note, note
    assert "depth (its control ran at 12 seeds, this study has 3)" in note, note
    assert "init (its control ran at 6 seeds, this study has 3)" in note, note
    assert "grad-at-init's gradients at init are fp32" in note and "grad-at-init (" not in note, note
    assert not rows["Pre-LN converges faster (registered rule faster/1)"].startswith(MARK)
    assert not rows["Pre-LN reaches better final performance"].startswith(MARK)
    assert not rows["Pre-LN gives more stable gradients (registered rule stable-gradients/1)"].startswith(MARK)
    assert not rows["Pre-LN translates better than Post-LN without warmup (Xiong et al.) "
                    "(registered rule mt-no-warmup/1)"].startswith(MARK)
    assert rows["DeepNorm trains Post-LN where plain Post-LN does not"].startswith(
        MARK + " (atlas: eighth control: 1 of 3 verdicts changed)")
    assert rows["The residual scale matters more as depth grows (rule scale-depth/2, changed after the runs)"] \
        .startswith(MARK + " (depth: its control ran at 12 seeds")
    # Fluency judges the norm and init presets' samples: init is uncovered.
    fluency = rows["Pre-LN / GPT-2 init generate more fluent text"]
    assert fluency.startswith(MARK + " (init: its control ran at 6 seeds"), fluency
    assert "norm:" not in fluency.split("):")[0]


def test_fp32_and_unknown_budgets(tmp):
    rows, note = rendered(tmp, "fp32-full", "full", bf16=False)
    assert note == "Precision: fp32 throughout."
    assert not any(MARK in numbers for numbers in rows.values())
    rows, note = rendered(tmp, "bf16-tiny", "tiny", bf16=True)
    assert "none of this study's presets" in note and "norm (no bf16 control at the 'tiny' budget)" in note, note
    faster = rows["Pre-LN converges faster (registered rule faster/1)"]
    assert faster.startswith(MARK + " (norm: no bf16 control at the 'tiny' budget)"), faster


def test_the_control_with_the_most_seeds_the_study_reaches_decides():
    assert precision.control("depth", "full", 6) == (False, "fourth control: 1 of 1 verdicts changed at 6 seeds")
    assert precision.control("depth", "full", 11)[0] is False
    assert precision.control("depth", "full", 12) == (True, "ninth control: 0 of 1 verdicts changed at 12 seeds")
    assert precision.control("depth", "full", 20)[0] is True
    assert precision.control("init", "full", 5) == (False, "its control ran at 6 seeds, this study has 5")
    assert precision.control("atlas", "full", 12)[0] is False
    assert precision.control("lr-edge", "quick", 3) == (False, "no bf16 control at the 'quick' budget")


def test_the_named_budgets_are_gpt2labs():
    r = harness.command([harness.TOOL, "budgets"])
    assert r.returncode == 0, r.stderr
    with open(os.path.join(REPORT, "budgets.json")) as f:
        kept = json.load(f)
    assert json.loads(r.stdout) == kept, \
        "tools/report/budgets.json is gpt2lab's budgets (write `gpt2lab_testtool budgets` into it after a change)"


COMMITTED_BF16 = os.path.join(harness.SOURCE, "docs", "study", "controls", "atlas-bf16")


@pytest.mark.parametrize("what,edit,says", [
    # A bf16 study at the full budget renamed quick: its marks changed
    # with the name (and quick renamed full lost them).
    ("renamed", lambda b: b.update(name="quick"),
     "field 'budget.name' is \"quick\" but the budget recorded is not gpt2lab's 'quick'"),
    ("unknown", lambda b: b.update(name="huge"), "field 'budget.name' is \"huge\", not one of gpt2lab's budgets"),
    ("steps", lambda b: b["norm"]["shape"].update(steps=300), "budget.norm.shape.steps is 300 where 'full' has 1500"),
    ("removed", lambda b: b.pop("translation"), "budget.translation."),
])
def test_a_bf16_study_budget_other_than_its_name_is_refused(tmp, what, edit, says):
    out = os.path.join(tmp, "committed-" + what)
    shutil.copytree(COMMITTED_BF16, out)
    path = os.path.join(out, "study.json.gz")
    with gzip.open(path, "rt") as f:
        s = json.load(f)
    edit(s["budget"])
    with gzip.open(path, "wt") as f:
        json.dump(s, f)
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, f"{what}: {r.stderr[-600:]}"


def test_the_committed_bf16_study_passes_as_it_is(tmp):
    out = os.path.join(tmp, "committed")
    shutil.copytree(COMMITTED_BF16, out)
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    assert r.returncode == 0, r.stderr[-600:]
