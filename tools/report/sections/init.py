"""init: initialization schemes, GPT-2's residual scale (Radford et al. 2019)
and the symmetry zero init never breaks, over seeds."""
import math
import statistics

from ..common import add_findings, artefact_line, clip_ylim, plateau_line, plot_band, seeds_note, setting_table
from ..evidence import artefact_checks, init_groups, init_label, train_target
from ..plot import INIT_COLORS, plt
from ..stats import GROWS, fmt_lr, fmt_msd, fmt_ratio, plural
from ..verdicts import Diff, disagrees

PRESET = "init"
TITLE = "init: initialization schemes and the residual scale"


def layer_norm_series(m):
    """Per-layer total gradient norm (all module groups) at each diagnostic step."""
    steps, per_layer = [], []
    for row in m["diag"]:
        g = row["grad_norms"]
        L = len(g["attn.c_attn"])
        vals = [math.sqrt(sum(g[k][layer] ** 2 for k in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj",
                                                         "ln_1", "ln_2"))) for layer in range(L)]
        steps.append(row["step"])
        per_layer.append(vals)
    return steps, per_layer


def last_ratio(st, r):
    """Last/first layer gradient norm at a run's last diagnostic step, or None."""
    _, per_layer = layer_norm_series(st.metrics.get(r["name"], {"diag": []}))
    return per_layer[-1][-1] / per_layer[-1][0] if per_layer and per_layer[-1][0] > 0 else None


def draw_loss(doc, st, g, norms):
    """The figure of training loss per init scheme, one panel per placement."""
    fig, axes = plt.subplots(1, len(norms), figsize=(6.5 * len(norms), 4), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, norm in zip(axes[0], norms):
        lows = []
        for i, (k, rs) in enumerate((k, rs) for k, rs in g.items() if k[0] == norm):
            lows += plot_band(ax, st, rs, cmap(i % 10), k[1], "-" if "scale" not in k[1] else "--")
        clip_ylim(ax, st, lows)
        ax.set_title(f"{norm}-LN")
        ax.set_xlabel("step")
        ax.set_ylabel("loss (nats)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    doc.figure(fig, "init_loss.png", "Training loss per init scheme, mean over seeds with a ±1 sd band (circles: "
                                     "validation)")


def draw_layer_norms(doc, st, g, norms):
    """The figure of per-layer gradient norms over training, first seed of each scheme."""
    firsts = {k: rs[0] for k, rs in g.items()}
    cols = max(sum(k[0] == n for k in g) for n in norms)
    fig, axes = plt.subplots(len(norms), cols, figsize=(2.9 * cols, 2.6 * len(norms)), squeeze=False, sharey=True)
    for i, norm in enumerate(norms):
        group = [(k, r) for k, r in firsts.items() if k[0] == norm]
        for j in range(cols):
            ax = axes[i][j]
            if j >= len(group):
                ax.axis("off")
                continue
            k, r = group[j]
            steps, per_layer = layer_norm_series(st.metrics[r["name"]])
            if per_layer:
                L = len(per_layer[0])
                for layer in range(L):
                    ys = [max(v[layer], 1e-12) for v in per_layer]
                    ax.plot(steps, ys, color=plt.get_cmap("viridis")(layer / max(1, L - 1)), lw=1,
                            label=f"layer {layer + 1}" if j == 0 else None)
            ax.set_yscale("log")
            ax.set_title(f"{norm}-LN, {k[1]}", fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        axes[i][0].set_ylabel("per-layer ‖g‖", fontsize=8)
        axes[i][0].legend(fontsize=6)
    doc.figure(fig, "init_layer_grad_norms.png",
               "Per-layer gradient norm over training, all of a layer's parameters, first seed of each scheme "
               "(dark: first layer, light: last layer)")


def draw_symmetry(doc, g):
    """The figure of the first layer's hidden-unit symmetry, where runs recorded it."""
    sym = {k: [r["symmetry"][0] for r in rs if r.get("symmetry")] for k, rs in g.items()}
    sym = {k: v for k, v in sym.items() if v}
    if sym:
        keys = list(sym)
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
        colors = [INIT_COLORS.get(k[1].split("+")[0], "k") for k in keys]
        for ax, field, yl in ((axes[0], None, "distinct hidden units / all"),
                              (axes[1], "spread", "spread across hidden units")):
            per = [[(s["distinct_units"] / s["units"]) if field is None else s[field] for s in sym[k]] for k in keys]
            ax.bar(range(len(keys)), [statistics.mean(p) for p in per], color=colors, alpha=0.7)
            for x, p in enumerate(per):
                ax.plot([x] * len(p), p, "k.", ms=4)
            ax.set_ylabel(yl)
            ax.set_xticks(range(len(keys)))
            ax.set_xticklabels([f"{k[0]}\n{k[1]}" for k in keys], fontsize=7, rotation=60)
            ax.grid(alpha=0.3, axis="y")
            ax.set_title("layer 1 MLP, after training (bar: mean, dots: seeds)", fontsize=10)
        doc.figure(fig, "init_symmetry.png", "Symmetry of the first layer's MLP hidden units after training")


def tables(doc, st, g, target):
    """The table per setting and the hidden-unit symmetry table."""
    header, rows = setting_table(st, g, target, lambda k, rs: f"{k[0]}-LN, {k[1]}")
    doc.table(header, rows)
    srows = []
    for k, rs in g.items():
        layers = sorted({s["layer"] for r in rs for s in r.get("symmetry") or []})
        for layer in layers:
            ss = [s for r in rs for s in r.get("symmetry") or [] if s["layer"] == layer]
            srows.append([f"{k[0]}-LN, {k[1]}", layer + 1,
                          ", ".join(f"{s['distinct_units']}" for s in ss) + f" / {ss[0]['units']}",
                          fmt_msd([s["spread"] for s in ss], 4), fmt_msd([s["weight_rms"] for s in ss], 4),
                          fmt_msd([s["relative_spread"] for s in ss], 3)])
    doc.p("Hidden-unit symmetry after training (per seed, or mean ± sd over seeds): a unit is its incoming "
          "mlp.c_fc weights and bias; 'spread' is the RMS over inputs of the standard deviation across units (0 = "
          "all units identical).")
    doc.table(["setting", "layer", "distinct units (per seed)", "spread", "weight RMS", "spread / RMS"], srows)


def placement_findings(st, g, norms):
    """Per placement: zero init's symmetry, the ranking, the residual scale, the gradient profile."""
    f = []
    for norm in norms:
        group = {k[1]: rs for k, rs in g.items() if k[0] == norm}
        zero = [r for r in group.get("zero", []) if r.get("symmetry")]
        others = [r for lab, rs in group.items() if lab != "zero" for r in rs if r.get("symmetry")]
        if zero:
            zs = [r["symmetry"][0] for r in zero]
            dmax = max(z["distinct_units"] for z in zs)
            steps = zero[0].get("checkpoint_step", "?")
            same = all(z["distinct_units"] == dmax for z in zs)
            line = (f"{norm}-LN, zero init: after {steps} steps the first layer's MLP has {dmax} distinct hidden "
                    f"unit{'s' if dmax != 1 else ''} out of {zs[0]['units']}"
                    + (" in every seed" if same and len(zs) > 1 else "" if same else
                       f" at most (per seed: {', '.join(str(z['distinct_units']) for z in zs)})")
                    + f" (spread {max(z['spread'] for z in zs):.3g})")
            if others:
                lo = min(o["symmetry"][0]["distinct_units"] for o in others)
                line += (f"; every other scheme keeps at least {lo} of {others[0]['symmetry'][0]['units']} distinct "
                         f"(spread {min(o['symmetry'][0]['spread'] for o in others):.3g} or more)")
            line += "."
            if dmax == 1:
                line += " The symmetry is never broken: identical units get identical gradients."
            f.append(line)
        ranked = sorted(((lab, [st.final_value(r) for r in rs]) for lab, rs in group.items()),
                        key=lambda x: statistics.mean([v for v in x[1] if v is not None] or [math.inf]))
        if ranked:
            f.append(f"{norm}-LN ranking by final validation loss (mean ± sd over seeds; a diverged seed counts as "
                     "ln V): " + ", ".join(f"{lab} {fmt_msd(vs)}" for lab, vs in ranked) + ".")
        if "zero" in group and len(ranked) > 1:
            best = next(x for x in ranked if x[0] != "zero")
            d = Diff([st.final_value(r) for r in group["zero"]], best[1])
            f.append(f"{norm}-LN, zero init vs the best scheme ({best[0]}): {d.text()}.")
        line = plateau_line(st, {lab: rs for lab, rs in group.items()}, lambda k, rs: k)
        if line:
            f.append(f"{norm}-LN: " + line[0].lower() + line[1:])
        div = [r for rs in group.values() for r in rs if st.diverged(r)]
        if div:
            f.append(f"{norm}-LN: {plural(len(div), 'run')} diverged: " +
                     ", ".join(f"{init_label(r)} seed {st.seed_index(r)} at step {st.diverged_at(r)}"
                               for r in div) + ".")
        # The residual scale, where both variants exist.
        parts = []
        for plain, scaled in (("normal", "gpt2"), ("xavier", "xavier+scale"), ("he", "he+scale")):
            if plain in group and scaled in group:
                d = Diff([st.final_value(r) for r in group[scaled]], [st.final_value(r) for r in group[plain]])
                word = {-1: ", lower with the scale", 1: ", higher with the scale"}.get(d.sign, "")
                parts.append(f"{scaled} vs {plain}: {d.text()}{word}")
        if parts:
            f.append(f"{norm}-LN, the residual scale 1/√(2L) (final validation loss with vs without it): "
                     + "; ".join(parts) + ".")
        # Per-layer gradient profile at the end of training.
        ratios = []
        for lab, rs in group.items():
            xs = [x for x in (last_ratio(st, r) for r in rs) if x is not None]
            if xs:
                ratios.append((lab, statistics.median(xs)))
        if ratios:
            f.append(f"{norm}-LN, last/first layer gradient-norm ratio at each run's last diagnostic step (median over "
                     "seeds): " + ", ".join(f"{n} {fmt_ratio(x)}" for n, x in ratios) + ".")
    return f


def training_pattern_findings(st, g, norms):
    """Xiong et al.'s Post-LN pattern, looked for during training rather than at initialization."""
    f = []
    med = {}
    for norm in norms:
        rs = [x for k, runs_ in g.items() if k[0] == norm and k[1] != "zero"
              for x in (last_ratio(st, r) for r in runs_) if x is not None]
        if rs:
            med[norm] = statistics.median(rs)
    if "post" in med and "pre" in med:
        if med["post"] > GROWS and med["pre"] <= GROWS:
            f.append(f"During training the Post-LN runs develop Xiong et al.'s pattern: at the last diagnostic step "
                     f"their last layer's gradient norm is {fmt_ratio(med['post'])}× the first layer's (median over "
                     f"the non-zero schemes and seeds), against {fmt_ratio(med['pre'])}× under Pre-LN; the lower "
                     "Post-LN layers barely receive gradient.")
        else:
            f.append(f"During training the last/first layer gradient ratio is {fmt_ratio(med['post'])}× under Post-LN "
                     f"and {fmt_ratio(med['pre'])}× under Pre-LN (median over the non-zero schemes and seeds); Xiong "
                     "et al.'s Post-LN pattern does not appear here.")
    return f


def selection_findings(st):
    """Where Post-LN's arms trained, as study.json's selection recorded it
    (study/followup.h), or why there are none."""
    sel = (st.s.get("selections") or {}).get("init-post")
    if not isinstance(sel, dict):
        return []
    cands = "; ".join(
        f"lr {fmt_lr(c['lr'])}: {c.get('trained')}/{c.get('seeds')} seeds left the plateau"
        + (f", mean final loss {c['mean_val_loss']:.3f}" if isinstance(c.get("mean_val_loss"), (int, float)) else "")
        for c in sel.get("candidates", []) if isinstance(c, dict) and isinstance(c.get("lr"), (int, float)))
    if not isinstance(sel.get("lr"), (int, float)):
        return [f"Post-LN's arms: GPT-2's init under Post-LN left the plateau with every seed at no lr of its sweep "
                f"({cands}), so no scheme is compared under Post-LN: models that never trained say nothing about "
                "their init."]
    return [f"Post-LN's arms train at lr {fmt_lr(sel['lr'])} with {sel.get('warmup_fraction', 0):.0%} warmup, "
            f"chosen before they ran by the rule '{sel.get('rule', '?')}' ({cands})." + kept_note(sel)]


def kept_note(sel):
    """A selection kept when the study grew by --seeds (study/followup.h):
    the rule over every seed now picks another lr, and the text says so."""
    over = sel.get("over_all_seeds")
    if not isinstance(over, dict):
        return ""
    now = over.get("lr")
    now = f"lr {fmt_lr(now)}" if isinstance(now, (int, float)) else "no lr"
    return (f" The lr was chosen from {sel.get('kept_from_seeds', '?')} seeds, and the arms trained there; the study "
            f"then grew by --seeds, and over every seed the rule picks {now}. The arms stay where they ran (the "
            "candidates above count every seed): a study started at this many seeds would compare the schemes "
            "there.")


def draw(doc, st, findings):
    g = init_groups(st)
    runs = [r for rs in g.values() for r in rs]
    norms = [n for n in ("pre", "post") if any(k[0] == n for k in g)]
    cfg = runs[0]["config"]
    doc.p(f"{len(runs)} training runs ({seeds_note(st, g)}) of a {cfg['model']['n_layer']}-layer, n_embd "
          f"{cfg['model']['n_embd']} model, {cfg['steps']} steps at lr {fmt_lr(cfg['lr'])} with {cfg['warmup']} "
          "warmup steps; the schemes differ only in how the Linear weights are drawn (embeddings N(0, 0.02) in all). "
          "'+scale' multiplies the residual projections by 1/√(2L), as GPT-2 does; gpt2 = normal + scale. Curves: "
          "mean over seeds, band ±1 sd.")
    target = train_target(st, runs)
    draw_loss(doc, st, g, norms)
    draw_layer_norms(doc, st, g, norms)
    draw_symmetry(doc, g)
    tables(doc, st, g, target)
    f = selection_findings(st) + placement_findings(st, g, norms) + training_pattern_findings(st, g, norms)
    v = st.verdicts.get("gpt2-init") if st.verdicts else None
    if v:
        f += v.lines(PRESET)
        if disagrees(v):
            f.append(f"Radford et al. (2019) motivate the scaled init for deep models; at {cfg['model']['n_layer']} "
                     "layers this study does not show it beating every plain scheme. " +
                     artefact_line(st, artefact_checks(st)))
    add_findings(doc, findings, PRESET, f)
