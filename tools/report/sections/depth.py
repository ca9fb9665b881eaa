"""depth: Pre-LN vs Post-LN, with and without the residual scale, as depth grows."""
from ..common import clip_ylim, plateau_finding, plot_losses, preset_target, train_table
from ..plot import plt
from ..stats import fmt, fmt_lr, plural


PRESET = "depth"
TITLE = "depth: Pre-LN vs Post-LN as depth grows"

def depth_variant(r):
    v = r["variables"]
    return f"{v['norm']}-LN, " + ("scale" if v["residual_scale"] else "no scale")


def draw(doc, st, findings):
    runs = [r for r in st.preset_runs(PRESET) if r.get("status") in ("completed", "diverged")]
    depths = sorted({r["variables"]["depth"] for r in runs})
    variants = []
    for r in runs:
        if depth_variant(r) not in variants:
            variants.append(depth_variant(r))
    cfg = runs[0]["config"]
    doc.p(f"{len(runs)} training runs, n_embd {cfg['model']['n_embd']}, depths {', '.join(map(str, depths))}, "
          f"{cfg['steps']} steps at a fixed lr {fmt_lr(cfg['lr'])} with no warmup; 'scale' is GPT-2's init, "
          "'no scale' the same normal(0.02) without the 1/√(2L) residual scaling.")
    cell = {(depth_variant(r), r["variables"]["depth"]): r for r in runs}
    styles = {"pre-LN, scale": ("tab:blue", "-o"), "pre-LN, no scale": ("tab:cyan", "--s"),
              "post-LN, scale": ("tab:red", "-o"), "post-LN, no scale": ("tab:orange", "--s")}

    fig, ax = plt.subplots(figsize=(7, 4.2))
    top = 0
    for v in variants:
        color, style = styles.get(v, ("k", "-o"))
        xs = [d for d in depths if (v, d) in cell and st.val_loss(cell[(v, d)]) is not None]
        ys = [st.val_loss(cell[(v, d)]) for d in xs]
        top = max([top] + ys)
        ax.plot(xs, ys, style, color=color, label=v)
    for v in variants:
        color, _ = styles.get(v, ("k", "-o"))
        xd = [d for d in depths if (v, d) in cell and st.diverged(cell[(v, d)])]
        if xd:
            ax.plot(xd, [top + 0.1] * len(xd), "x", color=color, ms=11, mew=2.5)
    if st.unigram is not None:
        ax.axhline(st.unigram, color="k", ls=":", lw=0.9, label="unigram baseline")
    ax.set_xscale("log", base=2)
    ax.set_xticks(depths)
    ax.set_xticklabels([str(d) for d in depths])
    ax.set_xlabel("layers")
    ax.set_ylabel("final validation loss (nats)")
    ax.set_title("× above the curves: diverged")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    doc.figure(fig, "depth_final_loss.png", "Final validation loss against depth; diverged runs marked ×")

    fig, axes = plt.subplots(1, len(depths), figsize=(3.8 * len(depths), 3.4), squeeze=False, sharey=True)
    for ax, d in zip(axes[0], depths):
        lows = []
        for v in variants:
            if (v, d) in cell:
                color, style = styles.get(v, ("k", "-"))
                lows += plot_losses(ax, st, cell[(v, d)], color, v, "-" if "no scale" not in v else "--")
        clip_ylim(ax, st, lows)
        ax.set_title(f"{d} layers")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("loss (nats)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    doc.figure(fig, "depth_loss.png", "Training loss per depth (smoothed; circles: validation; ×: divergence)")

    target = preset_target(st, runs)
    header, rows = train_table(st, runs, target)
    doc.table(header, rows)

    f = []
    for v in variants:
        div = [d for d in depths if (v, d) in cell and st.diverged(cell[(v, d)])]
        fin = [(d, st.val_loss(cell[(v, d)])) for d in depths if (v, d) in cell and st.val_loss(cell[(v, d)]) is not None]
        line = f"{v}: diverged at {plural(len(div), 'depth')}" + (f" ({', '.join(map(str, div))} layers)" if div else "")
        if fin:
            line += "; final validation loss " + ", ".join(f"{d}L {x:.3f}" for d, x in fin)
            best = min(fin, key=lambda t: t[1])
            line += f" (best at {best[0]} layers)"
        f.append(line + ".")
    pre_div = sum(st.diverged(r) for r in runs if r["variables"]["norm"] == "pre")
    post_div = sum(st.diverged(r) for r in runs if r["variables"]["norm"] == "post")
    n_pre = sum(r["variables"]["norm"] == "pre" for r in runs)
    n_post = sum(r["variables"]["norm"] == "post" for r in runs)
    f.append(f"In all: Post-LN diverged in {post_div} of {n_post} runs, Pre-LN in {pre_div} of {n_pre}.")
    for norm in ("post", "pre"):
        line = plateau_finding(st, [r for r in runs if r["variables"]["norm"] == norm],
                               "Post-LN" if norm == "post" else "Pre-LN")
        if line:
            f.append(line)
    deep = depths[-1]
    a = [cell[(v, deep)] for v in variants if v.startswith("pre") and (v, deep) in cell]
    b = [cell[(v, deep)] for v in variants if v.startswith("post") and (v, deep) in cell]
    va = [st.val_loss(r) for r in a if st.val_loss(r) is not None]
    vb = [st.val_loss(r) for r in b if st.val_loss(r) is not None]
    if a and b:
        pre_best = min(va) if va else None
        post_best = min(vb) if vb else None
        if pre_best is not None and (post_best is None or pre_best < post_best):
            f.append(f"At {deep} layers Pre-LN trains better (best {fmt(pre_best)} vs "
                     f"{fmt(post_best) if post_best is not None else 'all diverged'} for Post-LN), as Xiong et al. "
                     "(2020) predict for deep Post-LN without warmup.")
        else:
            f.append(f"At {deep} layers Post-LN is not worse than Pre-LN here (best {fmt(post_best)} vs "
                     f"{fmt(pre_best)}); this disagrees with Xiong et al. (2020)'s expectation that deep Post-LN "
                     "without warmup trains worse.")
    doc.h(3, "Findings")
    doc.bullets(f)
    findings[PRESET] = f
