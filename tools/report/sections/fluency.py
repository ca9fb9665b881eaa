"""Fluency: each finished run's fluency samples (the same fixed prompts and
sampling seeds for every run) scored by the study's n-gram judge, a token
trigram model of its training split: the mean negative log-likelihood of a
continuation (nats/token), lower = more like the corpus. Per setting (its
seeds together): judge NLL mean ± sd, rep-4, how many seeds left the
unigram plateau; the judge's calibration and sanity check; example samples;
and the verdict on "Pre-LN / GPT-2 init generate more fluent text"
(verdicts.fluency_verdict). distinct-n is shown, never used as a measure
of fluency: over the v2 study's runs it rose with perplexity."""
import statistics

from ..common import add_findings, describe
from ..evidence import judge_nll, judged_runs, trained
from ..plot import plt
from ..stats import fmt, fmt_msd, fmt_num, spearman
from ..verdicts import CALIBRATION, FAILS, fluency_sanity

TITLE = "Fluency"
PRESET_COLORS = {"norm": "tab:blue", "init": "tab:green", "depth": "tab:red", "atlas": "tab:orange"}
EXAMPLE_CHARS = 200


def setting_key(r):
    return r.get("preset"), tuple(sorted((k, str(v)) for k, v in r.get("variables", {}).items()
                                         if k not in ("seed", "seed_index")))


def settings(st, runs):
    """{(preset, variables without the seed): [runs, by seed index]}, in
    the study's preset order."""
    out = {}
    for r in runs:
        out.setdefault(setting_key(r), []).append(r)
    order = {p: i for i, p in enumerate(st.presets)}
    for rs in out.values():
        rs.sort(key=st.seed_index)
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0][0], len(order))))


def samples_of(r):
    f = r.get("fluency")
    return [s for s in f.get("samples", []) if isinstance(s, dict)] if isinstance(f, dict) else []


def mean_of(xs):
    xs = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return statistics.mean(xs) if xs else None


def one_line(text):
    text = str(text).replace("\n", " ⏎ ")
    return text[:EXAMPLE_CHARS] + " …" if len(text) > EXAMPLE_CHARS else text


def setting_rows(st, groups):
    rows = []
    for (preset, _), rs in groups.items():
        n = len(rs)
        left = [trained(st, r) for r in rs]
        nll = [judge_nll(r) for r in rs]
        judged = sum(x is not None for x in nll)
        rep = [r["fluency"].get("rep4_mean") for r in rs if isinstance(r.get("fluency"), dict)]
        d2 = [mean_of([s.get("distinct_2") for s in samples_of(r)]) for r in rs]
        div = sum(st.diverged(r) for r in rs)
        rows.append([preset, describe(rs[0]), n,
                     f"{sum(bool(x) for x in left)}/{n}" if any(x is not None for x in left) else "–",
                     fmt_msd(nll) + (f" [{judged} seeds]" if 0 < judged < n else ""),
                     fmt(mean_of(rep), 3), fmt(mean_of(d2), 2), fmt_msd([st.val_loss(r) for r in rs]),
                     f"{div}/{n}" if div else "0"])
    header = ["preset", "setting", "seeds", "left the plateau", "judge NLL (nats/token, mean ± sd)", "rep-4 (mean)",
              "distinct-2 (mean; not a fluency measure)", "final val loss", "diverged"]
    return header, rows


def example_rows(st, groups):
    """Per preset, its most and its least fluent setting (lowest and highest
    mean judge NLL): the first seed's first two samples (every run has the
    same prompts, so the rows compare)."""
    rows, chosen = [], []
    by_preset = {}
    for key, rs in groups.items():
        m = mean_of([judge_nll(r) for r in rs])
        if m is not None:
            by_preset.setdefault(key[0], []).append((m, key))
    for preset, ms in by_preset.items():
        ms.sort()
        for tag, (m, key) in (("lowest", ms[0]), ("highest", ms[-1])):
            if key not in [k for _, k in chosen]:
                chosen.append((f"{preset}, {tag} judge NLL", key))
    for tag, key in chosen:
        r = next((r for r in groups[key] if judge_nll(r) is not None), None)
        if r is None:
            continue
        where = "left the plateau" if trained(st, r) else "on the plateau"
        for s in samples_of(r)[:2]:
            rows.append([f"{describe(r)} ({tag}; seed {st.seed_index(r)}, {where})", one_line(s.get("prompt", "")),
                         one_line(s.get("text", "")), fmt(s.get("judge_nll"), 2), fmt(s.get("repeated_4gram_rate"), 2)])
    return ["run (setting)", "prompt", "continuation", "judge NLL", "rep-4"], rows


def draw_figure(doc, st, runs, judge):
    pts = [(st.val_loss(r), judge_nll(r), trained(st, r), r.get("preset")) for r in runs
           if judge_nll(r) is not None and st.val_loss(r) is not None]
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for preset in dict.fromkeys(p for *_, p in pts):
        for left, marker in ((True, "o"), (False, "x")):
            sel = [x for x in pts if x[3] == preset and bool(x[2]) == left]
            if sel:
                ax.scatter([x[0] for x in sel], [x[1] for x in sel], marker=marker, s=20,
                           color=PRESET_COLORS.get(preset, "k"),
                           label=f"{preset}, {'left the plateau' if left else 'on the plateau'}")
    for (key, name), style in zip(CALIBRATION, ("-", "--", ":")):
        if isinstance(judge.get(key), (int, float)):
            ax.axhline(judge[key], color="k", ls=style, lw=0.9, label=f"{name} ({judge[key]:.2f})")
    if st.unigram is not None:
        ax.axvline(st.unigram, color="gray", ls=":", lw=0.9, label="unigram baseline (val loss)")
    ax.set_xlabel("final validation loss (nats)")
    ax.set_ylabel("judge NLL of the samples (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    doc.figure(fig, "fluency_judge.png", "Mean judge NLL of each run's fluency samples against its final validation "
               "loss (× a run that stayed on the unigram plateau), with the judge's calibration lines")


def verdict_lines(st):
    v = st.verdicts.get("fluency") if st.verdicts else None
    return v.lines("fluency") if v else []


def draw(doc, st, findings):
    fb = st.budget.get("fluency") if isinstance(st.budget.get("fluency"), dict) else {}
    sb = st.budget.get("sample", {})
    judge = st.s.get("judge") if isinstance(st.s.get("judge"), dict) else {}
    runs = judged_runs(st)
    with_fluency = [r for r in runs if isinstance(r.get("fluency"), dict)]
    if not with_fluency and not judge:
        doc.p("No run of this study has fluency samples (a study written before the fluency judge): fluency is not "
              "measured, and its verdict is not tested.")
        add_findings(doc, findings, "fluency", verdict_lines(st))
        return
    prompts = fb.get("prompts") if isinstance(fb.get("prompts"), list) else []
    tokens = f"{judge['train_tokens']:,}" if isinstance(judge.get("train_tokens"), int) else "?"
    doc.p(f"Each finished run (lr-edge probes and translation runs aside) continues {fb.get('samples', '?')} fixed "
          f"prompts by {fb.get('tokens', '?')} tokens (temperature {fmt_num(sb.get('temperature'))}, top-k "
          f"{sb.get('top_k', '?')}, the same sampling seeds for every run)"
          + (f", prompts such as \"{prompts[0]}\"" if prompts else "") + ". The judge is a token trigram model of "
          f"the study's training split ({tokens} tokens, interpolated absolute discounting, "
          f"D = {fmt_num(judge.get('discount'))}); it scores a continuation by its mean negative log-likelihood "
          "given the prompt (nats/token): lower reads more like the corpus. A run's fluency is the mean over its "
          "samples; a setting's, the mean ± sd over its seeds. rep-4: share of word 4-grams already seen earlier "
          "in the sample. distinct-2 is shown but is not a fluency measure (over the v2 study's runs it rose with "
          "perplexity: noise is diverse).")
    nlls = {r["name"]: r for r in runs if judge_nll(r) is not None}
    state, checks = fluency_sanity(judge, [{"nll": judge_nll(r), "left": trained(st, r)} for r in nlls.values()])
    verdict_note = " (the fluency verdict is then not tested)." if state == FAILS else "."
    if all(isinstance(judge.get(k), (int, float)) for k, _ in CALIBRATION):
        doc.p(f"The judge's calibration on {judge.get('pieces', '?')} held-out val pieces of "
              f"{judge.get('tokens', '?')} tokens (NLL, nats/token): real val text {judge['val_text_nll']:.3f}, "
              f"samples of the unigram distribution at the study's temperature and top-k (what a model on the "
              f"plateau emits) {judge['unigram_sampler_nll']:.3f}, the same val text shuffled "
              f"{judge['shuffled_val_nll']:.3f}; a judge that measures fluency ranks them in this order, and runs "
              f"that left the unigram plateau above those that did not. Sanity check: {state}{verdict_note}")
    else:
        doc.p(f"study.json has no calibration of the judge. Sanity check (runs that left the unigram plateau "
              f"ranked above those that did not): {state}{verdict_note}")
    if not with_fluency:
        doc.p(("No finished run of this study has fluency samples yet" if runs else
               "No finished run of this study is of a preset that draws fluency samples (lr-edge probes and "
               "translation runs draw none)") + ": fluency is not measured, and its verdict is not tested.")
        add_findings(doc, findings, "fluency", [x for _, x in checks] + verdict_lines(st))
        return
    draw_figure(doc, st, runs, judge)
    groups = settings(st, runs)
    doc.table(*setting_rows(st, groups))
    header, rows = example_rows(st, groups)
    if rows:
        doc.p("Example samples: for each preset, its setting with the lowest and with the highest mean judge NLL "
              f"(first seed, first two prompts; longer continuations cut at {EXAMPLE_CHARS} characters).")
        doc.table(header, rows)

    f = []
    done = [r for r in nlls.values() if st.val_loss(r) is not None]
    rho = spearman([st.val_loss(r) for r in done], [judge_nll(r) for r in done]) if len(done) >= 3 else None
    if rho is not None:
        f.append(f"Across {len(done)} completed runs, Spearman's ρ between final validation loss and judge NLL is "
                 f"{rho:+.2f}.")
    stuck = [describe(rs[0]) + f" ({k[0]})" for k, rs in groups.items()
             if all(trained(st, r) is False for r in rs)]
    if stuck:
        f.append(f"{len(stuck)} of {len(groups)} settings never left the unigram plateau in any seed (their samples "
                 f"are what a model of token frequencies emits): {'; '.join(stuck)}.")
    lines = verdict_lines(st)
    f += lines if lines else [x for _, x in checks]
    add_findings(doc, findings, "fluency", f)
