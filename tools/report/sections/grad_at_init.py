"""grad-at-init: per-layer FFN gradient norms and residual RMS of freshly
initialized models, against Xiong et al. (2020, Fig. 3), with GPT-2's
embeddings, with them scaled by √d and with unit-scale embeddings (N(0, 1/d)
tables ×√d), over seeds. Per (embedding, init) a table of the slopes of
log ‖∇W¹‖, log ‖∇W²‖ and the FFN sum over the layers, per placement and
depth (mean ± 95% CI over seeds; verdicts.SlopeCI), which the claim's
rule stable-gradients/2 judges; the last/first ratio is shown beside."""
import math
import statistics

from ..common import add_findings
from ..evidence import gai_groups, gai_slopes
from ..plot import INIT_COLORS, plt, ticker
from ..stats import fmt_msd
from ..verdicts import (CI_LEVEL, EMBEDDING_WORDS, GAI_MATRICES, GAI_SHOWN, GROWS_WORD, MIN_SEEDS, Diff, SlopeCI,
                        depths_text, gai_slope_cells)

PRESET = "grad-at-init"
TITLE = "grad-at-init: gradient norms at initialization"
INIT_ORDER = ["gpt2", "normal", "xavier", "he"]
EMB_ORDER = ["none", "sqrt", "unit"]
# Each setting against GPT-2's, in the comparison sentences.
EMB_SHORT = {"sqrt": "embeddings ×√d", "unit": "unit-scale embeddings"}
INIT_WORDS_SHORT = {"gpt2": "GPT-2's init", "normal": "normal init", "xavier": "Xavier init", "he": "He init"}
KIND_WORDS = {"pattern": "yes", "reversed": "reversed", "neither": "no", "few seeds": f"< {MIN_SEEDS} seeds"}


def mean_profile(results, key):
    """Per layer: (mean, sd) over seeds of result[key] (a list per layer)."""
    series = [r[key] if key == "residual_rms" else r["grad_norm"]["ffn"] for r in results]
    n = min(len(s) for s in series)
    means = [statistics.mean(s[i] for s in series) for i in range(n)]
    sds = [statistics.stdev(s[i] for s in series) if len(series) > 1 else 0.0 for i in range(n)]
    return means, sds


def describe(doc, st, g, embs, depths):
    """The runs and what is measured, before the figures."""
    runs = [r for r in st.preset_runs(PRESET) if r.get("status") == "completed" and "result" in r]
    cfg = runs[0].get("config", {})
    seeds = sorted({len(v) for v in g.values()})
    doc.p(f"{len(runs)} freshly initialized models (n_embd {cfg.get('model', {}).get('n_embd', '?')}, depths "
          f"{', '.join(map(str, depths))}; {'–'.join(map(str, (seeds[0], seeds[-1]) if len(seeds) > 1 else seeds))} "
          f"seed{'s' if seeds[-1] != 1 else ''} per setting), each run forward and backward on "
          f"{cfg.get('batches', '?')} batches of {cfg.get('batch_size', '?')}×{cfg.get('seq_len', '?')} tokens; the "
          "plotted value is the L2 norm of the gradient of each layer's FFN weight matrices (mlp.c_fc and mlp.c_proj "
          "together, Xiong et al.'s W¹, W²), averaged over the batches; lines are the mean over seeds, bands ±1 sd. "
          "No training. Embedding settings: " +
          "; ".join(f"'{e}' = {EMBEDDING_WORDS.get(e, e)}" for e in embs) + "." +
          (" With GPT-2's N(0, 0.02) tables, ×√d makes the block input √d times larger (its RMS is in the findings), "
           "not of unit RMS as with the original Transformer's N(0, 1/d) embeddings." if "sqrt" in embs else "") +
          (" 'unit' draws wte and wpe from N(0, 1/d) and multiplies their sum by √d: each table contributes an "
           "input of unit RMS, the setting Xiong et al. measured (fairseq's)." if "unit" in embs else ""))


def draw_profiles(doc, g, embs, depths, inits):
    """The figure of per-layer FFN gradient norms, absolute and relative to layer 1."""
    rows_per_emb = 2
    fig, axes = plt.subplots(rows_per_emb * len(embs), len(depths),
                             figsize=(4.2 * len(depths), 3.3 * rows_per_emb * len(embs)), squeeze=False)
    for e, emb in enumerate(embs):
        for j, d in enumerate(depths):
            top, rel = axes[rows_per_emb * e][j], axes[rows_per_emb * e + 1][j]
            for init in inits:
                for norm, style in (("post", "-o"), ("pre", "--s")):
                    res = g.get((emb, d, init, norm))
                    if not res:
                        continue
                    mean, sd = mean_profile(res, "ffn")
                    layers = list(range(1, len(mean) + 1))
                    color = INIT_COLORS.get(init, "k")
                    top.plot(layers, mean, style, color=color, ms=3, label=f"{norm}-LN, {init}")
                    rels = [[x / r["grad_norm"]["ffn"][0] for x in r["grad_norm"]["ffn"]] for r in res]
                    rm = [statistics.mean(s[i] for s in rels) for i in range(len(layers))]
                    rel.plot(layers, rm, style, color=color, ms=3)
                    if len(res) > 1:
                        top.fill_between(layers, [max(m - s, 1e-12) for m, s in zip(mean, sd)],
                                         [m + s for m, s in zip(mean, sd)], color=color, alpha=0.15, lw=0)
                        rs = [statistics.stdev(s[i] for s in rels) for i in range(len(layers))]
                        rel.fill_between(layers, [max(m - s, 1e-6) for m, s in zip(rm, rs)],
                                         [m + s for m, s in zip(rm, rs)], color=color, alpha=0.15, lw=0)
            top.set_yscale("log")
            top.set_title(f"embedding {emb}, {d} layers", fontsize=10)
            rel.set_yscale("log", base=2)
            rel.axhline(1.0, color="k", lw=0.6)
            rel.set_xlabel("layer")
            for ax in (top, rel):
                ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
                ax.grid(alpha=0.3, which="both")
        axes[rows_per_emb * e][0].set_ylabel(f"‖∂L/∂W_FFN‖ at init\n(embedding {emb})", fontsize=9)
        axes[rows_per_emb * e + 1][0].set_ylabel("relative to layer 1", fontsize=9)
    axes[0][0].legend(fontsize=7, ncol=2)
    doc.figure(fig, "grad_at_init_profiles.png",
               "Per-layer FFN weight gradient norm at initialization and relative to layer 1 (rising = grows toward "
               "the output, Xiong et al.'s Post-LN pattern), per embedding setting; Post-LN solid, Pre-LN dashed; "
               "mean over seeds, band ±1 sd")


def draw_residual(doc, g, embs, depths, inits):
    """The figure of the residual stream's RMS per layer."""
    fig, axes = plt.subplots(len(embs), len(depths), figsize=(4.2 * len(depths), 3.4 * len(embs)), squeeze=False)
    for e, emb in enumerate(embs):
        for ax, d in zip(axes[e], depths):
            for init in inits:
                for norm, style in (("post", "-o"), ("pre", "--s")):
                    res = g.get((emb, d, init, norm))
                    if res:
                        mean, _ = mean_profile(res, "residual_rms")
                        ax.plot(range(len(mean)), mean, style, color=INIT_COLORS.get(init, "k"), ms=3,
                                label=f"{norm}-LN, {init}")
            ax.set_yscale("log")
            ax.set_title(f"embedding {emb}, {d} layers", fontsize=10)
            ax.set_xlabel("layer boundary (0: embeddings, L: after the last layer)", fontsize=8)
            ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
            ax.grid(alpha=0.3, which="both")
        axes[e][0].set_ylabel("residual stream RMS")
    axes[0][0].legend(fontsize=7, ncol=2)
    doc.figure(fig, "grad_at_init_residual.png", "Residual-stream RMS per layer at initialization (mean over seeds)")


def slope_tables(doc, st, embs, depths, inits):
    """The slope tables per (embedding, init); returns verdicts.gai_slope_cells."""
    slopes = gai_slopes(st)
    cells = gai_slope_cells(slopes)
    by_key = {(x["embedding"], x["depth"], x["init"]): x for x in slopes}
    doc.p("Per run, the least-squares slope of log ‖∇W‖ against the layer index (0..L−1), for each FFN weight "
          "matrix, W¹ (mlp.c_fc) and W² (mlp.c_proj), and for the FFN sum (√(‖∇W¹‖² + ‖∇W²‖²), shown, not "
          "judged): slope s means ×e^s per layer, ×e^(s(L−1)) from the first layer to the last. Per setting, "
          f"the mean over seeds ± the half-width of its {CI_LEVEL:.0%} confidence interval (Student t, n − 1 "
          f"dof): 'grows' toward the output when the interval lies entirely above 0, 'shrinks' entirely below, "
          f"else flat within noise; with fewer than {MIN_SEEDS} seeds nothing is stated. Xiong et al.'s pattern "
          "at a depth and matrix: Post-LN grows and Pre-LN does not ('reversed': Pre-LN grows and Post-LN does "
          "not). The FFN last/first-layer ratio (the registered rule stable-gradients/1's measure) is shown beside "
          "them.")
    for emb in embs:
        for init in inits:
            if (emb, init) not in cells:
                continue
            kinds = {(r[0], r[1]): r[3] for r in cells[(emb, init)]}
            rows = []
            for d in depths:
                x = by_key.get((emb, d, init))
                if not x:
                    continue
                for side, name in (("post", "Post-LN"), ("pre", "Pre-LN")):
                    shown = [SlopeCI(x[side][key]) for key, _ in GAI_SHOWN]
                    xiong = "; ".join(f"{label} {KIND_WORDS.get(kinds.get((d, key)), '–')}"
                                      for key, label in GAI_MATRICES) if side == "post" else ""
                    rows.append([d, name, len(x[side]["ffn"])] +
                                [f"{c.text(4)} ({c.pattern})" if c.n else "–" for c in shown] +
                                [fmt_msd(x[side]["ratio"], 2), xiong])
            doc.h(4, f"Embedding {emb}, init {init}")
            doc.table(["depth", "placement", "seeds"] +
                      [f"{label} slope (mean ± {CI_LEVEL:.0%} CI)" for _, label in GAI_SHOWN] +
                      ["FFN last/first (mean ± sd)", "Xiong pattern (W¹; W²)"], rows)
    return cells


def pattern_findings(embs, depths, inits, cells):
    """Per embedding setting: where Xiong et al.'s pattern holds, and Post-LN's steepest growth."""
    f = []
    for emb in embs:
        words = EMBEDDING_WORDS.get(emb, f"embedding setting {emb}")
        got, steep = [], []
        for init in inits:
            rows = [r for r in cells.get((emb, init), []) if r[3] != "few seeds"]
            if not rows:
                continue
            got.append(f"{INIT_WORDS_SHORT.get(init, init)} {sum(r[3] == 'pattern' for r in rows)} of {len(rows)}"
                       + (f" (reversed in {sum(r[3] == 'reversed' for r in rows)})"
                          if any(r[3] == "reversed" for r in rows) else ""))
            grows = [r for r in rows if r[4].pattern == GROWS_WORD]
            if grows:
                d, _, label, _, p, _ = max(grows, key=lambda r: r[4].mean * (r[0] - 1))
                steep.append(f"{INIT_WORDS_SHORT.get(init, init)} ×{math.exp(p.mean * (d - 1)):.2f} ({label}, {d} "
                             f"layers, {p.mean:+.4f} per layer)")
            else:
                steep.append(f"none with {INIT_WORDS_SHORT.get(init, init)}")
        if not got:
            f.append(f"With {words}: fewer than {MIN_SEEDS} seeds per setting, so no pattern is stated.")
            continue
        f.append(f"With {words}, Xiong et al.'s pattern at init (Post-LN's gradient growing toward the output, "
                 f"Pre-LN's not; slope CIs of W¹ and W² at {depths_text(depths)}) holds, in (depth, matrix) "
                 "settings, with " + ", ".join(got) + " (each init on its own; no other init was measured).")
        f.append(f"With {words}, Post-LN's largest growth toward the output, first layer → last (e^(slope·(L−1)) "
                 "of the mean slope, where it grows): " + "; ".join(steep) + ".")
    return f


def embedding_findings(embs, cells):
    """Each other embedding setting against GPT-2's, setting by setting."""
    f = []
    for emb in [e for e in embs if e != "none"]:
        short = EMB_SHORT.get(emb, f"embedding {emb}")
        a = {(init, r[0], r[1]): r for (e, init), rs in cells.items() if e == "none" for r in rs}
        b = {(init, r[0], r[1]): r for (e, init), rs in cells.items() if e == emb for r in rs}
        both = [k for k in a if k in b]
        if not both:
            continue
        only_b = sum(b[k][3] == "pattern" and a[k][3] != "pattern" for k in both)
        only_none = sum(a[k][3] == "pattern" and b[k][3] != "pattern" for k in both)
        diffs = [Diff(b[k][4].values, a[k][4].values) for k in both]
        higher, lower = sum(d.sign > 0 for d in diffs), sum(d.sign < 0 for d in diffs)
        head = "Embedding settings compared" if emb == "sqrt" else f"{short[0].upper() + short[1:]} against GPT-2's,"
        f.append(f"{head} over {len(both)} (depth, init, matrix) settings: the pattern appears with "
                 f"{short} only in {only_b}, with GPT-2's only in {only_none}; Post-LN's slope is "
                 f"higher with {short} in {higher}, lower in {lower}, within seed noise (or fewer than "
                 f"{MIN_SEEDS} seeds) in {len(both) - higher - lower}.")
    return f


def scaling_findings(g, embs, depths, inits):
    """Xiong et al.: Pre-LN gradients scale like 1/sqrt(L)."""
    f = []
    if len(depths) >= 2:
        d0, d1 = depths[0], depths[-1]
        for emb in embs:
            falls = []
            for init in inits:
                a_, b_ = g.get((emb, d0, init, "pre")), g.get((emb, d1, init, "pre"))
                if a_ and b_:
                    falls.append((init, Diff([statistics.mean(r["grad_norm"]["ffn"]) for r in b_],
                                             [statistics.mean(r["grad_norm"]["ffn"]) for r in a_])))
            if falls:
                n_fall = sum(d.sign < 0 for _, d in falls)
                f.append(f"Embedding {emb}: Pre-LN's mean FFN gradient norm, {d0} → {d1} layers (mean over seeds): " +
                         ", ".join(f"{i} {d.mean_b:.3g} → {d.mean_a:.3g} (×{d.mean_a / d.mean_b:.2f})"
                                   for i, d in falls) +
                         f"; Xiong et al.'s 1/√L scaling predicts ×{math.sqrt(d0 / d1):.2f}. It falls beyond seed "
                         f"noise for {n_fall} of {len(falls)} inits" +
                         ("." if n_fall * 2 > len(falls) else ", unlike the paper."))
    return f


def residual_findings(g, embs, depths, inits):
    """Residual growth in Pre-LN, against Post-LN."""
    f = []
    for emb in embs:
        pre = g.get((emb, depths[-1], "gpt2", "pre")) or g.get((emb, depths[-1], inits[0], "pre"))
        post = g.get((emb, depths[-1], "gpt2", "post")) or g.get((emb, depths[-1], inits[0], "post"))
        if pre and post:
            rp, _ = mean_profile(pre, "residual_rms")
            rq, _ = mean_profile(post, "residual_rms")
            f.append(f"Embedding {emb}, {depths[-1]} layers: the Pre-LN residual stream's RMS grows from {rp[0]:.3g} "
                     f"at the input to {rp[-1]:.3g} after the last layer (nothing normalizes it); Post-LN's stays at "
                     f"{rq[-1]:.3g} (each layer ends in a LayerNorm).")
    return f


def add_verdict(st, f):
    """Adds the stable-gradients verdict's lines for this preset to the findings f."""
    v = st.verdicts.get("stable-gradients") if st.verdicts else None
    if v:
        f += [x for x in v.details.get(PRESET, []) if x not in f]
        if v.changed and v.registered is not None:
            f += [f"Under the registered rule {v.registered_rule}: {x}" for x in v.registered.details.get(PRESET, [])]
        f += v.registered_lines() + [v.line()]


def draw(doc, st, findings):
    g = gai_groups(st)
    embs = [e for e in EMB_ORDER if any(k[0] == e for k in g)] + sorted({k[0] for k in g} - set(EMB_ORDER))
    depths = sorted({k[1] for k in g})
    inits = [i for i in INIT_ORDER if any(k[2] == i for k in g)] + sorted({k[2] for k in g} - set(INIT_ORDER))
    describe(doc, st, g, embs, depths)
    draw_profiles(doc, g, embs, depths, inits)
    draw_residual(doc, g, embs, depths, inits)
    cells = slope_tables(doc, st, embs, depths, inits)
    f = (pattern_findings(embs, depths, inits, cells) + embedding_findings(embs, cells)
         + scaling_findings(g, embs, depths, inits) + residual_findings(g, embs, depths, inits))
    add_verdict(st, f)
    add_findings(doc, findings, PRESET, f)
