"""tools/report's study v3 measures: the classes of an exhaustive lr-edge
scan's probes and the two edges read off it (stability: the highest lr that
does not diverge; trainability: the lowest that leaves the plateau), with
bounds where the grid does not reach an edge; the convergence measure on
the validation curve (faster/2), which depends on the model and says "not
reached" for a run on the plateau; and no-warmup/2's warmup-benefit measure.
Each rule is flipped with synthetic inputs; the convergence measure is also
computed on two real runs that saw the same batches."""
import json
import math
import os

import pytest

import harness

REPORT = os.path.join(harness.SOURCE, "tools", "report")
harness.report_package()
from report import evidence as E, verdicts as V  # noqa: E402
from report.stats import Bound  # noqa: E402

C, N, X, T, M = V.CONFIRMED, V.NOT_OBSERVED, V.CONTRADICTED, V.NOT_TESTED, V.MIXED
GRID = [2.5e-5 * 2 ** k for k in range(8)]


class FakeStudy:
    """What probe_class reads of a Study: the unigram baseline and spikes."""
    unigram = 6.0

    @staticmethod
    def spikes(r):
        return r.get("outcome", {}).get("spikes")

    @staticmethod
    def val_loss(r):
        return r["outcome"].get("val_loss") if r.get("status") == "completed" else None


def probe(cls):
    """A finished probe run of the given class (val loss vs the plateau
    limit 6.0 − 0.1, spikes, status)."""
    if cls == "diverged":
        return {"status": "diverged", "outcome": {}}
    val = 6.5 if cls == "stuck" else 5.0
    return {"status": "completed", "outcome": {"val_loss": val, "spikes": 1 if cls == "spiked" else 0}}


def scan(classes):
    st = FakeStudy()
    got = [(lr, E.probe_class(st, probe(c))) for lr, c in zip(GRID, classes)]
    e = {"exhaustive": True, "complete": True}
    return got, E.stability_log2(e, got), E.trainability_log2(e, got)


# ------------------------------------------------------------ probe classes


def test_probe_classes():
    got, stab, train = scan(["stuck", "stuck", "trained", "trained", "spiked", "diverged", "trained", "diverged"])
    assert [c for _, c in got] == ["stuck", "stuck", "trained", "trained", "spiked", "diverged", "trained",
                                   "diverged"], \
        "probe classes: diverged, stuck on the plateau, spiked and recovered, trained"
    assert stab == math.log2(GRID[4]), "stability edge: the probe below the first divergence (spiked counts as stable)"
    assert train == math.log2(GRID[2]), "trainability edge: the lowest probe that left the plateau"
    _, stab, train = scan(["stuck"] * 8)
    assert stab == Bound(">", math.log2(GRID[-1])) and train == Bound(">", math.log2(GRID[-1])), \
        "nothing diverged and nothing trained: both edges are '≥ the top' bounds, never numbers"
    _, stab, train = scan(["trained"] + ["diverged"] * 7)
    assert stab == math.log2(GRID[0]), \
        "the lowest probe trained and the next diverged: the stability edge is that lowest probe"
    _, stab, train = scan(["diverged"] * 8)
    assert stab == Bound("<", math.log2(GRID[0])) and train == Bound(">", math.log2(GRID[-1])), \
        "the lowest probe diverged: stability '< lowest'; trainability not reached on the grid"
    _, stab, train = scan(["trained"] * 8)
    assert stab == Bound(">", math.log2(GRID[-1])) and train == Bound("<", math.log2(GRID[0])), \
        "everything trained: stability '≥ top', trainability '< lowest'"
    assert (E.stability_log2({"exhaustive": False, "complete": True}, got) is None and
            E.stability_log2({"exhaustive": True, "complete": False}, got) is None), \
        "a bisection search (study v2) or an unfinished scan has no two edges"

    # Post-LN's stability edge censored above the grid, Pre-LN's inside it: the
    # comparison is decided only where the bound decides it.
    d = V.Diff([math.log2(GRID[5])] * 3, [Bound(">", math.log2(GRID[7]))] * 3)
    assert d.resolved and d.sign < 0, \
        "Pre-LN's edge at 8e-4 vs Post-LN's '≥ 3.2e-3': the bound decides (Post-LN higher)"
    d = V.Diff([math.log2(GRID[7])] * 3, [Bound(">", math.log2(GRID[5]))] * 3)
    assert not d.resolved, "Pre-LN's 3.2e-3 vs Post-LN's '≥ 8e-4': not resolved, the bound does not decide"


# ------------------------------------------------------------ convergence on the validation curve


def times(pre, post):
    return [{"setting": "no warmup, lr 1e-3", "pre": pre, "post": post, "reached_pre": 3, "reached_post": 3}]


def test_convergence_on_the_validation_curve():
    curve = [(0, 8.3), (100, 7.0), (200, 6.0), (300, 5.2)]
    tokens, ok = E.tokens_to_val(curve, 5.5, 512)
    assert ok and abs(tokens - (200 + 0.5 / 0.8 * 100) * 512) < 1e-9, \
        "tokens to the validation target: interpolated between evaluations (262.5 steps × 512)"
    tokens, ok = E.tokens_to_val([(0, 8.3), (100, 6.6), (200, 6.55)], 5.5, 512)
    assert not ok and tokens == 200 * 512, "a run that stays on the plateau: not reached, with the tokens it trained"
    assert E.censored_tokens((200 * 512, False)) == Bound(">", 200 * 512), "not reached enters comparisons as a bound"

    assert V.faster_val_verdict(times([1000, 1010, 990], [2000, 2020, 1980])).verdict == C, \
        "faster/2: Pre-LN reaches the validation target with fewer tokens -> confirmed"
    assert V.faster_val_verdict(times([2000, 2020, 1980], [1000, 1010, 990])).verdict == X, \
        "faster/2: Post-LN with fewer tokens -> contradicted"
    assert V.faster_val_verdict(times([1000, 1200, 900], [1100, 1000, 950])).verdict == N, \
        "faster/2: within seed noise -> not observed"
    t = times([1000, 1010, 990], [Bound(">", 4000)] * 3)
    t[0]["reached_post"] = 0
    assert V.faster_val_verdict(t).verdict == C, \
        "faster/2: Post-LN never reached it (bounds beyond Pre-LN's) -> confirmed"
    t = times([Bound(">", 4000)] * 3, [Bound(">", 4000)] * 3)
    t[0]["reached_pre"] = t[0]["reached_post"] = 0
    assert V.faster_val_verdict(t).verdict == T, "faster/2: neither reached it anywhere -> not tested"
    assert V.faster_val_verdict(times([1000, 1010], [2000, 2020])).verdict == T, "faster/2: 2 seeds -> not tested"


# ------------------------------------------------------------ warmup benefit (no-warmup/2)


def finals(pre0, prew, post0, postw):
    out = []
    for norm, w0, ww in (("pre", pre0, prew), ("post", post0, postw)):
        out.append({"norm": norm, "warmup_fraction": 0.0, "lr": 1e-3, "values": w0, "setting": ""})
        out.append({"norm": norm, "warmup_fraction": 0.25, "lr": 1e-3, "values": ww, "setting": ""})
    return out


def test_warmup_benefit_no_warmup_2():
    same, lower = [5.0, 5.01, 4.99], [4.5, 4.51, 4.49]
    assert V.warmup_benefit_verdict(finals(same, same, same, lower))[0] == C, "warmup helps Post-LN only -> confirmed"
    assert V.warmup_benefit_verdict(finals(same, lower, same, lower))[0] == X, \
        "warmup resolvedly helps Pre-LN (the v2 finding at lr 4e-3) -> contradicted"
    assert V.warmup_benefit_verdict(finals(same, same, same, same))[0] == N, "warmup helps neither -> not observed"
    assert V.warmup_benefit_verdict(finals(same[:2], same[:2], same[:2], lower[:2]))[0] == T, "2 seeds -> not tested"
    edges = [{"warmup_fraction": 0.0, "clip": 0.0, "pre": [-9.0, -9.0, -9.0], "post": [-12.0, -12.1, -11.9]}]
    v = V.no_warmup_verdict_v2(edges, [], finals(same, lower, same, lower))
    assert v.verdict == M and "[confirmed]" in v.numbers and "[contradicted]" in v.numbers, \
        "no-warmup/2: the edge confirms, warmup helps Pre-LN -> mixed, each measure's verdict shown"
    v = V.no_warmup_verdict_v2(edges, [], finals(same, same, same, lower))
    assert v.verdict == C, "no-warmup/2: every computable measure confirms -> confirmed"
    assert "no-warmup/2" in V.RULE_BY_ID and "faster/2" in V.RULE_BY_ID and V.RULES["faster"]["id"] == "faster/2", \
        "the new rules are registered as new versions; the old ones stay computable"


# ------------------------------------------------------------ the best lr of a sweep


def sweep(best_lr_pre, best_lr_post):
    out = []
    for norm, best in (("pre", best_lr_pre), ("post", best_lr_post)):
        for lr in (5e-4, 1e-3, 2e-3, 4e-3, 8e-3):
            v = 4.5 if lr == best else 5.0
            out.append({"norm": norm, "warmup_fraction": 0.25, "lr": lr, "setting": f"lr {lr}",
                        "values": [v - 0.01, v, v + 0.01] if norm == "pre" else [v + 0.09, v + 0.1, v + 0.11]})
    return out


def test_the_best_lr_of_a_sweep():
    v = V.better_final_verdict(sweep(2e-3, 1e-3))
    assert v.verdict == C and "edge of its sweep" not in v.numbers, "better-final: both bests inside their sweeps"
    v = V.better_final_verdict(sweep(8e-3, 1e-3))
    assert v.verdict == C and "Pre-LN's best lr is at the edge of its sweep" in v.numbers, \
        "better-final: a best lr at the sweep's edge is said to be one (a better one may lie beyond)"


# ------------------------------------------------------------ init's Post-LN selection in the report

from report.sections import init as init_section  # noqa: E402


class WithSelection:
    def __init__(self, sel):
        self.s = {"selections": {"init-post": sel}} if sel is not None else {}


from report.sections import atlas as atlas_section  # noqa: E402


# ReZero against each rival: the split the majority hides is shown.
def cell(tokens):
    return {"tokens": tokens, "target": 6.0}


def test_init_s_post_ln_selection_in_the_report():
    cands = [{"lr": 5e-4, "seeds": 3, "trained": 1, "mean_val_loss": 6.4},
             {"lr": 1e-3, "seeds": 3, "trained": 3, "mean_val_loss": 5.2}]
    f = init_section.selection_findings(WithSelection({"lr": 1e-3, "warmup_fraction": 0.25, "rule": "R",
                                                       "candidates": cands}))
    assert (len(f) == 1 and "train at lr 1e-3 with 25% warmup" in f[0]
            and "lr 5e-4: 1/3 seeds left the plateau" in f[0]), \
        "init: the report says where Post-LN's arms train and which lrs were candidates"
    f = init_section.selection_findings(WithSelection({"lr": None, "candidates": cands[:1]}))
    assert len(f) == 1 and "no scheme is compared under Post-LN" in f[0], \
        "init: no lr trains -> the report says no scheme is compared under Post-LN, and why"
    assert init_section.selection_findings(WithSelection(None)) == [], \
        "init: a study without the selection says nothing"

    sel = {"atlas-rezero": {"lr": 4e-3, "trains": True, "depth": 12},
           "atlas-post-ln": {"lr": 5e-4, "trains": False, "depth": 12}}
    st = WithSelection(None)
    st.s = {"selections": sel}
    f = atlas_section.selection_findings(st)
    assert len(f) == 1 and "rezero 4e-3" in f[0] and "post-ln 5e-4 (no lr trained: its lowest loss)" in f[0], \
        "atlas: the report names each variant's selected lr and says where none trained"

    # A study grown by --seeds keeps a selection whose second stage ran
    # (study/followup.h): the report says so, and what every seed picks now.
    grown = {"lr": 1e-3, "warmup_fraction": 0.25, "rule": "R", "candidates": cands, "kept_from_seeds": 3,
             "over_all_seeds": {"lr": 5e-4, "trains": True}}
    f = init_section.selection_findings(WithSelection(grown))
    assert ("train at lr 1e-3" in f[0] and "chosen from 3 seeds" in f[0]
            and "over every seed the rule picks lr 5e-4" in f[0]), f[0]
    st.s = {"selections": {"atlas-rezero": {"lr": 4e-3, "trains": True, "depth": 12, "kept_from_seeds": 3,
                                            "over_all_seeds": {"lr": 2e-3, "trains": True}}}}
    f = atlas_section.selection_findings(st)
    assert "rezero 4e-3 (chosen from 3 seeds and swept there" in f[0] and "the rule picks 2e-3)" in f[0], f[0]

    cells = {"cells": [dict(variant=v, depth=d, **cell(t)) for d in (6, 12, 24, 48) for v, t in
                       (("rezero", [100, 101, 99]), ("pre-ln", [50, 51, 49]),
                        ("post-ln", [200, 201, 199] if d >= 24 else [100, 101, 99]))]}
    try:
        v = V.rezero_verdict(cells)
        assert ("vs Pre-LN: faster at 0, slower at 4 of 4 depths" in v.numbers and
                "vs Post-LN: faster at 2, slower at 0 of 4 depths" in v.numbers), \
            f"rezero-faster: the split by rival is in the numbers ({v.numbers})"
    except (KeyError, TypeError) as e:
        assert False, f"rezero-faster: synthetic atlas cells accepted ({e!r})"


# ------------------------------------------------------------ two real models on the same batches


def real_pair(tmp):
    """Two tiny runs with the same seed (same batches, same val batches) and
    different inits: their convergence values differ."""
    out = os.path.join(tmp, "st")
    r = harness.command([harness.BIN, "study", "--preset", "init", "--budget", "tiny", "--data",
                         os.path.join(harness.SOURCE, "data", "sotu"), "--out", out, "--no-report", "--threads", "1"])
    if r.returncode != 0:
        pytest.fail("study failed: " + r.stderr[-2000:])
    runs = {x["name"]: x for x in json.load(open(os.path.join(out, "study.json")))["runs"]}
    return runs["init-pre-gpt2-s1"], runs["init-pre-normal-s1"]


def test_two_real_models_on_the_same_batches(tmp):
    if not os.path.isdir(os.path.join(harness.SOURCE, "data", "sotu")):
        pytest.skip("the default corpus (data/sotu) is not there: scripts/setup.sh fetches it")
    a, b = real_pair(tmp)
    ca, cb = a["outcome"]["val_curve"], b["outcome"]["val_curve"]
    assert a["config"]["seed"] == b["config"]["seed"] and ca[0][0] == cb[0][0] == 0 and len(ca) == len(cb), \
        "the two real runs share their seed (batches) and evaluation steps"
    target = max(ca[-1][1], cb[-1][1]) + 0.25 * (min(ca[0][1], cb[0][1]) - max(ca[-1][1], cb[-1][1]))
    ta, oka = E.tokens_to_val([tuple(x) for x in ca], target, 32)
    tb, okb = E.tokens_to_val([tuple(x) for x in cb], target, 32)
    assert oka and okb and ta != tb, \
        f"two models on the same batches reach a validation target at different tokens ({ta:.1f} vs {tb:.1f})"
