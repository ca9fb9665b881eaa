"""atlas: normalization variants (placement × norm type × the init that
belongs to it) over depth at a fixed lr without warmup, their stability
edge at one depth, the residual stream's growth, and the per-layer gradient
profile at init and during training; four claims of the papers behind them
(DeepNet, ReZero, Sandwich/Peri-LN, RMSNorm)."""
import math
import statistics

from ..common import add_findings, depth_loss_axes, plateau_line, seeds_note
from ..evidence import (atlas_edge_groups, atlas_groups, edge_log2, left_plateau, residual_growth, step_ms,
                        training_growth)
from ..plot import plt
from ..stats import fmt_lr, fmt_msd, mean_sd
from .lr_edge import edge_text, geo, geo_text, plot_seeds

PRESET = "atlas"
TITLE = "atlas: normalization variants over depth"
CLAIMS = ("deepnorm", "rezero-faster", "sandwich-growth", "rmsnorm-cost")
COLORS = {"pre-ln": "tab:blue", "post-ln": "tab:red", "deepnorm": "tab:purple", "sandwich": "tab:green",
          "rezero": "tab:orange", "pre-rms": "tab:cyan", "post-rms": "tab:pink", "t-fixup": "tab:brown",
          "pre-small": "tab:olive"}


def color(variant):
    return COLORS.get(variant, "k")


def variants_of(g):
    out = []
    for (v, _) in g:
        if v not in out:
            out.append(v)
    return out


def layer_grad_profile(row):
    """Per layer, the gradient norm of all its modules together (the
    trainer's diagnostic row: per-layer lists of each module group)."""
    lists = [xs for xs in row.get("grad_norms", {}).values() if isinstance(xs, list)]
    L = max((len(xs) for xs in lists), default=0)
    total = [0.0] * L
    for xs in lists:
        if len(xs) == L:
            total = [t + (x or 0) ** 2 for t, x in zip(total, xs)]
    return [math.sqrt(t) for t in total]


def mean_profile(profiles):
    n = min((len(p) for p in profiles), default=0)
    return [statistics.mean(p[i] for p in profiles) for i in range(n)]


def final_loss_figure(doc, st, g, variants, depths):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for v in variants:
        xs, ms, sds = [], [], []
        for d in depths:
            m, sd = mean_sd([st.final_value(r) for r in g.get((v, d), [])])
            if m is not None:
                xs.append(d), ms.append(m), sds.append(sd or 0.0)
        ax.errorbar(xs, ms, yerr=sds, fmt="-o", color=color(v), capsize=3, label=v)
        for d in depths:
            if any(st.diverged(r) for r in g.get((v, d), [])) and ms:
                ax.plot([d], [max(ms) + 0.1], "x", color=color(v), ms=11, mew=2.5)
    depth_loss_axes(ax, st, depths, "mean ± 1 sd over seeds (a diverged seed counts as ln V); × a seed diverged",
                    fontsize=9)
    doc.figure(fig, "atlas_final_loss.png", "Final validation loss against depth per variant, mean ± sd over seeds")


def edge_figure(doc, eg, variants):
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for i, v in enumerate([v for v in variants if v in eg]):
        ys = [edge_log2(e) for e in eg[v]]
        plot_seeds(ax, i, ys, color(v), 0.06)
        m, sd = geo(ys)
        if m:
            lo, hi = (m / 2 ** sd, m * 2 ** sd) if sd is not None else (m, m)
            ax.errorbar([i], [m], yerr=[[m - lo], [hi - m]], fmt="s", color=color(v), ms=7, capsize=4)
    shown = [v for v in variants if v in eg]
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels(shown)
    ax.set_yscale("log")
    ax.set_ylabel("max stable lr")
    ax.set_title("per seed (circles; ▼/▲ a bound below / at the grid's top) and geometric mean ± sd "
                 "(squares; none where a seed is censored)", fontsize=8)
    ax.grid(alpha=0.3)
    doc.figure(fig, "atlas_edge.png", "Stability edge (largest lr that trains) per variant")


def residual_figure(doc, g, variants, depths):
    deep = depths[-1]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for v in variants:
        for when, style in (("init", "--"), ("final", "-")):
            prof = [((r.get("residual_stream") or {}).get(when) or {}).get("rms") for r in g.get((v, deep), [])]
            prof = [p for p in prof if p]
            if prof:
                a1.plot(range(len(prof[0])), mean_profile(prof), style, color=color(v),
                        label=f"{v} ({'end' if when == 'final' else 'init'})")
        xs, ms, sds = [], [], []
        for d in depths:
            m, sd = mean_sd([residual_growth(r) for r in g.get((v, d), [])])
            if m is not None:
                xs.append(d), ms.append(m), sds.append(sd or 0.0)
        a2.errorbar(xs, ms, yerr=sds, fmt="-o", color=color(v), capsize=3, label=v)
    a1.set_yscale("log")
    a1.set_xlabel("block boundary (0: embeddings)")
    a1.set_ylabel("residual RMS")
    a1.set_title(f"{deep} layers, mean over seeds (dashed: init)", fontsize=9)
    a1.legend(fontsize=6, ncol=2)
    a2.set_xscale("log", base=2)
    a2.set_xticks(depths)
    a2.set_xticklabels([str(d) for d in depths])
    a2.set_yscale("log")
    a2.set_xlabel("layers")
    a2.set_ylabel("RMS after the last block / after the first")
    a2.set_title("growth through the blocks at the end of training", fontsize=9)
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
    doc.figure(fig, "atlas_residual.png", "Residual-stream RMS per block boundary and its growth with depth")


def grad_figure(doc, st, g, variants, depths):
    deep = depths[-1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for v in variants:
        for ax, first in zip(axes, (True, False)):
            prof = []
            for r in g.get((v, deep), []):
                diag = st.metrics.get(r["name"], {}).get("diag", [])
                if diag:
                    prof.append(layer_grad_profile(diag[0] if first else diag[-1]))
            if prof:
                mean = mean_profile(prof)
                ax.plot(range(1, len(mean) + 1), mean, "-", color=color(v), label=v)
    axes[0].set_title(f"{deep} layers, step 0 (init)", fontsize=9)
    axes[1].set_title(f"{deep} layers, last diagnostic step", fontsize=9)
    for ax in axes:
        ax.set_yscale("log")
        ax.set_xlabel("layer")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gradient norm of the layer (mean over seeds)")
    axes[0].legend(fontsize=7)
    doc.figure(fig, "atlas_grad_profile.png", "Per-layer gradient norm at init and during training")


def sweep_table(doc, st, g):
    rows = []
    for (v, d), rs in sorted(g.items(), key=lambda kv: (kv[0][1], list(COLORS).index(kv[0][0])
                                                        if kv[0][0] in COLORS else 99)):
        left = "–" if st.unigram is None else f"{sum(bool(left_plateau(st, r)) for r in rs)}/{len(rs)}"
        rows.append([f"L{d}", v, len(rs), sum(st.diverged(r) for r in rs), left,
                     fmt_msd([st.final_value(r) for r in rs]),
                     fmt_msd([residual_growth(r, "init") for r in rs], 2),
                     fmt_msd([residual_growth(r) for r in rs], 2),
                     fmt_msd([training_growth(r) for r in rs], 2),
                     fmt_msd([step_ms(st, r) for r in rs], 2)])
    doc.table(["depth", "variant", "seeds", "diverged", "left plateau", "final val loss", "residual growth at init",
               "residual growth at end", "growth during training (end / init)", "median step ms"], rows)


def edge_table(doc, eg, variants):
    rows = []
    for v in [v for v in variants if v in eg]:
        _, sd = geo([edge_log2(e) for e in eg[v]])
        rows.append([v, len(eg[v]), geo_text(eg[v]), f"{sd:.2f}" if sd is not None else "–",
                     ", ".join(edge_text(e) for e in eg[v])])
    doc.table(["variant", "seeds", "max stable lr (geometric mean)", "sd (octaves)", "per seed"], rows)


def kept_text(sel):
    """A selection kept when the study grew by --seeds (study/followup.h)."""
    over = sel.get("over_all_seeds")
    if not isinstance(over, dict):
        return ""
    now = over.get("lr")
    now = fmt_lr(now) if isinstance(now, (int, float)) else "none"
    return (f" (chosen from {sel.get('kept_from_seeds', '?')} seeds and swept there before the study grew by "
            f"--seeds; over every seed the rule picks {now})")


def selection_findings(st):
    """Each variant's lr where the study chose it (study/followup.h): the
    depth sweep above ran there, not at one fixed lr."""
    sels = {k[len("atlas-"):]: v for k, v in (st.s.get("selections") or {}).items()
            if k.startswith("atlas-") and isinstance(v, dict) and isinstance(v.get("lr"), (int, float))}
    if not sels:
        return []
    parts = [f"{name} {fmt_lr(sel['lr'])}" + ("" if sel.get("trains") else " (no lr trained: its lowest loss)")
             + kept_text(sel) for name, sel in sels.items()]
    depth = next(iter(sels.values())).get("depth", "?")
    return [f"Each variant's depth sweep ran at its own lr, the best of its selection runs at {depth} layers "
            f"(every seed off the plateau, lowest mean final loss; the rule is fixed in code): " + ", ".join(parts)
            + ". The intro's lr is the first run's; the sweep table's rows differ in lr."]


def draw(doc, st, findings):
    g = atlas_groups(st)
    eg = atlas_edge_groups(st)
    variants = variants_of(g)
    depths = sorted({d for _, d in g})
    runs = [r for rs in g.values() for r in rs]
    if not runs:  # a study still in its lr selection (committed as it runs)
        sel = [r for r in st.runs if r.get("preset") == "atlas"]
        done = sum(r.get("status") in ("completed", "diverged") for r in sel)
        doc.p(f"No depth-sweep run has finished yet: {done} of the {len(sel)} atlas runs planned so far "
              "(lr selection first) have; the section is drawn once the sweep has runs.")
        return
    cfg = runs[0]["config"]
    a = st.budget.get("atlas", {}) if isinstance(st.budget.get("atlas"), dict) else {}
    doc.p(f"{len(runs)} depth-sweep runs ({seeds_note(st, g)}) of {len(variants)} variants ({', '.join(variants)}) "
          f"at n_embd {cfg['model']['n_embd']}, depths {', '.join(map(str, depths))}, {cfg['steps']} steps at a "
          f"fixed lr {fmt_lr(cfg['lr'])} without warmup; and a stability-edge search per variant and seed at "
          f"{a.get('edge_depth', '?')} layers ({sum(len(es) for es in eg.values())} searches, as lr-edge's). "
          "Each variant has the init that belongs to its placement: GPT-2's for pre, post, sandwich and the RMSNorm "
          "ones, DeepNet's β-scaled Xavier for deepnorm, Xavier for ReZero, T-Fixup's for the norm-free t-fixup; "
          "pre-small is Pre-LN with small init instead. The residual stream is measured after every "
          f"block at init and at the end of each sweep run on the same {a.get('residual_batches', '?')} validation "
          "batches (for post and deepnorm it is the norm's output, what the next block reads); 'residual growth' "
          "is its RMS after the last block over its RMS after the first, and 'growth during training' that ratio at "
          "the end over the same run's at init (what the Sandwich verdict compares: Sandwich's output norms make "
          "its stream start out growing more through the blocks).")
    final_loss_figure(doc, st, g, variants, depths)
    sweep_table(doc, st, g)
    if eg:
        edge_figure(doc, eg, variants)
        edge_table(doc, eg, variants)
    residual_figure(doc, g, variants, depths)
    grad_figure(doc, st, g, variants, depths)
    f = selection_findings(st)
    line = plateau_line(st, g, lambda k, rs: f"{k[0]} L{k[1]}")
    if line:
        f.append(line)
    for key in CLAIMS:
        v = st.verdicts.get(key) if st.verdicts else None
        if v:
            f += v.lines(PRESET)
    add_findings(doc, findings, PRESET, f)
