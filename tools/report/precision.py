"""The precision a study trained in, and where bf16 may stand in for fp32.

`gpt2lab study --bf16` trains every run with bf16 matmul inputs. bf16 may
stand in for fp32 in a preset only where a control (the preset trained in
both precisions from the same data, the verdicts side by side:
docs/study/README.md, "bf16 runs, and the control that allows them")
changed no verdict, at that control's budget and with at least its seeds.
The controls' outcomes are data, fixed here as they were committed; a
verdict of a bf16 study that rests on a trained preset without such a
control is marked in the verdict table, so that the report never says
more than its runs support.
"""

# (preset, budget) -> the controls run there, by their seeds per setting:
# (seeds, passed, what the control found).
CONTROLS = {
    ("norm", "quick"): [(3, True, "first control: 0 of 14 verdicts changed")],
    ("norm", "full"): [(3, True, "second control: 0 of 14 verdicts changed")],
    ("init", "quick"): [(3, True, "third control: 0 of 14 verdicts changed")],
    ("depth", "quick"): [(3, True, "third control: 0 of 14 verdicts changed")],
    ("init", "full"): [(6, True, "fifth control: 0 of 2 verdicts changed")],
    ("depth", "full"): [(6, False, "fourth control: 1 of 1 verdicts changed at 6 seeds"),
                        (12, True, "ninth control: 0 of 1 verdicts changed at 12 seeds")],
    ("lr-edge", "full"): [(3, True, "sixth control: 0 of 2 verdicts changed")],
    ("translation", "full"): [(3, True, "seventh control: 0 of 3 verdicts changed; the size of Post-LN's "
                                        "no-warmup penalty differs between the precisions")],
    ("atlas", "full"): [(3, False, "eighth control: 1 of 3 verdicts changed")],
}
# Presets that train nothing: their gradients at init are fp32 in every study.
FP32_ALWAYS = ("grad-at-init",)
# The presets a claim's measurements come from, where they differ from its
# report sections: fluency judges the norm and init presets' samples.
TRAINED_BY_SECTION = {"fluency": ("norm", "init")}


def is_bf16(st):
    return st.budget.get("bf16") is True


def seeds_of(st, preset):
    """How many seeds the preset's runs hold (distinct variables.seed)."""
    seeds = (r["variables"].get("seed") for r in st.preset_runs(preset))
    return len({s for s in seeds if isinstance(s, int) and not isinstance(s, bool)})


def control(preset, budget, seeds):
    """(passed, why) for a preset trained in bf16 at this budget with this
    many seeds: the control with the most seeds not above the study's."""
    done = [c for c in CONTROLS.get((preset, budget), []) if c[0] <= seeds]
    if not done:
        ran = CONTROLS.get((preset, budget))
        if ran:
            return False, f"its control ran at {ran[-1][0]} seeds, this study has {seeds}"
        return False, f"no bf16 control at the '{budget}' budget"
    _, passed, why = max(done, key=lambda c: c[0])
    return passed, why


def coverage(st):
    """Every trained preset of a bf16 study: preset -> (passed, why)."""
    name = st.budget.get("name", "?")
    return {p: control(p, name, seeds_of(st, p)) for p in st.presets
            if p not in FP32_ALWAYS and st.has(p)}


def uncovered(st, sections):
    """The presets behind these report sections that trained in bf16
    without a passed control: [(preset, why)]; [] for an fp32 study."""
    if not is_bf16(st):
        return []
    cov = coverage(st)
    presets = [p for s in sections for p in TRAINED_BY_SECTION.get(s, (s,))]
    return [(p, cov[p][1]) for p in dict.fromkeys(presets) if p in cov and not cov[p][0]]


def note(st):
    """The header's sentence on the study's precision."""
    if not is_bf16(st):
        return "Precision: fp32 throughout."
    cov = coverage(st)
    ok = [f"{p} ({why})" for p, (passed, why) in cov.items() if passed]
    bad = [f"{p} ({why})" for p, (passed, why) in cov.items() if not passed]
    text = ("Precision: bf16 (--bf16: bf16 matmul inputs with fp32 accumulation; fp32 weights, gradients and "
            "AdamW); grad-at-init's gradients at init are fp32 in every study. bf16 stands in for fp32 only where "
            "a control changed no verdict at this budget with at least its seeds (docs/study/README.md, \"bf16 "
            "runs, and the control that allows them\"): ")
    text += "; ".join(ok) if ok else "none of this study's presets"
    if bad:
        text += (". Without a passed control: " + "; ".join(bad) + ". The verdicts that rest on them are marked "
                 "in the table below; confirm them in fp32 before citing them.")
    return text + ("" if bad else ".")


def mark(st, sections):
    """The verdict table's prefix for a claim resting on an uncovered
    preset ('' where there is none)."""
    bad = uncovered(st, sections)
    if not bad:
        return ""
    return ("bf16 without a passed control (" + "; ".join(f"{p}: {why}" for p, why in bad)
            + "): confirm in fp32 before citing. ")
