"""tools/report's fluency measure: the verdict on "Pre-LN / GPT-2 init
generate more fluent text" (verdicts.fluency_verdict, rule fluency/1) flips
between its values when the judge NLLs behind it change; the judge's sanity
check (real val text < unigram sampler < shuffled val text, runs that left
the unigram plateau below runs that did not) passes, fails (and then the
verdict is not tested) or is not checkable; settings where neither side
left the plateau are left out; evidence.fluency_inputs() reads a study's
fluency records; and the report's Fluency section shows it all, from
synthetic study folders (synthetic_study.py)."""
import copy
import json
import os
import sys

import harness
import synthetic_study as syn

REPORT = os.path.join(harness.SOURCE, "tools", "report")  # a folder: python3 tools/report OUT

# The report package, imported as `report` the way its entry point does.
harness.report_package()
from report import evidence, verdicts as V  # noqa: E402
from report.load import Study  # noqa: E402

C, N, X, T, M = V.CONFIRMED, V.NOT_OBSERVED, V.CONTRADICTED, V.NOT_TESTED, V.MIXED
CAL = {"val_text_nll": 4.0, "unigram_sampler_nll": 6.8, "shuffled_val_nll": 8.6}


def around(mean, sd=0.02):
    """Three seeds with the given mean and sample sd."""
    return [mean - sd, mean, mean + sd]


def runs(trained=5.5, stuck=6.9):
    """The sanity check's runs: three that left the plateau, three that did not."""
    return [{"nll": trained, "left": True}] * 3 + [{"nll": stuck, "left": False}] * 3


def norm_cells(pre, post, left_pre=3, left_post=3, seeds=3):
    """Four matched (warmup, lr) settings with the given mean NLLs (a number,
    or a function of the setting's index)."""
    f = (lambda x, k: x(k) if callable(x) else x)
    return [{"setting": f"setting {k}", "pre": around(f(pre, k))[:seeds], "post": around(f(post, k))[:seeds],
             "left_pre": f(left_pre, k), "seeds_pre": seeds, "left_post": f(left_post, k), "seeds_post": seeds}
            for k in range(4)]


def init_cells(gpt2, rivals, left=None, seeds=3):
    """gpt2 against each rival under Pre-LN; left: {scheme: seeds that left
    the plateau} (default: every seed)."""
    left = left or {}
    return [{"norm": "pre", "rival": name, "gpt2": around(gpt2)[:seeds], "other": around(x)[:seeds],
             "left_gpt2": left.get("gpt2", seeds), "seeds_gpt2": seeds, "left_other": left.get(name, seeds),
             "seeds_other": seeds} for name, x in rivals.items()]


def fl(norm=(), init=(), calibration=CAL, judged=None, **kw):
    return dict({"calibration": calibration, "runs": runs() if judged is None else judged, "norm": list(norm),
                 "init": list(init), "why": {}}, **kw)


RIVALS = {"zero": 6.9, "normal": 5.9, "xavier": 6.0, "he": 6.1}


# ---------------------------------------------------------------- the sanity check


def test_the_sanity_check():
    state, checks = V.fluency_sanity(CAL, runs())
    assert (state == V.PASSES and [s for s, _ in checks] == [V.PASSES, V.PASSES] and
            "real val text 4.000, the unigram sampler 6.800, shuffled val text 8.600" in checks[0][1] and
            "5.500 over the 3 runs that left the unigram plateau, below 6.900 over the 3 that did not"
            in checks[1][1]), \
        f"sanity: val text < unigram sampler < shuffled, trained runs below plateau runs -> passes ({checks})"
    state, checks = V.fluency_sanity(dict(CAL, shuffled_val_nll=3.5), runs())
    assert (state == V.FAILS and checks[0][0] == V.FAILS and
            "it ranks shuffled val text < real val text < the unigram sampler" in checks[0][1]), \
        f"sanity: shuffled text ranked better than real text -> fails, the order it gives is named ({checks[0][1]})"
    state, checks = V.fluency_sanity(dict(CAL, unigram_sampler_nll=9.0), runs())
    assert state == V.FAILS, "sanity: the unigram sampler ranked below shuffled text -> fails (the order is strict)"
    state, checks = V.fluency_sanity(CAL, runs(trained=7.0, stuck=6.9))
    assert state == V.FAILS and checks[0][0] == V.PASSES and checks[1][0] == V.FAILS and "not below" in checks[1][1], \
        "sanity: runs that left the plateau scored worse than runs on it -> fails"
    state, checks = V.fluency_sanity(CAL, [{"nll": 5.5, "left": True}] * 4)
    assert (state == V.PASSES and checks[1][0] == V.NOT_CHECKABLE and
            "every judged run left the unigram plateau" in checks[1][1]), \
        "sanity: no plateau runs -> the run check is not checkable, the calibration still passes"
    state, checks = V.fluency_sanity(CAL, [{"nll": 6.9, "left": False}] * 4)
    assert checks[1][0] == V.NOT_CHECKABLE and "no judged run left the unigram plateau" in checks[1][1], \
        "sanity: no run left the plateau -> the run check is not checkable"
    state, checks = V.fluency_sanity(None, [{"nll": 5.5, "left": True}])
    assert state == V.NOT_CHECKABLE and checks[0][0] == V.NOT_CHECKABLE and checks[1][0] == V.NOT_CHECKABLE, \
        "sanity: no calibration and no plateau runs -> not checkable"
    state, _ = V.fluency_sanity({"val_text_nll": 4.0}, runs())
    assert state == V.PASSES, "sanity: a calibration missing a reference is not checkable; the runs decide (passes)"


# ---------------------------------------------------------------- the verdict flips


def test_the_verdict_flips():
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9), init_cells(5.5, RIVALS)))
    assert (v.verdict == C and "Pre-LN lower in 4, higher in 0 of 4 settings [confirmed]" in v.numbers and
            "GPT-2 init lower in 4, higher in 0 of 4 comparisons [confirmed]" in v.numbers and
            "judge sanity check passes (calibration: passes; runs off vs on the plateau: passes)" in v.numbers), \
        f"Pre-LN and GPT-2 init both lower judge NLL -> confirmed ({v.numbers})"
    v = V.fluency_verdict(fl(norm_cells(5.9, 5.5), init_cells(7.0, RIVALS)))
    assert (v.verdict == X and "Pre-LN lower in 0, higher in 4 of 4 settings [contradicted]" in v.numbers and
            "GPT-2 init lower in 0, higher in 4 of 4 comparisons [contradicted]" in v.numbers), \
        f"Post-LN and every other scheme lower -> contradicted ({v.numbers})"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.52), init_cells(5.9, {k: 5.91 for k in RIVALS})))
    assert (v.verdict == N and "[not observed at this scale]" in v.numbers and "within seed noise" in " ".join(
            v.details["fluency"])), \
        f"differences of 0.01-0.02 with sd 0.02 -> not observed ({v.numbers})"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9), init_cells(7.0, RIVALS)))
    assert v.verdict == M and "[confirmed]" in v.numbers and "[contradicted]" in v.numbers, \
        "Pre-LN more fluent, GPT-2 init less -> mixed, each measure's verdict shown"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9)))
    assert v.verdict == C and "no init run of gpt2 and another plain scheme [not tested]" in v.numbers, \
        "norm alone (no init runs) -> the norm measure decides: confirmed"
    v = V.fluency_verdict(fl(norm_cells(5.5, lambda k: 5.9 if k < 2 else 5.5)))
    assert v.verdict == N and "Pre-LN lower in 2, higher in 0 of 4 settings" in v.numbers, \
        "Pre-LN lower in 2 of 4 settings (not more than half) -> not observed (combine_settings)"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9, seeds=2), init_cells(5.5, RIVALS, seeds=2)))
    assert v.verdict == T and "fewer than 3 seeds per setting" in v.numbers, "two seeds per setting -> not tested"
    v = V.fluency_verdict(fl(judged=[]))
    assert v.verdict == T and "no run has fluency records" in v.numbers, "no fluency records -> not tested"
    v = V.fluency_verdict({}, "init not run")
    assert v.verdict == T and v.numbers == "init not run", "no input at all -> not tested, with the reason given"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9), init_cells(5.5, RIVALS),
                             calibration=dict(CAL, shuffled_val_nll=3.5)))
    assert (v.verdict == T and v.numbers.startswith("the judge's sanity check fails: Calibration fails") and
            "Pre-LN lower" not in v.numbers), \
        f"the data would confirm, but shuffled text ranks better than real text -> not tested ({v.numbers})"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9), init_cells(5.5, RIVALS), judged=runs(trained=7.0, stuck=6.9)))
    assert v.verdict == T and "Runs fail" in v.numbers, \
        "plateau runs ranked more fluent than trained runs -> not tested"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9), judged=[{"nll": 5.5, "left": True}] * 6))
    assert v.verdict == C and "runs off vs on the plateau: not checkable" in v.numbers, \
        "no plateau runs: the run check is not checkable, said so, and the verdict stands"


# ---------------------------------------------------------------- plateau settings are left out


def test_plateau_settings_are_left_out():
    # Settings 0 and 1: no seed of either side left the plateau (their NLLs say
    # Post-LN is better: two plateau models, left out); 2 and 3: Pre-LN better.
    cells = norm_cells(lambda k: 6.9 if k < 2 else 5.5, lambda k: 6.5 if k < 2 else 5.9, left_pre=lambda k: 0 if k < 2
                       else 3, left_post=lambda k: 0 if k < 2 else 3)
    v = V.fluency_verdict(fl(cells))
    assert (v.verdict == C and "Pre-LN lower in 2, higher in 0 of 2 settings (2 of 4 settings left out: neither side "
            "left the unigram plateau)" in v.numbers and
            any("Left out of the fluency comparisons" in x and "Pre-LN vs Post-LN, setting 0; Pre-LN vs Post-LN, "
                "setting 1" in x for x in v.details["fluency"])), \
        f"settings where neither side trains are left out and named ({v.numbers})"
    v = V.fluency_verdict(fl(norm_cells(6.9, 6.5, left_pre=0, left_post=0)))
    assert (v.verdict == T and "every setting left out (4): neither side left the unigram plateau [not tested]"
            in v.numbers), \
        "every setting on the plateau on both sides -> not tested, said why"
    v = V.fluency_verdict(fl(norm_cells(5.5, 6.9, left_post=0)))
    assert v.verdict == C and "seeds that left the unigram plateau: 3/3 vs 0/3" in v.details["fluency"][2], \
        "Pre-LN trains where Post-LN stays on the plateau: compared (one side trains), and the plateau counts shown"
    v = V.fluency_verdict(fl(init=init_cells(5.5, RIVALS, left={"zero": 0, "gpt2": 3})))
    assert v.verdict == C and "GPT-2 init lower in 4, higher in 0 of 4 comparisons" in v.numbers, \
        "gpt2 against a zero init that stays on the plateau is compared (gpt2's seeds trained)"


# ---------------------------------------------------------------- the rule is registered


def test_the_rule_is_registered():
    table = V.rules_table()
    assert (table["fluency"]["id"] == "fluency/1" and V.RULE_BY_ID["fluency/1"]["function"] == "fluency_verdict" and
            "fluency/1" in V.RULE_FUNCTIONS and V.CLAIM_SECTIONS["fluency"] == ("fluency",) and
            V.registered_rules({})["fluency"] == "fluency/1"), \
        "rule fluency/1 is declared, computable and registered with a study's rules"
    v = V.fluency_verdict(fl(norm_cells(5.5, 5.9), unregistered=True))
    assert v.verdict == C and "rule fluency/1 was declared after this study was created" in v.numbers, \
        "a study whose registered rules lack fluency/1 says the rule came after it"


# ---------------------------------------------------------------- from study folders


def test_from_study_folders(tmp):
    def study(name, world):
        out = os.path.join(tmp, name)
        syn.make_study(out, world)
        st = Study(out)
        return out, st, {v.key: v for v in V.evaluate(evidence.gather(st), V.registered_rules(st.s))}["fluency"]

    out, st, v = study("paper", syn.World.paper(presets=["norm", "init", "lr-edge"]))
    f = evidence.fluency_inputs(st)
    assert (v.verdict == C and len(f["norm"]) == 6 and len(f["init"]) == 8 and
            {c["rival"] for c in f["init"]} == {"zero", "normal", "xavier", "he"} and
            all(r["preset"] in ("norm", "init") for r in f["runs"]) and len(f["runs"]) == 36 + 36), \
        "paper: confirmed; 6 matched norm settings, gpt2 against each plain scheme (no +scale, no lr-edge probe)"
    pre = [c for c in f["norm"] if c["setting"] == "no warmup, lr 1e-3"][0]
    assert pre["left_pre"] == 3 and pre["left_post"] == 0 and abs(pre["post"][0] - 7.04) < 1e-9, \
        "fluency_inputs: a setting's per-seed NLLs and how many seeds left the plateau"
    _, _, v = study("against", syn.World.against(presets=["norm", "init"]))
    assert v.verdict == X, f"against: Post-LN and the other schemes more fluent -> contradicted ({v.numbers})"
    _, _, v = study("noise", syn.World.noise(presets=["norm", "init"]))
    assert v.verdict == N, f"noise: within seed noise -> not observed ({v.numbers})"
    _, st, v = study("v2", syn.World.paper(presets=["norm", "init"], judge=None))
    assert v.verdict == T and "no run has fluency records" in v.numbers and not evidence.fluency_inputs(st)["runs"], \
        "a study without fluency records (v2) -> not tested"
    _, _, v = study("no-judged-preset", syn.World.paper(presets=["lr-edge", "translation"]))
    assert v.verdict == T and "no finished run of a preset that draws fluency samples" in v.numbers, \
        "a study of lr-edge and translation only (they draw no fluency samples) -> not tested, said why"
    _, _, v = study("bad-judge", syn.World.paper(presets=["norm", "init"], judge_calibration=dict(
        syn.JUDGE, shuffled_val_nll=4.0)))
    assert v.verdict == T and "sanity check fails" in v.numbers, "a judge that prefers shuffled text -> not tested"
    # Post-LN diverges in every seed: no fluency score, no comparison.
    world = syn.World.paper(presets=["norm"], norm_run=lambda norm, wf, level, i: (
        (4.0 + syn.jitter(i, 0.02), 6 + i) if norm == "pre" else (None, 30)))
    _, st, v = study("diverged", world)
    f = evidence.fluency_inputs(st)
    assert (v.verdict == T and all(c["post"] == [None] * 3 for c in f["norm"]) and
            "fewer than 3 seeds" in v.numbers), \
        "diverged runs have no judge score: no comparison -> not tested"

    # The report: the verdict row, the Fluency section, its calibration and examples.
    out, _, _ = study("report", syn.World.paper(presets=["norm", "init"]))
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    md = open(os.path.join(out, "report.md")).read() if r.returncode == 0 else ""
    sec = md[md.index("## Fluency"):md.index("## Divergence")] if "## Fluency" in md else ""
    assert r.returncode == 0 and f"| {V.CLAIM_TEXT['fluency']} | confirmed |" in md and "[fluency](#fluency)" in md, \
        "report: the verdict row, linked to the Fluency section" + ("" if r.returncode == 0 else r.stderr[-2000:])
    assert ("real val text 4.500, samples of the unigram distribution" in sec and "shuffled 8.500" in sec and
            "Sanity check: passes." in sec), \
        "report: the judge's calibration line and the sanity check"
    assert ("| norm | pre-LN, no warmup, lr 1e-3 | 3 | 3/3 | 6.000 ± 0.020 | 0.050 | 1.00 | 4.000 ± 0.020 | 0 |" in sec
            and "| norm | post-LN, no warmup, lr 1e-3 | 3 | 0/3 | 7.050 ± 0.010 |" in sec), \
        "report: per setting, seeds that left the plateau, judge NLL mean ± sd, rep-4, distinct-2"
    assert "distinct-2 (mean; not a fluency measure)" in sec and "not a measure of fluency" in md, \
        "report: distinct-n is shown, and said not to measure fluency"
    assert ("| The state of the Union |  sample 0 at 5.98 | 5.88 | 0.00 |" in sec and "lowest judge NLL" in sec and
            "on the plateau" in sec), \
        "report: example samples of the most and least fluent settings"
    v = [x for x in V.evaluate(evidence.gather(Study(out))) if x.key == "fluency"][0]
    assert v.line() in sec and "[fluency] " in md, "report: the section prints the table's verdict; the summary too"
    assert "never left the unigram plateau in any seed" in sec and "init zero (init)" in sec, \
        "report: settings that never left the plateau are named"

    # Registered rules without fluency/1 (a study created before the rule).
    sj = os.path.join(out, "study.json")
    data = json.load(open(sj))
    data["rules"] = {k: r for k, r in copy.deepcopy(V.rules_table()).items() if k != "fluency"}
    with open(sj, "w") as fh:
        json.dump(data, fh)
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    md = open(os.path.join(out, "report.md")).read() if r.returncode == 0 else ""
    assert r.returncode == 0 and "rule fluency/1 was declared after this study was created" in md, \
        "report: a study whose registered rules lack fluency/1 says so in the verdict"

    # A study without fluency records: the section says so.
    out, _, _ = study("report-v2", syn.World.paper(presets=["norm"], judge=None))
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    md = open(os.path.join(out, "report.md")).read() if r.returncode == 0 else ""
    assert (r.returncode == 0 and "No run of this study has fluency samples" in md and
            f"| {V.CLAIM_TEXT['fluency']} | not tested | no run has fluency records" in md), \
        "report: a study without fluency records -> the section says so, the verdict is not tested"
