"""tools/report's grad-at-init rule stable-gradients/2 (tools/report/verdicts.py):
per run, the least-squares slope of log ‖∇W‖ over the layers, for W¹
(mlp.c_fc) and W² (mlp.c_proj); per setting, the mean slope over seeds
with its 95% Student-t interval; Xiong et al.'s pattern = Post-LN's
interval above 0 and Pre-LN's not. The t quantile and the slope arithmetic
are checked on hand-computed values, the verdict flips between confirmed,
not observed, contradicted, mixed and not tested, the registered rule
stable-gradients/1 is still shown beside it, and a synthetic study's
report shows the tables and the per-init findings."""
import math
import os
import sys

import harness
import synthetic_study as syn

REPORT = os.path.join(harness.SOURCE, "tools", "report")

# The report package, imported as `report` the way its entry point does.
harness.report_package()
from report import evidence, verdicts as V  # noqa: E402
from report.load import Study  # noqa: E402

C, N, X, T, M = V.CONFIRMED, V.NOT_OBSERVED, V.CONTRADICTED, V.NOT_TESTED, V.MIXED


# ---------------------------------------------------------------- Student t


def test_student_t():
    # Two-sided 95% critical values from the standard tables (e.g. NIST/SEMATECH).
    TABLE = {1: 12.706204736, 2: 4.302652730, 3: 3.182446305, 4: 2.776445105, 9: 2.262157163, 29: 2.045229642,
             120: 1.979930405}
    for dof, want in TABLE.items():
        got = V.t_quantile(dof)
        assert abs(got - want) < 1e-8, f"t quantile, {dof} dof, 95% two-sided: {got:.9f} (table {want})"
    assert abs(V.t_coverage(1.0, 1) - 0.5) < 1e-15, "P(|T| ≤ 1), 1 dof (Cauchy) = 2·atan(1)/π = 0.5"
    assert abs(V.t_coverage(2.0, 2) - 2 / math.sqrt(6)) < 1e-15, "P(|T| ≤ 2), 2 dof = t/√(t² + 2) = 2/√6"
    assert abs(V.t_quantile(4, 0.90) - 2.131846786) < 1e-8, "t quantile at another level: 90%, 4 dof = 2.131847"
    assert abs(V.t_quantile(5000) - 1.960438) < 1e-5, "many dof: close to the normal's 1.96 (1.960438 at 5000)"


# ---------------------------------------------------------------- slopes


def test_slopes():
    e = math.e
    assert abs(V.log_slope([1.0, e, e * e]) - 1.0) < 1e-15, "log_slope([1, e, e²]) = 1 (×e per layer)"
    # ln(2), ln(1), ln(4) at layers 0, 1, 2: centred x −1, 0, 1 -> (ln 4 − ln 2) / 2 = ln(2)/2.
    assert abs(V.log_slope([2.0, 1.0, 4.0]) - math.log(2) / 2) < 1e-15, "log_slope([2, 1, 4]) = ln(2)/2 (least squares)"
    assert V.log_slope([0.5, 0.5, 0.5, 0.5]) == 0.0, "a flat profile has slope exactly 0"
    assert (V.log_slope([1.0, 0.0, 2.0]) is None and V.log_slope([1.0]) is None and V.log_slope(None) is None and
            V.log_slope([1.0, float("nan")]) is None), \
        "no slope for a zero or NaN norm, one layer or no list"
    run = evidence.gai_run_slopes({"grad_norm": {"mlp.c_fc": [1.0, e, e * e], "mlp.c_proj": [2.0, 1.0, 4.0],
                                                 "ffn": [4.0, 2.0, 1.0]}})
    assert (abs(run["mlp.c_fc"] - 1) < 1e-15 and abs(run["mlp.c_proj"] - math.log(2) / 2) < 1e-15 and
            abs(run["ffn"] + math.log(2)) < 1e-15 and run["ratio"] == 0.25), \
        "evidence.gai_run_slopes: W¹, W², the FFN sum's slope and its last/first ratio of one run"

    # Hand-computed intervals: slopes 0.30, 0.31, 0.32 -> mean 0.31, sd 0.01,
    # half-width 4.302653 · 0.01 / √3 = 0.0248414.
    ci = V.SlopeCI([0.30, 0.31, 0.32])
    assert (ci.n == 3 and abs(ci.mean - 0.31) < 1e-15 and abs(ci.sd - 0.01) < 1e-15 and
            abs(ci.half - 0.024841377) < 1e-9 and abs(ci.low - 0.285158623) < 1e-9 and ci.pattern == V.GROWS_WORD), \
        f"SlopeCI([0.30, 0.31, 0.32]): 0.31 ± 0.0248414, entirely above 0 -> grows ({ci.half:.9f})"
    assert ci.text(4) == "+0.3100 ± 0.0248", f"SlopeCI text: mean ± half-width ({ci.text(4)})"
    ci = V.SlopeCI([0.1, 0.2, 0.3])
    assert abs(ci.half - 0.24841377) < 1e-8 and ci.low < 0 < ci.high and ci.pattern == V.FLAT_WORD, \
        "SlopeCI([0.1, 0.2, 0.3]): 0.2 ± 0.248 straddles 0 -> flat within noise"
    ci = V.SlopeCI([-0.02, -0.03, -0.04])
    assert ci.pattern == V.SHRINKS_WORD and ci.text(3) == "-0.030 ± 0.025", "an interval below 0 -> shrinks"
    # Ten seeds 0.01·(1..10): mean 0.055, sd 0.0302765, half = 2.262157 · sd / √10 = 0.0216585.
    ci = V.SlopeCI([0.01 * k for k in range(1, 11)])
    assert (abs(ci.half - 2.262157163 * math.sqrt(sum((0.01 * k - 0.055) ** 2 for k in range(1, 11)) / 9)
                / math.sqrt(10)) < 1e-10 and abs(ci.half - 0.0216585) < 1e-7 and ci.pattern == V.GROWS_WORD), \
        f"SlopeCI over 10 seeds uses 9 dof (t 2.262157): half-width {ci.half:.7f}"
    ci = V.SlopeCI([0.5, 0.6])
    assert ci.n == 2 and ci.half is not None and ci.pattern == "few seeds" and not ci.enough, \
        "two seeds: an interval is computed, no pattern is stated (3 seeds needed)"
    assert V.SlopeCI([0.0, 0.0, 0.0]).pattern == V.FLAT_WORD and V.SlopeCI([0.0, 0.0, 0.0]).text() == "0.000 ± 0.000", \
        "identical zero slopes: flat, printed without a sign"


# ---------------------------------------------------------------- one setting


def test_one_setting():
    grow, flat, shrink = [0.30, 0.31, 0.32], [-0.1, 0.0, 0.1], [-0.32, -0.31, -0.30]
    assert V.gai_slope_setting(grow, flat)[0] == "pattern" and V.gai_slope_setting(grow, shrink)[0] == "pattern", \
        "setting: Post-LN grows, Pre-LN flat or shrinking -> Xiong pattern"
    assert V.gai_slope_setting(flat, grow)[0] == "reversed" and V.gai_slope_setting(shrink, grow)[0] == "reversed", \
        "setting: Pre-LN grows, Post-LN does not -> reversed"
    assert (V.gai_slope_setting(grow, grow)[0] == "neither" and V.gai_slope_setting(flat, flat)[0] == "neither" and
            V.gai_slope_setting(shrink, flat)[0] == "neither"), \
        "setting: both grow, or neither does (a shrinking Post-LN included) -> neither"
    assert V.gai_slope_setting(grow[:2], flat)[0] == "few seeds", "setting: 2 Post-LN seeds -> few seeds"


# ---------------------------------------------------------------- the measure and the claim


def cells(post_w1, pre_w1, post_w2=None, pre_w2=None, inits=("gpt2", "xavier"), embs=("none", "unit"),
          seeds=3):
    """Slope inputs (evidence.gai_slopes' shape): every (embedding, init,
    depth 6 and 12) with the given centre slopes (a callable of the init,
    or a number), three seeds at centre −0.01, +0, +0.01."""
    def at(f, init):
        x = f(init) if callable(f) else f
        return [x + d for d in (-0.01, 0.0, 0.01)][:seeds]

    post_w2 = post_w1 if post_w2 is None else post_w2
    pre_w2 = pre_w1 if pre_w2 is None else pre_w2
    out = []
    for emb in embs:
        for init in inits:
            for depth in (6, 12):
                out.append({"embedding": emb, "init": init, "depth": depth,
                            "post": {"mlp.c_fc": at(post_w1, init), "mlp.c_proj": at(post_w2, init),
                                     "ffn": at(post_w1, init), "ratio": [1.0] * seeds},
                            "pre": {"mlp.c_fc": at(pre_w1, init), "mlp.c_proj": at(pre_w2, init),
                                    "ffn": at(pre_w1, init), "ratio": [1.0] * seeds}})
    return out


def edges(pre, post):
    return [{"warmup_fraction": w, "clip": c, "pre": [pre - 0.3, pre, pre + 0.3],
             "post": [post - 0.3, post, post + 0.3]} for w in (0.0, 0.25) for c in (0.0, 1.0)]


def test_the_measure_and_the_claim():
    v = V.stable_gradients_slope_verdict(cells(0.05, 0.0), [])
    assert v.verdict == C and "none/gpt2 4/4" in v.numbers and "[cells: confirmed 4]" in v.numbers, \
        f"growing Post-LN (+0.05 ± 0.01) and flat Pre-LN (0 ± 0.01) -> confirmed ({v.numbers})"
    v = V.stable_gradients_slope_verdict(cells(0.0, 0.0), [])
    assert v.verdict == N and "none/gpt2 0/4" in v.numbers, "both flat -> not observed at this scale"
    v = V.stable_gradients_slope_verdict(cells(-0.05, 0.05), [])
    assert v.verdict == X and "(reversed 4)" in v.numbers, "Pre-LN grows and Post-LN shrinks -> contradicted"
    v = V.stable_gradients_slope_verdict(cells(0.05, 0.0, seeds=2), [])
    assert v.verdict == T and "none/gpt2: fewer than 3 seeds per setting" in v.numbers, \
        f"two seeds per setting -> not tested ({v.numbers})"
    v = V.stable_gradients_slope_verdict(cells(lambda i: 0.05 if i == "xavier" else 0.0, 0.0), [])
    assert v.verdict == M and "none/xavier 4/4" in v.numbers and "none/gpt2 0/4" in v.numbers, \
        "the pattern with Xavier init only -> mixed (confirmed only where every (embedding, init) confirms)"
    xavier = [x for x in v.details["grad-at-init"] if x.startswith("With Xavier init and GPT-2's embeddings")]
    gpt2 = [x for x in v.details["grad-at-init"] if x.startswith("With GPT-2's init")]
    assert (len(xavier) == 1 and "Post-LN's W¹ grows at 6, 12 layers" in xavier[0] and
            "Pre-LN's W² is flat within noise at 6, 12 layers" in xavier[0] and
            xavier[0].endswith("holds in 4 of 4 (depth, matrix) settings: confirmed with this init and embedding.") and
            len(gpt2) == 2
            and all(x.endswith(": not observed at this scale with this init and embedding.") for x in gpt2)), \
        f"details: one sentence per (embedding, init), each about that init only ({xavier[0]})"
    v = V.stable_gradients_slope_verdict(cells(0.05, 0.0, post_w2=0.0), [])
    assert v.verdict == N and "none/gpt2 2/4" in v.numbers, \
        "W¹ grows, W² flat: the matrices count separately, 2 of 4 settings is no majority -> not observed"
    v = V.stable_gradients_slope_verdict(cells(0.05, 0.05), [])
    assert v.verdict == N, "both placements grow -> neither -> not observed"
    v = V.stable_gradients_slope_verdict(cells(0.05, 0.0), edges(-6.0, -9.0))
    assert v.verdict == C and v.numbers.count("[confirmed]") == 2, "grad-at-init and lr-edge both confirm -> confirmed"
    v = V.stable_gradients_slope_verdict(cells(-0.05, 0.05), edges(-6.0, -9.0))
    assert v.verdict == M and "[contradicted]" in v.numbers and "[confirmed]" in v.numbers, \
        "slopes contradict, lr-edge confirms -> mixed, each measure's verdict shown"
    v = V.stable_gradients_slope_verdict([], edges(-6.0, -9.0), {"gai_slopes": "grad-at-init not run"})
    assert v.verdict == C and "grad-at-init not run [not tested]" in v.numbers, "no grad-at-init runs: lr-edge alone"


# ---------------------------------------------------------------- registered rules


def test_registered_rules():
    rule = V.RULES["stable-gradients"]
    assert (rule["id"] == "stable-gradients/2" and rule["function"] == "stable_gradients_slope_verdict" and
            rule["params"] == {"NOISE": V.NOISE, "MIN_SEEDS": V.MIN_SEEDS, "CI": 0.95} and
            "entirely above 0" in rule["rule"] and "Post-LN grows and Pre-LN does not grow" in rule["rule"] and
            V.RULE_BY_ID["stable-gradients/1"]["params"]["GROWS"] == 1.25), \
        "RULES: stable-gradients/2 is current, declared with its CI; /1 is kept with its GROWS threshold"
    assert (V.registered_rules({"rules": {"stable-gradients": V.RULE_BY_ID["stable-gradients/1"]}})["stable-gradients"]
            == "stable-gradients/1" and V.registered_rules({})["stable-gradients"] == "stable-gradients/1"), \
        "a study registered under /1 (or without rules) stays registered under /1"
    # Post-LN's W¹ and W² grow by 0.04 ± 0.01 per layer at 6 and 12 layers (the interval 0.04 ± 0.025 lies
    # above 0: confirmed under /2). The same profiles' last/first ratios, e^(0.04·(L−1)): 1.22 at 6 layers, below
    # the registered rule's 1.25, 1.55 at 12: its pattern in 1 of 2 depths, no majority (not observed under /1).
    profiles = [{"embedding": emb, "depth": depth, "init": init, "pre": [1.0, 1.0, 1.0],
                 "post": [math.exp((0.04 + d) * (depth - 1)) for d in (-0.01, 0.0, 0.01)]}
                for emb in ("none", "unit") for init in ("gpt2", "xavier") for depth in (6, 12)]
    inputs = {"profiles": profiles, "gai_slopes": cells(0.04, 0.0)}
    v = {x.key: x for x in V.evaluate(inputs, {"stable-gradients": "stable-gradients/1"})}["stable-gradients"]
    assert (v.changed and v.rule == "stable-gradients/2" and v.verdict == C and v.registered.verdict == N and
            v.registered.rule == "stable-gradients/1"), \
        f"registered /1: its verdict (not observed) is kept beside /2's (confirmed) ({v.registered.numbers})"
    lines = v.lines("grad-at-init")
    assert (any("under the registered rule stable-gradients/1: not observed at this scale" in x for x in lines) and
            "under rule stable-gradients/2, changed after the runs" in lines[-1] and ": confirmed" in lines[-1]), \
        "the section prints both verdicts, the slope rule's marked 'changed after the runs'"
    v = {x.key: x for x in V.evaluate(inputs, V.registered_rules({"rules": V.rules_table()}))}["stable-gradients"]
    assert not v.changed and v.verdict == C, "a study registered under /2: one verdict"


# ---------------------------------------------------------------- from a study folder


def test_from_a_study_folder(tmp):
    got = {}
    for world in ("paper", "against", "noise"):
        out = os.path.join(tmp, world)
        syn.make_study(out, getattr(syn.World, world)(presets=["grad-at-init"]))
        st = Study(out)
        sl = evidence.gai_slopes(st)
        got[world] = V.gai_slope_verdict(sl)[0]
        if world == "paper":
            c = [x for x in sl if (x["embedding"], x["depth"], x["init"]) == ("none", 8, "he")][0]
            want = [math.log(1.3 + d) for d in (-0.01, 0.0, 0.01)]
            assert (all(abs(a - b) < 1e-12 for a, b in zip(c["post"]["mlp.c_fc"], want)) and
                    all(abs(a - b) < 1e-12 for a, b in zip(c["post"]["mlp.c_proj"], want)) and
                    len(c["pre"]["ffn"]) == 3), \
                "evidence.gai_slopes: per seed, ln(1 + g) for norms growing ×(1 + g) per layer"
    assert got == {"paper": C, "against": X, "noise": N}, \
        f"synthetic studies: paper -> confirmed, against -> contradicted, noise -> not observed ({got})"
    r = harness.command([sys.executable, REPORT, os.path.join(tmp, "paper"), "--no-figures"])
    md = open(os.path.join(tmp, "paper", "report.md")).read() if r.returncode == 0 else ""
    assert r.returncode == 0, "the report draws the synthetic grad-at-init study" + r.stderr[-600:]
    gai = md[md.index("## grad-at-init"):] if md else ""
    assert ("#### Embedding none, init he" in gai and "| depth | placement | seeds | W¹ slope (mean ± 95% CI) | "
            "W² slope (mean ± 95% CI) | FFN slope (mean ± 95% CI) | FFN last/first (mean ± sd) | Xiong pattern "
            "(W¹; W²) |" in gai), \
        "a table per (embedding, init): both slopes and the FFN sum, mean ± 95% CI"
    assert ("With GPT-2's embeddings (N(0, 0.02)), Xiong et al.'s pattern at init" in gai and
            "holds, in (depth, matrix) settings, with GPT-2's init 4 of 4, He init 4 of 4" in gai), \
        "findings: per embedding, init by init"
    mean = sum(math.log(1.3 + d) for d in (-0.01, 0.0, 0.01)) / 3
    # (W¹ and W² have the same slopes here, up to rounding: either may be named)
    steep = [f"He init ×{math.exp(7 * mean):.2f} ({w}, 8 layers, {mean:+.4f} per layer)" for w in ("W¹", "W²")]
    assert any(x in gai for x in steep), \
        f"findings: the largest growth, first layer -> last, e^(slope·(L−1)) at 8 layers ({steep[0]})"
    assert ("Under the registered rule stable-gradients/1: With GPT-2's embeddings" in gai and
            "under the registered rule stable-gradients/1: confirmed" in gai and
            "under rule stable-gradients/2, changed after the runs (registered: stable-gradients/1): confirmed"
            in gai), \
        "a study without rules (registered /1): the ratio rule's findings and verdict beside the slope rule's"
