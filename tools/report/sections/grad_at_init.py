"""grad-at-init: per-layer FFN gradient norms and residual RMS of freshly
initialized models, against Xiong et al. (2020, Fig. 3), with GPT-2's
embeddings, with them scaled by √d and with unit-scale embeddings (N(0, 1/d)
tables ×√d), over seeds."""
import math
import statistics

from ..common import add_findings
from ..evidence import gai_groups, gai_profiles
from ..plot import INIT_COLORS, plt, ticker
from ..stats import GROWS, fmt_msd
from ..verdicts import EMBEDDING_WORDS, MIN_SEEDS, Diff, gai_setting

PRESET = "grad-at-init"
TITLE = "grad-at-init: gradient norms at initialization"
INIT_ORDER = ["gpt2", "normal", "xavier", "he"]
EMB_ORDER = ["none", "sqrt", "unit"]
# Each setting against GPT-2's, in the comparison sentences.
EMB_SHORT = {"sqrt": "embeddings ×√d", "unit": "unit-scale embeddings"}


def mean_profile(results, key):
    """Per layer: (mean, sd) over seeds of result[key] (a list per layer)."""
    series = [r[key] if key == "residual_rms" else r["grad_norm"]["ffn"] for r in results]
    n = min(len(s) for s in series)
    means = [statistics.mean(s[i] for s in series) for i in range(n)]
    sds = [statistics.stdev(s[i] for s in series) if len(series) > 1 else 0.0 for i in range(n)]
    return means, sds


def draw(doc, st, findings):
    g = gai_groups(st)
    embs = [e for e in EMB_ORDER if any(k[0] == e for k in g)] + sorted({k[0] for k in g} - set(EMB_ORDER))
    depths = sorted({k[1] for k in g})
    inits = [i for i in INIT_ORDER if any(k[2] == i for k in g)] + sorted({k[2] for k in g} - set(INIT_ORDER))
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

    rows, kinds = [], {}
    for p in gai_profiles(st):
        kind, d = gai_setting(p["post"], p["pre"])
        kinds.setdefault(p["embedding"], []).append((p, kind, d))
        rows.append([p["embedding"], p["depth"], p["init"], f"{d.n_a}/{d.n_b}", fmt_msd(p["post"], 2),
                     fmt_msd(p["pre"], 2),
                     ("beyond" if d.resolved else "within") + " seed noise" if d.enough else f"< {MIN_SEEDS} seeds",
                     {"pattern": "yes", "reversed": "reversed", "neither": "no"}.get(kind, "–")])
    doc.table(["embedding", "depth", "init", "seeds (post/pre)", "post last/first (mean ± sd)",
               "pre last/first (mean ± sd)", "post vs pre", "Xiong pattern"], rows)

    f = []
    for emb, items in kinds.items():
        post = [statistics.mean(p["post"]) for p, _, _ in items]
        pre = [statistics.mean(p["pre"]) for p, _, _ in items]
        n = len(items)
        words = EMBEDDING_WORDS.get(emb, f"embedding setting {emb}")
        f.append(f"{words}: Post-LN's last/first-layer FFN gradient ratio (mean over seeds) exceeds {GROWS} in "
                 f"{sum(x > GROWS for x in post)} of {n} (depth, init) settings (median "
                 f"{statistics.median(post):.2f}); "
                 f"Pre-LN's stays at or below {GROWS} in {sum(x <= GROWS for x in pre)} of {n} (median "
                 f"{statistics.median(pre):.2f}).")
        pat = [p for p, k, _ in items if k == "pattern"]
        comparable = [p for p, k, _ in items if k != "few seeds"]
        if comparable:
            if len(pat) == len(comparable):
                f.append(f"{words}: this matches Xiong et al. (2020, Fig. 3) in all {len(comparable)} settings.")
            elif len(pat) * 2 > len(comparable):
                f.append(f"{words}: this matches Xiong et al. (2020, Fig. 3) in {len(pat)} of {len(comparable)} "
                         "settings; it disagrees in the rest (see the table).")
            else:
                f.append(f"{words}: this disagrees with Xiong et al. (2020, Fig. 3): their pattern (Post-LN growing "
                         f"toward the output, Pre-LN flat, beyond seed noise) appears in only {len(pat)} of "
                         f"{len(comparable)} settings here.")
        else:
            f.append(f"{words}: fewer than {MIN_SEEDS} seeds per setting, so no pattern is stated.")
        by_init = []
        for init in inits:
            rs = [statistics.mean(p["post"]) for p, _, _ in items if p["init"] == init]
            if rs:
                by_init.append(f"{init} {statistics.median(rs):.2f}")
        if by_init:
            f.append(f"{words}: Post-LN last/first ratio by init (median over depths): " + ", ".join(by_init) + ".")
    # Each other embedding setting against GPT-2's, setting by setting.
    for emb in [e for e in embs if e != "none" and e in kinds and "none" in kinds]:
        short = EMB_SHORT.get(emb, f"embedding {emb}")
        a = {(p["depth"], p["init"]): (p, k) for p, k, _ in kinds["none"]}
        b = {(p["depth"], p["init"]): (p, k) for p, k, _ in kinds[emb]}
        both = [k for k in a if k in b]
        only_b = sum(b[k][1] == "pattern" and a[k][1] != "pattern" for k in both)
        only_none = sum(a[k][1] == "pattern" and b[k][1] != "pattern" for k in both)
        diffs = [Diff(b[k][0]["post"], a[k][0]["post"]) for k in both]
        higher, lower = sum(d.sign > 0 for d in diffs), sum(d.sign < 0 for d in diffs)
        head = "Embedding settings compared" if emb == "sqrt" else f"{short[0].upper() + short[1:]} against GPT-2's,"
        f.append(f"{head} over {len(both)} (depth, init) settings: the pattern appears with "
                 f"{short} only in {only_b}, with GPT-2's only in {only_none}; Post-LN's ratio is "
                 f"higher with {short} in {higher}, lower in {lower}, within seed noise (or fewer than "
                 f"{MIN_SEEDS} seeds) in {len(both) - higher - lower}.")
    # Xiong et al.: Pre-LN gradients scale like 1/sqrt(L).
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
    # Residual growth in Pre-LN.
    for emb in embs:
        pre = g.get((emb, depths[-1], "gpt2", "pre")) or g.get((emb, depths[-1], inits[0], "pre"))
        post = g.get((emb, depths[-1], "gpt2", "post")) or g.get((emb, depths[-1], inits[0], "post"))
        if pre and post:
            rp, _ = mean_profile(pre, "residual_rms")
            rq, _ = mean_profile(post, "residual_rms")
            f.append(f"Embedding {emb}, {depths[-1]} layers: the Pre-LN residual stream's RMS grows from {rp[0]:.3g} "
                     f"at the input to {rp[-1]:.3g} after the last layer (nothing normalizes it); Post-LN's stays at "
                     f"{rq[-1]:.3g} (each layer ends in a LayerNorm).")
    v = st.verdicts.get("stable-gradients") if st.verdicts else None
    if v:
        f += [x for x in v.details.get(PRESET, []) if x not in f]
        f.append(v.line())
    add_findings(doc, findings, PRESET, f)
