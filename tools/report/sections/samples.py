"""Text samples: each run's continuation and its repetition measures, against
validation perplexity. distinct-n is shown, not used as a fluency measure
(fluency.py scores samples with the study's n-gram judge)."""
from ..common import add_findings
from ..plot import plt
from ..stats import fmt, fmt_num, spearman


def draw(doc, st, findings):
    # lr-edge probes (and the atlas's) are left out (dozens of runs that
    # differ only in lr), and translation runs (their own tokenizer and task:
    # the translation section shows their outputs); the table shows each
    # setting's first seed, the plot and ρ every run.
    runs = [r for r in st.runs if r.get("kind") == "train" and r.get("status") in ("completed", "diverged")
            and r.get("preset") not in ("lr-edge", "translation") and r["variables"].get("arm") != "edge"]
    with_sample = [r for r in runs if r.get("sample")]
    first = {}
    for r in runs:
        key = (r.get("preset"), tuple(sorted((k, str(v)) for k, v in r.get("variables", {}).items()
                                             if k not in ("seed", "seed_index"))))
        if key not in first or st.seed_index(r) < st.seed_index(first[key]):
            first[key] = r
    shown = [r for r in runs if first.get((r.get("preset"), tuple(sorted(
        (k, str(v)) for k, v in r.get("variables", {}).items() if k not in ("seed", "seed_index"))))) is r]
    prompt = with_sample[0]["sample"]["prompt"] if with_sample else ""
    sb = st.budget.get("sample", {})
    doc.p(f"Each run's final checkpoint continues the prompt \"{prompt}\" (after <|endoftext|>) for up to "
          f"{sb.get('tokens', '?')} tokens, temperature {fmt_num(sb.get('temperature'))}, "
          f"top-k {sb.get('top_k', '?')}, "
          f"a fixed seed. distinct-n: unique word n-grams / all (shown, not a measure of fluency: over the v2 "
          "study's runs it rose with perplexity; Fluency has the judge's measure); rep-4: share of word 4-grams "
          "already seen earlier in the sample (higher = more looping)."
          + (" The table shows the first seed of each setting (lr-edge probes left out)." if len(shown) < len(runs)
             else ""))
    pts = [(r["outcome"]["val_ppl"], r["sample"]["distinct_2"], r["sample"]["repeated_4gram_rate"], r)
           for r in with_sample if r.get("status") == "completed" and r.get("outcome", {}).get("val_ppl")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    presets = [p for p in st.presets if any(x[3]["preset"] == p for x in pts)]
    cmap = {"norm": "tab:blue", "init": "tab:green", "depth": "tab:red", "lr-edge": "tab:purple"}
    for p in presets:
        sel = [x for x in pts if x[3]["preset"] == p]
        axes[0].scatter([x[0] for x in sel], [x[1] for x in sel], color=cmap.get(p, "k"), label=p, s=18)
        axes[1].scatter([x[0] for x in sel], [x[2] for x in sel], color=cmap.get(p, "k"), label=p, s=18)
    for ax, yl in zip(axes, ("distinct-2", "rep-4")):
        ax.set_xscale("log")
        ax.set_xlabel("validation perplexity")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3, which="both")
        if presets:
            ax.legend(fontsize=8)
    doc.figure(fig, "samples_quality.png", "Text-sample quality against validation perplexity, one point per run")

    rows = []
    for r in shown:
        s = r.get("sample")
        o = r.get("outcome", {})
        text = s["text"].replace("\n", " ⏎ ") if s else (r.get("note") or "–")
        if len(text) > 220:
            text = text[:220] + " …"
        rows.append([r["name"], fmt(o.get("val_ppl") if r.get("status") == "completed" else None, 1),
                     fmt(s["distinct_1"], 2) if s else "–", fmt(s["distinct_2"], 2) if s else "–",
                     fmt(s["repeated_4gram_rate"], 2) if s else "–", text])
    doc.table(["run", "val ppl", "distinct-1", "distinct-2", "rep-4", "sample"], rows)

    f = []
    if len(pts) >= 3:
        rho_d = spearman([x[0] for x in pts], [x[1] for x in pts])
        rho_r = spearman([x[0] for x in pts], [x[2] for x in pts])
        if rho_d is not None:
            f.append(f"Across {len(pts)} completed runs, Spearman's ρ between validation perplexity and distinct-2 "
                     f"is {rho_d:+.2f}" + (f", and with rep-4 {rho_r:+.2f}." if rho_r is not None else "."))
        best = min(pts, key=lambda x: x[0])
        worst = max(pts, key=lambda x: x[0])
        f.append(f"Lowest perplexity: {best[3]['name']} (ppl {best[0]:.1f}, distinct-2 {best[1]:.2f}, rep-4 "
                 f"{best[2]:.2f}); highest: {worst[3]['name']} (ppl {worst[0]:.1f}, distinct-2 {worst[1]:.2f}, "
                 f"rep-4 {worst[2]:.2f}).")
    loops = [x for x in pts if x[2] > 0.2]
    if pts:
        f.append(f"{len(loops)} of {len(pts)} samples repeat more than 20% of their 4-grams.")
    add_findings(doc, findings, "samples", f)
