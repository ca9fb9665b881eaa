"""grad-at-init: per-layer FFN gradient norms and residual RMS of freshly
initialized models, against Xiong et al. (2020, Fig. 3)."""
import math
import statistics

from ..plot import INIT_COLORS, plt, ticker
from ..stats import GROWS, fmt


PRESET = "grad-at-init"
TITLE = "grad-at-init: gradient norms at initialization"

def draw(doc, st, findings):
    runs = [r for r in st.preset_runs(PRESET) if r.get("status") == "completed" and "result" in r]
    depths = sorted({r["variables"]["depth"] for r in runs})
    inits = [i for i in ["gpt2", "normal", "xavier", "he"] if any(r["variables"]["init"] == i for r in runs)]
    get = {(r["variables"]["depth"], r["variables"]["norm"], r["variables"]["init"]): r["result"] for r in runs}
    cfg = runs[0]["config"]
    doc.p(f"{len(runs)} freshly initialized models (n_embd {cfg['model']['n_embd']}, depths "
          f"{', '.join(map(str, depths))}; seed {cfg['seed']}), each run forward and backward on "
          f"{cfg['batches']} batches of {cfg['batch_size']}×{cfg['seq_len']} tokens; the plotted value is the "
          "L2 norm of the gradient of each layer's FFN weight matrices (mlp.c_fc and mlp.c_proj together, "
          "Xiong et al.'s W¹, W²), averaged over the batches. No training.")

    fig, axes = plt.subplots(2, len(depths), figsize=(4.2 * len(depths), 6.6), squeeze=False)
    for j, d in enumerate(depths):
        for init in inits:
            for norm, style in (("post", "-o"), ("pre", "--s")):
                g = get.get((d, norm, init))
                if g:
                    ffn = g["grad_norm"]["ffn"]
                    layers = range(1, len(ffn) + 1)
                    axes[0][j].plot(layers, ffn, style, color=INIT_COLORS[init], ms=3, label=f"{norm}-LN, {init}")
                    axes[1][j].plot(layers, [x / ffn[0] for x in ffn], style, color=INIT_COLORS[init], ms=3)
        axes[0][j].set_yscale("log")
        axes[0][j].set_title(f"{d} layers")
        axes[1][j].set_yscale("log", base=2)
        axes[1][j].axhline(1.0, color="k", lw=0.6)
        axes[1][j].set_xlabel("layer")
        for ax in (axes[0][j], axes[1][j]):
            ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
            ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("‖∂L/∂W_FFN‖ at init")
    axes[1][0].set_ylabel("relative to layer 1")
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    doc.figure(fig, "grad_at_init_profiles.png",
               "Per-layer FFN weight gradient norm at initialization (top), and relative to layer 1 (bottom: rising "
               "= grows toward the output, Xiong et al.'s Post-LN pattern); Post-LN solid, Pre-LN dashed")

    fig, axes = plt.subplots(1, len(depths), figsize=(4.2 * len(depths), 3.4), squeeze=False)
    for ax, d in zip(axes[0], depths):
        for init in inits:
            for norm, style in (("post", "-o"), ("pre", "--s")):
                g = get.get((d, norm, init))
                if g:
                    ax.plot(range(len(g["residual_rms"])), g["residual_rms"], style, color=INIT_COLORS[init], ms=3,
                            label=f"{norm}-LN, {init}")
        ax.set_yscale("log")
        ax.set_title(f"{d} layers")
        ax.set_xlabel("layer boundary (0: embeddings, L: after the last layer)", fontsize=8)
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("residual stream RMS")
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    doc.figure(fig, "grad_at_init_residual.png", "Residual-stream RMS per layer at initialization")

    rows, post_ratios, pre_ratios, matches = [], [], [], 0
    settings = 0
    for d in depths:
        for init in inits:
            post, pre = get.get((d, "post", init)), get.get((d, "pre", init))
            if not post or not pre:
                continue
            rp = post["grad_norm"]["ffn"][-1] / post["grad_norm"]["ffn"][0]
            rq = pre["grad_norm"]["ffn"][-1] / pre["grad_norm"]["ffn"][0]
            post_ratios.append(rp)
            pre_ratios.append(rq)
            settings += 1
            match = rp > GROWS and rq <= GROWS
            matches += match
            rows.append([d, init, fmt(post["grad_norm"]["ffn"][0]), fmt(post["grad_norm"]["ffn"][-1]), fmt(rp, 2),
                         fmt(pre["grad_norm"]["ffn"][0]), fmt(pre["grad_norm"]["ffn"][-1]), fmt(rq, 2),
                         "yes" if match else "no"])
    doc.table(["depth", "init", "post: layer 1", "post: last", "post last/first", "pre: layer 1", "pre: last",
               "pre last/first", "Xiong pattern"], rows)

    f = []
    if settings:
        grows_post = sum(x > GROWS for x in post_ratios)
        grows_pre = sum(x > GROWS for x in pre_ratios)
        flat_or_shrink_pre = settings - grows_pre
        f.append(f"Post-LN: the last layer's FFN gradient norm exceeds the first layer's by more than {GROWS}× in "
                 f"{grows_post} of {settings} (depth, init) settings (median last/first ratio "
                 f"{statistics.median(post_ratios):.2f}).")
        f.append(f"Pre-LN: it stays flat or shrinks toward the output (ratio ≤ {GROWS}) in {flat_or_shrink_pre} of "
                 f"{settings} settings (median ratio {statistics.median(pre_ratios):.2f}).")
        if matches == settings:
            f.append(f"This matches Xiong et al. (2020, Fig. 3) in all {settings} settings.")
        elif matches * 2 >= settings:
            f.append(f"This matches Xiong et al. (2020, Fig. 3) in {matches} of {settings} settings; it disagrees in "
                     f"the rest (see the table).")
        else:
            f.append(f"This disagrees with Xiong et al. (2020, Fig. 3): their pattern (Post-LN growing toward the "
                     f"output, Pre-LN flat) appears in only {matches} of {settings} settings here.")
        # The weaker, relative form of the claim: Post-LN's profile leans
        # more toward the output than Pre-LN's at the same depth and init.
        steeper = sum(rp > rq for rp, rq in zip(post_ratios, pre_ratios))
        f.append(f"Relative form: Post-LN's last/first ratio is above Pre-LN's in {steeper} of {settings} settings "
                 + ("(the same ordering as Xiong et al.)." if steeper * 2 > settings else
                    "(the opposite of Xiong et al.'s ordering in most settings)."))
        # How the Post-LN profile depends on the init's scale: the LayerNorm
        # Jacobians only shape the backward signal when each sub-layer adds
        # something comparable to the residual it is added to.
        by_init = []
        for init in inits:
            rs = [float(r[4]) for r in rows if r[1] == init]
            if rs:
                by_init.append(f"{init} {statistics.median(rs):.2f}")
        if by_init:
            f.append("Post-LN last/first ratio by init (median over depths): " + ", ".join(by_init) + ".")
        fails = []
        for init in inits:
            mine = [r for r in rows if r[1] == init]
            bad = [r for r in mine if r[-1] == "no"]
            if bad:
                where = "every depth" if len(bad) == len(mine) else "depth " + ", ".join(str(r[0]) for r in bad)
                fails.append(f"{init} ({where})")
        if fails:
            f.append("The strict pattern fails for init " + "; ".join(fails) + ".")
        # Xiong et al.: Pre-LN gradients scale like 1/sqrt(L).
        if len(depths) >= 2:
            d0, d1 = depths[0], depths[-1]
            falls = []
            for init in inits:
                a_, b_ = get.get((d0, "pre", init)), get.get((d1, "pre", init))
                if a_ and b_:
                    falls.append((init, statistics.mean(a_["grad_norm"]["ffn"]),
                                  statistics.mean(b_["grad_norm"]["ffn"])))
            if falls:
                n_fall = sum(mb < ma for _, ma, mb in falls)
                f.append(f"Pre-LN's mean FFN gradient norm, {d0} → {d1} layers: " +
                         ", ".join(f"{i} {ma:.3g} → {mb:.3g} (×{mb / ma:.2f})" for i, ma, mb in falls) +
                         f"; Xiong et al.'s 1/√L scaling predicts ×{math.sqrt(d0 / d1):.2f}. It falls for {n_fall} of "
                         f"{len(falls)} inits" + ("." if n_fall * 2 > len(falls) else ", unlike the paper."))
        # Residual growth in Pre-LN.
        g = get.get((depths[-1], "pre", "gpt2")) or get.get((depths[-1], "pre", inits[0]))
        h = get.get((depths[-1], "post", "gpt2")) or get.get((depths[-1], "post", inits[0]))
        if g and h:
            f.append(f"At {depths[-1]} layers the Pre-LN residual stream's RMS grows from {g['residual_rms'][0]:.3g} "
                     f"at the input to {g['residual_rms'][-1]:.3g} after the last layer (nothing normalizes it); "
                     f"Post-LN's stays at {h['residual_rms'][-1]:.3g} (each layer ends in a LayerNorm).")
    doc.h(3, "Findings")
    doc.bullets(f)
    findings[PRESET] = f
