"""depth: Pre-LN vs Post-LN, with and without the residual scale, as depth
grows, over seeds."""
import statistics

from ..common import (add_findings, artefact_line, clip_ylim, depth_loss_axes, plateau_line,
                      plot_band, seeds_note, setting_table)
from ..evidence import artefact_checks, depth_groups, train_target
from ..plot import plt
from ..stats import fmt_lr, fmt_msd, mean_sd
from ..verdicts import Diff, disagrees

PRESET = "depth"
TITLE = "depth: Pre-LN vs Post-LN as depth grows"
STYLES = {"pre-LN, scale": ("tab:blue", "-o"), "pre-LN, no scale": ("tab:cyan", "--s"),
          "post-LN, scale": ("tab:red", "-o"), "post-LN, no scale": ("tab:orange", "--s")}


def variant(norm, scale):
    return f"{norm}-LN, " + ("scale" if scale else "no scale")


def draw_final_loss(doc, st, g, depths, variants):
    """The figure of final validation loss against depth, one line per variant."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (norm, scale) in variants:
        color, style = STYLES.get(variant(norm, scale), ("k", "-o"))
        xs, ms, sds = [], [], []
        for d in depths:
            m, sd = mean_sd([st.final_value(r) for r in g.get((norm, scale, d), [])])
            if m is not None:
                xs.append(d)
                ms.append(m)
                sds.append(sd or 0.0)
        ax.errorbar(xs, ms, yerr=sds, fmt=style, color=color, capsize=3, label=variant(norm, scale))
        for d in depths:
            div = [r for r in g.get((norm, scale, d), []) if st.diverged(r)]
            if div:
                ax.plot([d], [max(ms) + 0.1 if ms else 0], "x", color=color, ms=11, mew=2.5)
    depth_loss_axes(ax, st, depths, "mean ± 1 sd over seeds; × above the curves: a seed diverged", fontsize=10)
    doc.figure(fig, "depth_final_loss.png", "Final validation loss against depth, mean ± sd over seeds; diverged "
                                            "seeds marked ×")


def draw_curves(doc, st, g, depths, variants):
    """The figure of training loss, one panel per depth."""
    fig, axes = plt.subplots(1, len(depths), figsize=(3.8 * len(depths), 3.4), squeeze=False, sharey=True)
    for ax, d in zip(axes[0], depths):
        lows = []
        for (norm, scale) in variants:
            if (norm, scale, d) in g:
                color, _ = STYLES.get(variant(norm, scale), ("k", "-"))
                lows += plot_band(ax, st, g[(norm, scale, d)], color, variant(norm, scale), "-" if scale else "--")
        clip_ylim(ax, st, lows)
        ax.set_title(f"{d} layers")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("loss (nats)")
    axes[0][0].legend(fontsize=7)
    doc.figure(fig, "depth_loss.png", "Training loss per depth, mean over seeds with a ±1 sd band (circles: "
                                      "validation; ×: divergence)")


def variant_findings(st, g, depths, variants):
    """Per variant: divergence and final loss by depth; per placement: divergence, spikes, the plateau."""
    f = []
    for (norm, scale) in variants:
        div = [d for d in depths if any(st.diverged(r) for r in g.get((norm, scale, d), []))]
        fin = [(d, [st.final_value(r) for r in g[(norm, scale, d)]]) for d in depths if (norm, scale, d) in g]
        line = f"{variant(norm, scale)}: a seed diverged at {len(div)} depth{'s' if len(div) != 1 else ''}" + \
            (f" ({', '.join(map(str, div))} layers)" if div else "")
        if fin:
            line += "; final validation loss " + ", ".join(f"{d}L {fmt_msd(x)}" for d, x in fin)
            best = min(fin, key=lambda t: statistics.mean([v for v in t[1] if v is not None] or [float("inf")]))
            line += f" (best mean at {best[0]} layers)"
        f.append(line + ".")
    for norm in ("post", "pre"):
        n = [r for k, rs in g.items() if k[0] == norm for r in rs]
        if n:
            f.append(f"{'Post' if norm == 'post' else 'Pre'}-LN: {sum(st.diverged(r) for r in n)} of {len(n)} runs "
                     f"diverged, {sum(st.spikes(r) or 0 for r in n)} loss spikes recovered (the trainer's count).")
        line = plateau_line(st, {k: rs for k, rs in g.items() if k[0] == norm},
                            lambda k, rs: f"{k[2]}L {'scale' if k[1] else 'no scale'}")
        if line and n:
            f.append(f"{'Post' if norm == 'post' else 'Pre'}-LN: " + line[0].lower() + line[1:])
    return f


def deepest_findings(st, g, depths):
    """Pre vs Post at the deepest depth, each with its better scale setting."""
    f = []
    deep = depths[-1]
    best = {}
    for norm in ("pre", "post"):
        cands = [g[(norm, s, deep)] for s in (True, False) if (norm, s, deep) in g]
        if cands:
            best[norm] = min(([st.final_value(r) for r in rs] for rs in cands),
                             key=lambda vs: statistics.mean([v for v in vs if v is not None] or [float("inf")]))
    if len(best) == 2:
        d = Diff(best["pre"], best["post"])
        if d.sign < 0:
            f.append(f"At {deep} layers Pre-LN trains better than Post-LN (each with its better scale setting: "
                     f"{d.text()}), as Xiong et al. (2020) predict for deep Post-LN without warmup.")
        elif d.sign > 0:
            f.append(f"At {deep} layers Post-LN trains better than Pre-LN ({d.text()}); this disagrees with Xiong et "
                     "al. (2020)'s expectation that deep Post-LN without warmup trains worse. " +
                     artefact_line(st, artefact_checks(st)))
        else:
            f.append(f"At {deep} layers Pre-LN and Post-LN end within seed noise of each other ({d.text()}); Xiong "
                     "et al. (2020) expect deep Post-LN without warmup to train worse.")
    return f


def draw(doc, st, findings):
    g = depth_groups(st)
    runs = [r for rs in g.values() for r in rs]
    depths = sorted({k[2] for k in g})
    variants = []
    for (norm, scale, _) in g:
        if (norm, scale) not in variants:
            variants.append((norm, scale))
    cfg = runs[0]["config"]
    doc.p(f"{len(runs)} training runs ({seeds_note(st, g)}), n_embd {cfg['model']['n_embd']}, depths "
          f"{', '.join(map(str, depths))}, {cfg['steps']} steps at a fixed lr {fmt_lr(cfg['lr'])} with no warmup; "
          "'scale' is GPT-2's init, 'no scale' the same normal(0.02) without the 1/√(2L) residual scaling. A "
          "diverged seed counts as ln V in the means below.")
    draw_final_loss(doc, st, g, depths, variants)
    draw_curves(doc, st, g, depths, variants)
    target = train_target(st, runs)
    header, rows = setting_table(st, g, target, lambda k, rs: f"L{k[2]}, {variant(k[0], k[1])}")
    doc.table(header, rows)
    f = variant_findings(st, g, depths, variants) + deepest_findings(st, g, depths)
    v = st.verdicts.get("scale-depth") if st.verdicts else None
    if v:
        f += v.lines(PRESET)
        if disagrees(v):
            f.append("Radford et al. (2019) scale the residual projections because their effect accumulates with "
                     "depth; where the verdict is 'not observed', 'mixed' or 'contradicted', this study does not show "
                     "that. " +
                     artefact_line(st, artefact_checks(st)))
    add_findings(doc, findings, PRESET, f)
