"""lr-edge: the largest learning rate that still trains, per placement ×
warmup × clipping, over seeds (Xiong et al. 2020: Pre-LN tolerates larger
learning rates and needs no warmup)."""
import statistics

from ..common import add_findings, artefact_line
from ..evidence import PROBE_CLASSES, artefact_checks, edge_groups, edge_log2, finished, two_edges
from ..plot import COLORS, plt
from ..stats import Bound, fmt_lr
from ..verdicts import Diff, disagrees, edge_label, log2_text, octaves

PRESET = "lr-edge"
TITLE = "lr-edge: learning-rate stability edge"
NAME = {"pre": "Pre-LN", "post": "Post-LN"}


def seed_of(e):
    """A search's seed as its run names give it: s1, s2, ... (seed index + 1)."""
    s = e["setting"]
    i = s.get("seed_index")
    return f"s{i + 1}" if isinstance(i, int) else str(s.get("seed", "s1"))


def edge_text(e):
    """A search's edge in words: the lr, '< lowest' when nothing trained,
    '≥ top' when everything up to the grid's top did."""
    grid = sorted(e.get("grid") or [p["lr"] for p in e.get("probes", [])])
    if not isinstance(e.get("edge"), (int, float)):
        return f"< {fmt_lr(grid[0])}" if grid else "none"
    text = fmt_lr(e["edge"])
    if e.get("failed") is None:
        text = "≥ " + text
    return text + ("" if e.get("complete", True) else " (incomplete)")


def non_monotone(e):
    """A probe that trained at a larger lr than one that did not."""
    probes = e.get("probes", [])
    failed = [p["lr"] for p in probes if not p.get("trains")]
    return bool(failed) and any(p.get("trains") and p["lr"] > min(failed) for p in probes)


def geo(values):
    """(geometric mean, sd of log2) of per-seed log2 edges; (None, None)
    when a seed's edge is a Bound (censored: never averaged)."""
    xs = [x for x in values if x is not None]
    if not xs or any(isinstance(x, Bound) for x in xs):
        return None, None
    return 2 ** statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else None)


def geo_text(es):
    """The max stable lr of a setting's searches in words: the geometric
    mean where every seed's edge lies inside the grid; else the bound, when
    every seed has the same one ('< 2e-4', '≥ 1.6e-2'); else no mean, how
    many seeds lie outside the grid (their values are in the per-seed
    column)."""
    ys = [y for y in (edge_log2(e) for e in es) if y is not None]
    if not ys:
        return "–"
    bounds = [y for y in ys if isinstance(y, Bound)]
    if not bounds:
        return fmt_lr(geo(ys)[0])
    if len(bounds) == len(ys) and len(set(bounds)) == 1:
        return bounds[0].map(lambda x: 2 ** x).text(fmt_lr)
    below = sum(b.kind == "<" for b in bounds)
    above = len(bounds) - below
    out = [f"{below} below the grid"] * bool(below) + [f"{above} at its top"] * bool(above)
    return f"no mean ({', '.join(out)})"


def describe(doc, st, g, scans, grid):
    """The searches and how an edge is read, before the table."""
    runs = finished(st, PRESET)
    lr_budget = st.budget.get("lr_edge", {}) if isinstance(st.budget.get("lr_edge"), dict) else {}
    cfg = runs[0]["config"] if runs else {}
    model = cfg.get("model", {})
    seeds = sorted({len(v) for v in g.values()})
    margin = lr_budget.get("margin")
    doc.p(f"For each placement × warmup × clipping setting and each seed, training runs at increasing learning "
          f"rates from the grid {', '.join(fmt_lr(x) for x in grid)} ({len(runs)} probe runs"
          + (f" of a {model.get('n_layer', '?')}-layer, n_embd {model.get('n_embd', '?')} GPT-2, "
             f"{cfg.get('steps', '?')} steps" if cfg else "")
          + f"; {'–'.join(map(str, seeds))} seed{'s' if seeds and seeds[-1] != 1 else ''} "
          f"per setting). A probe trains when gpt2lab marks it so (it did not diverge and ended below the unigram "
          f"plateau" + (f" by more than {margin:g} nats" if isinstance(margin, (int, float)) else "") + "); the "
          "max stable lr of a search is the largest lr that trained. Over seeds it is summarized by the geometric "
          "mean and the sd of log2 (in octaves, factors of 2). A search where nothing trained is a bound, '< the "
          "lowest probe', one where everything trained '≥ the grid's top': a bound is never averaged, and a "
          "comparison with one is resolved only when the bound itself decides it."
          + (" For the exhaustive scans above, this table's 'max stable lr' is the largest lr that trained; the "
             "verdicts compare their stability edges." if scans else ""))


def edge_table(doc, g, settings):
    """The table of max stable lr per setting."""
    rows = []
    for (wf, clip) in settings:
        for norm in ("pre", "post"):
            es = g.get((norm, wf, clip))
            if not es:
                continue
            _, sd = geo([edge_log2(e) for e in es])
            rows.append([NAME.get(norm, norm), "no" if not wf else f"{wf:.0%}", f"{clip:g}" if clip else "off",
                         len(es), geo_text(es), f"{sd:.2f}" if sd is not None else "–",
                         ", ".join(edge_text(e) for e in es),
                         f"{sum(bool(e.get('complete', True)) for e in es)}/{len(es)}"])
    doc.table(["placement", "warmup", "clipping", "seeds", "max stable lr (geometric mean)", "sd (octaves)",
               "per seed", "searches complete"], rows)


def draw_edges(doc, g, settings, grid):
    """The figure of max stable lr per setting: per-seed points, mean ± sd."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.9 * len(settings) + 2), 4.2))
    xt, xl = [], []
    for i, (wf, clip) in enumerate(settings):
        for j, norm in enumerate(("pre", "post")):
            es = g.get((norm, wf, clip))
            if not es:
                continue
            x = i + (j - 0.5) * 0.36
            ys = [edge_log2(e) for e in es]
            plot_seeds(ax, x, ys, COLORS[norm], 0.04)
            m, sd = geo(ys)
            if m:
                lo, hi = (m / 2 ** sd, m * 2 ** sd) if sd is not None else (m, m)
                ax.errorbar([x], [m], yerr=[[m - lo], [hi - m]], fmt="s", color=COLORS[norm], ms=7, capsize=4,
                            label=f"{norm}-LN" if i == 0 else None)
        xt.append(i)
        xl.append(edge_label(wf, clip).replace(", ", "\n"))
    if grid:
        for lr in (grid[0], grid[-1]):
            ax.axhline(lr, color="k", ls=":", lw=0.7)
    ax.set_yscale("log")
    ax.set_xticks(xt)
    ax.set_xticklabels(xl, fontsize=8)
    ax.set_ylabel("max stable lr")
    ax.set_title("squares: geometric mean ± 1 sd over seeds (none where a seed is censored); circles: each seed; "
                 "▼/▲: a bound (< lowest probe / ≥ top); dotted: grid ends", fontsize=8)
    ax.grid(alpha=0.3, which="both", axis="y")
    ax.legend(fontsize=8)
    doc.figure(fig, "lr_edge.png", "Max stable learning rate per placement, warmup and clipping (log scale)")


def draw_probes(doc, g, settings):
    """The figure of every probe: lr against outcome, one row per (placement, seed)."""
    fig, axes = plt.subplots(1, max(1, len(settings)), figsize=(4.0 * max(1, len(settings)), 3.6), squeeze=False,
                             sharey=True)
    ylabels = []
    for i, (wf, clip) in enumerate(settings):
        ax = axes[0][i]
        y = 0
        ylabels = []
        for norm in ("pre", "post"):
            for e in g.get((norm, wf, clip), []):
                for p in e.get("probes", []):
                    ok = bool(p.get("trains"))
                    ax.plot([p["lr"]], [y], "o" if ok else "x", color=COLORS[norm] if ok else "k",
                            ms=6 if ok else 7, mew=1.8)
                if isinstance(e.get("edge"), (int, float)):
                    ax.plot([e["edge"]], [y], "|", color=COLORS[norm], ms=16, mew=2)
                ylabels.append(f"{norm} {seed_of(e)}")
                y += 1
        ax.set_xscale("log")
        ax.set_title(edge_label(wf, clip), fontsize=9)
        ax.set_xlabel("learning rate")
        ax.grid(alpha=0.3, which="both", axis="x")
        ax.set_yticks(range(len(ylabels)))
        ax.set_yticklabels(ylabels, fontsize=7)
    doc.figure(fig, "lr_edge_probes.png", "Every probe: ● trained, × did not (| the search's edge); one row per "
                                          "placement and seed")


def probe_table(doc, g, settings):
    """The table of every probe, in lr order."""
    prow = []
    for (wf, clip) in settings:
        for norm in ("pre", "post"):
            for e in g.get((norm, wf, clip), []):
                probes = sorted(e.get("probes", []), key=lambda p: p["lr"])
                prow.append([NAME.get(norm, norm), edge_label(wf, clip), seed_of(e),
                             " ".join(f"{fmt_lr(p['lr'])} {'✓' if p.get('trains') else '✗'}" for p in probes),
                             edge_text(e), "yes" if non_monotone(e) else "no"])
    doc.p("Every probe (✓ trained, ✗ did not), in lr order:")
    doc.table(["placement", "setting", "seed", "probes", "max stable lr", "non-monotone"], prow)


def edge_findings(g, settings):
    """The edges per placement, non-monotone searches, searches outside the grid."""
    f = []
    for norm in ("pre", "post"):
        parts = []
        for (wf, clip) in settings:
            es = g.get((norm, wf, clip))
            if es:
                _, sd = geo([edge_log2(e) for e in es])
                parts.append(f"{edge_label(wf, clip)} {geo_text(es)}" + (f" (sd {sd:.2f} octaves)" if sd is not None
                                                                         and not geo_text(es).startswith("<") else ""))
        if parts:
            f.append(f"{NAME[norm]} max stable lr (geometric mean over seeds): " + "; ".join(parts) + ".")
    every = [e for es in g.values() for e in es]
    bumpy = [e for e in every if non_monotone(e)]
    f.append(f"{len(bumpy)} of {len(every)} searches are non-monotone (a larger lr trained where a smaller one did "
             "not)" + (": " + ", ".join(f"{e['setting'].get('norm')}-LN {edge_label(*edge_key(e))} seed "
                                        f"{seed_of(e)}" for e in bumpy) + "." if bumpy else "."))
    nothing = [e for e in every if not isinstance(e.get("edge"), (int, float))]
    top = [e for e in every if isinstance(e.get("edge"), (int, float)) and e.get("failed") is None]
    if nothing or top:
        f.append(f"Searches outside the grid: nothing trained in {len(nothing)}, everything trained in {len(top)} "
                 f"of {len(every)}.")
    return f


def warmup_clip_findings(g, settings):
    """Warmup and clipping, per placement."""
    f = []
    warmups = sorted({w for w, _ in settings})
    clips = sorted({c for _, c in settings})
    for norm in ("post", "pre"):
        by_warmup = [((warmups[0], c), (warmups[-1], c)) for c in clips] if len(warmups) > 1 else []
        by_clip = [((w, clips[0]), (w, clips[-1])) for w in warmups] if len(clips) > 1 else []
        for what, pairs in (("warmup", by_warmup), ("clipping", by_clip)):
            parts = []
            for a, b in pairs:
                ea, eb = g.get((norm, *a)), g.get((norm, *b))
                if ea and eb:
                    d = Diff([edge_log2(e) for e in eb], [edge_log2(e) for e in ea])
                    word = {1: ", raises it", -1: ", lowers it"}.get(d.sign, "")
                    parts.append(f"{edge_label(*b)} vs {edge_label(*a)}: {d.text(log2_text, octaves)}{word}")
            if parts:
                f.append(f"{NAME[norm]}, effect of {what} on the max stable lr: " + "; ".join(parts) + ".")
    return f


def add_verdicts(st, f):
    """Adds the stable-gradients and no-warmup verdicts' lines to the findings f."""
    disagree = False
    v = st.verdicts.get("stable-gradients") if st.verdicts else None
    if v:
        f += v.lines(PRESET)
        disagree = disagrees(v)
    v = st.verdicts.get("no-warmup") if st.verdicts else None
    if v:
        f.append(v.line())
        disagree = disagree or disagrees(v)
    if disagree:
        f.append("Xiong et al. (2020) find Pre-LN trainable at larger learning rates and without warmup; where a "
                 "verdict above is 'not observed', 'mixed' or 'contradicted', this study does not show that. " +
                 artefact_line(st, artefact_checks(st)))


def draw(doc, st, findings):
    g = edge_groups(st)
    scans = two_edges(st)
    if scans:
        draw_two_edges(doc, st, scans)
    settings = sorted({(w, c) for (_, w, c) in g})
    grid = sorted({lr for es in g.values() for e in es for lr in (e.get("grid") or [])} or
                  {p["lr"] for es in g.values() for e in es for p in e.get("probes", [])})
    describe(doc, st, g, scans, grid)
    edge_table(doc, g, settings)
    draw_edges(doc, g, settings, grid)
    draw_probes(doc, g, settings)
    probe_table(doc, g, settings)
    f = edge_findings(g, settings) + warmup_clip_findings(g, settings)
    add_verdicts(st, f)
    f = two_edge_findings(st) + f
    add_findings(doc, findings, PRESET, f)


CLASS_MARK = {"diverged": "D", "stuck": "P", "spiked": "S", "trained": "T"}


def edge_values_text(values):
    """Per-seed log2 edges in words: the geometric mean (± sd in octaves)
    when every seed lies inside the grid, else each seed's value or bound."""
    xs = [x for x in values if x is not None]
    if not xs:
        return "–"
    if len(set(xs)) == 1 and isinstance(xs[0], Bound):
        return xs[0].map(lambda v: 2 ** v).text(fmt_lr) + (" (every seed)" if len(xs) > 1 else "")
    m, sd = geo(xs)
    if m is not None:
        return fmt_lr(m) + (f" (sd {sd:.2f} oct)" if sd is not None else "")
    return ", ".join(x.map(lambda v: 2 ** v).text(fmt_lr) if isinstance(x, Bound) else fmt_lr(2 ** x) for x in xs)


def draw_two_edges(doc, st, scans):
    """The exhaustive scans (study v3): every probe's class and the two
    edges per setting."""
    doc.p("Every grid point is probed for every setting and seed, and each probe is classified: **D** diverged "
          "(the trainer's rule: a non-finite loss, or one above ln V + margin for a window of steps), **P** ended on "
          "the unigram plateau (did not learn within the horizon), **S** left it after a loss spike it recovered "
          "from, **T** trained. Two edges are read off each scan: the **stability edge**, the highest lr below the "
          "first divergence, and the **trainability edge**, the lowest lr that left the plateau. Where the grid does "
          "not reach an edge it is a bound (no divergence: '≥ the top'; nothing left the plateau: '≥ the top'; the "
          "lowest probe already did: '< the lowest').")
    rows = []
    for (norm, wf, clip), x in sorted(scans.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0] != "pre")):
        lrs = sorted({lr for c in x["classes"] for lr, _ in c})
        by_lr = {lr: [dict(c).get(lr) for c in x["classes"]] for lr in lrs}
        grid = " ".join(fmt_lr(lr) + ":" + "".join(CLASS_MARK.get(k, "?") for k in by_lr[lr] if k) for lr in lrs)
        rows.append([NAME.get(norm, norm), edge_label(wf, clip), len(x["classes"]),
                     edge_values_text(x["stability"]), edge_values_text(x["trainability"]), grid])
    doc.table(["placement", "setting", "seeds", "stability edge (highest lr that does not diverge)",
               "trainability edge (lowest lr that leaves the plateau)", "probe classes per lr (one letter a seed)"],
              rows)


def two_edge_findings(st):
    scans = two_edges(st)
    out = []
    for (norm, wf, clip), x in sorted(scans.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0] != "pre")):
        counts = {k: sum(c == k for cl in x["classes"] for _, c in cl) for k in PROBE_CLASSES}
        out.append(f"{NAME.get(norm, norm)}, {edge_label(wf, clip)}: stability edge "
                   f"{edge_values_text(x['stability'])}, trainability edge {edge_values_text(x['trainability'])} "
                   f"(probes: {', '.join(f'{n} {k}' for k, n in counts.items())}).")
    probes = [c for x in scans.values() for cl in x["classes"] for _, c in cl]
    thrown = sum(1 for x in scans.values() for cl in x["classes"] for i, (_, c) in enumerate(cl)
                 if c == "stuck" and any(k in ("trained", "spiked") for _, k in cl[:i]))
    if probes and "diverged" not in probes and thrown:
        out.append(f"No probe diverged: above its trainable range a model was thrown back to the unigram plateau "
                   f"({thrown} probes stuck at an lr above one that trained), so the stability edge is censored at "
                   "the grid's top and the largest lr that trains (the 'max stable lr' below) is what separates "
                   "the placements.")
    return out


def plot_seeds(ax, x, ys, color, spread):
    """Each seed's edge at x: a circle at its lr, a bound as a triangle at
    the bound pointing the way the value lies (▼ below, ▲ at or above)."""
    for k, y in enumerate(ys):
        if y is None:
            continue
        at = x + (k - (len(ys) - 1) / 2) * spread
        if isinstance(y, Bound):
            ax.plot([at], [2 ** y.value], "v" if y.kind == "<" else "^", color=color, ms=6, alpha=0.8)
        else:
            ax.plot([at], [2 ** y], "o", color=color, ms=4, alpha=0.6, mfc="white")


def edge_key(e):
    s = e["setting"]
    return float(s.get("warmup_fraction") or 0), float(s.get("clip") or 0)
