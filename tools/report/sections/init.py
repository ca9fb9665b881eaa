"""init: initialization schemes, GPT-2's residual scale (Radford et al. 2019)
and the symmetry zero init never breaks."""
import math
import statistics

from ..common import clip_ylim, plateau_finding, plot_losses, preset_target, train_table
from ..plot import INIT_COLORS, plt
from ..stats import GROWS, fmt, fmt_lr, fmt_ratio, plural


PRESET = "init"
TITLE = "init: initialization schemes and the residual scale"

def init_label(r):
    v = r["variables"]
    return v["init"] + ("+scale" if v.get("residual_scale") and v["init"] != "gpt2" else "")


def layer_norm_series(m):
    """Per-layer total gradient norm (all module groups) at each diagnostic step."""
    steps, per_layer = [], []
    for row in m["diag"]:
        g = row["grad_norms"]
        L = len(g["attn.c_attn"])
        vals = [math.sqrt(sum(g[k][l] ** 2 for k in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj",
                                                     "ln_1", "ln_2"))) for l in range(L)]
        steps.append(row["step"])
        per_layer.append(vals)
    return steps, per_layer


def draw(doc, st, findings):
    runs = [r for r in st.preset_runs(PRESET) if r.get("status") in ("completed", "diverged")]
    norms = [n for n in ("pre", "post") if any(r["variables"]["norm"] == n for r in runs)]
    cfg = runs[0]["config"]
    doc.p(f"{len(runs)} training runs of a {cfg['model']['n_layer']}-layer, n_embd {cfg['model']['n_embd']} model, "
          f"{cfg['steps']} steps at lr {fmt_lr(cfg['lr'])} with {cfg['warmup']} warmup steps; the schemes differ only "
          "in how the Linear weights are drawn (embeddings N(0, 0.02) in all). '+scale' multiplies the "
          "residual projections by 1/√(2L), as GPT-2 does; gpt2 = normal + scale.")
    target = preset_target(st, runs)

    fig, axes = plt.subplots(1, len(norms), figsize=(6.5 * len(norms), 4), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for ax, norm in zip(axes[0], norms):
        lows = []
        group = [r for r in runs if r["variables"]["norm"] == norm]
        for i, r in enumerate(group):
            lows += plot_losses(ax, st, r, cmap(i % 10), init_label(r), "-" if "scale" not in init_label(r) else "--")
        clip_ylim(ax, st, lows)
        ax.set_title(f"{norm}-LN")
        ax.set_xlabel("step")
        ax.set_ylabel("loss (nats)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    doc.figure(fig, "init_loss.png", "Training loss per init scheme (smoothed; circles: validation)")

    cols = max(len([r for r in runs if r["variables"]["norm"] == n]) for n in norms)
    fig, axes = plt.subplots(len(norms), cols, figsize=(2.9 * cols, 2.6 * len(norms)), squeeze=False, sharey=True)
    for i, norm in enumerate(norms):
        group = [r for r in runs if r["variables"]["norm"] == norm]
        for j in range(cols):
            ax = axes[i][j]
            if j >= len(group):
                ax.axis("off")
                continue
            r = group[j]
            steps, per_layer = layer_norm_series(st.metrics[r["name"]])
            if per_layer:
                L = len(per_layer[0])
                for l in range(L):
                    ys = [max(v[l], 1e-12) for v in per_layer]
                    ax.plot(steps, ys, color=plt.get_cmap("viridis")(l / max(1, L - 1)), lw=1,
                            label=f"layer {l + 1}" if j == 0 else None)
            ax.set_yscale("log")
            ax.set_title(f"{norm}-LN, {init_label(r)}", fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        axes[i][0].set_ylabel("per-layer ‖g‖", fontsize=8)
        axes[i][0].legend(fontsize=6)
    fig.tight_layout()
    doc.figure(fig, "init_layer_grad_norms.png",
               "Per-layer gradient norm over training, all of a layer's parameters (dark: first layer, light: last layer)")

    sym_runs = [r for r in runs if r.get("symmetry")]
    if sym_runs:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
        labels = [f"{r['variables']['norm']}\n{init_label(r)}" for r in sym_runs]
        distinct = [r["symmetry"][0]["distinct_units"] / r["symmetry"][0]["units"] for r in sym_runs]
        spread = [r["symmetry"][0]["spread"] for r in sym_runs]
        colors = [INIT_COLORS.get(r["variables"]["init"], "k") for r in sym_runs]
        axes[0].bar(range(len(sym_runs)), distinct, color=colors)
        axes[0].set_ylabel("distinct hidden units / all")
        axes[1].bar(range(len(sym_runs)), spread, color=colors)
        axes[1].set_ylabel("spread across hidden units")
        for ax in axes:
            ax.set_xticks(range(len(sym_runs)))
            ax.set_xticklabels(labels, fontsize=7, rotation=60)
            ax.grid(alpha=0.3, axis="y")
            ax.set_title("layer 1 MLP, after training", fontsize=10)
        fig.tight_layout()
        doc.figure(fig, "init_symmetry.png", "Symmetry of the first layer's MLP hidden units after training")

    header, rows = train_table(st, runs, target)
    doc.table(header, rows)
    srows = []
    for r in sym_runs:
        for s in r["symmetry"]:
            srows.append([r["name"], s["layer"] + 1, f"{s['distinct_units']} / {s['units']}", fmt(s["spread"], 4),
                          fmt(s["weight_rms"], 4), fmt(s["relative_spread"], 3)])
    doc.p("Hidden-unit symmetry after training: a unit is its incoming mlp.c_fc weights and bias; 'spread' is "
          "the RMS over inputs of the standard deviation across units (0 = all units identical).")
    doc.table(["run", "layer", "distinct units", "spread", "weight RMS", "spread / RMS"], srows)

    f = []
    for norm in norms:
        group = [r for r in runs if r["variables"]["norm"] == norm]
        zero = [r for r in group if r["variables"]["init"] == "zero" and r.get("symmetry")]
        others = [r for r in group if r["variables"]["init"] != "zero" and r.get("symmetry")]
        if zero:
            z = zero[0]["symmetry"][0]
            steps = zero[0].get("checkpoint_step", "?")
            line = (f"{norm}-LN, zero init: after {steps} steps the first layer's MLP has {z['distinct_units']} "
                    f"distinct hidden unit{'s' if z['distinct_units'] != 1 else ''} out of {z['units']} "
                    f"(spread {z['spread']:.3g})")
            if others:
                lo = min(o["symmetry"][0]["distinct_units"] for o in others)
                line += (f"; every other scheme keeps at least {lo} of {others[0]['symmetry'][0]['units']} distinct "
                         f"(spread {min(o['symmetry'][0]['spread'] for o in others):.3g} or more)")
            line += "."
            if z["distinct_units"] == 1:
                line += " The symmetry is never broken: identical units get identical gradients."
            f.append(line)
            vz = st.val_loss(zero[0])
            done = [r for r in others if st.val_loss(r) is not None]
            if vz is not None and done:
                best = min(done, key=st.val_loss)
                f.append(f"{norm}-LN, zero init ends at validation loss {vz:.3f} vs {st.val_loss(best):.3f} for the "
                         f"best scheme ({init_label(best)}): {vz - st.val_loss(best):+.3f} nats.")
        done = sorted([r for r in group if st.val_loss(r) is not None], key=st.val_loss)
        if done:
            f.append(f"{norm}-LN ranking by final validation loss: " +
                     ", ".join(f"{init_label(r)} {st.val_loss(r):.3f}" for r in done) + ".")
        line = plateau_finding(st, group, f"{norm}-LN")
        if line:
            f.append(line)
        div = [r for r in group if st.diverged(r)]
        if div:
            f.append(f"{norm}-LN: {plural(len(div), 'run')} diverged: " +
                     ", ".join(f"{init_label(r)} at step {st.diverged_at(r)}" for r in div) + ".")
        # The residual scale, where both variants exist.
        pairs = []
        for init in ("normal", "xavier", "he"):
            a = [r for r in group if r["variables"]["init"] == init and not r["variables"].get("residual_scale")]
            b = [r for r in group if (r["variables"]["init"] == init and r["variables"].get("residual_scale")) or
                 (init == "normal" and r["variables"]["init"] == "gpt2")]
            if a and b and st.val_loss(a[0]) is not None and st.val_loss(b[0]) is not None:
                pairs.append((init, st.val_loss(a[0]), st.val_loss(b[0])))
        if pairs:
            helped = sum(vb < va for _, va, vb in pairs)
            f.append(f"{norm}-LN: the residual scale 1/√(2L) lowered the final validation loss for {helped} of "
                     f"{len(pairs)} schemes (" + "; ".join(f"{i}: {va:.3f} → {vb:.3f}" for i, va, vb in pairs) + ").")
            gp = [p for p in pairs if p[0] == "normal"]
            if gp:
                _, va, vb = gp[0]
                if vb < va - 0.01:
                    f.append(f"{norm}-LN: GPT-2's init beats plain normal(0.02) by {va - vb:.3f} nats, consistent with "
                             "Radford et al. (2019)'s choice.")
                elif abs(vb - va) <= 0.01:
                    f.append(f"{norm}-LN: GPT-2's scaled init and plain normal(0.02) end within 0.01 nats "
                             f"({vb:.3f} vs {va:.3f}); at {cfg['model']['n_layer']} layers and this step count the "
                             "benefit Radford et al. (2019) motivate for deep models does not show.")
                else:
                    f.append(f"{norm}-LN: GPT-2's scaled init does not beat plain normal(0.02) here "
                             f"({vb:.3f} vs {va:.3f}); at {cfg['model']['n_layer']} layers and this step count the "
                             "benefit Radford et al. (2019) motivate for deep models does not show.")
        # Per-layer gradient profile at the end of training.
        ratios = []
        for r in group:
            steps, per_layer = layer_norm_series(st.metrics[r["name"]])
            if per_layer and per_layer[-1][0] > 0:
                ratios.append((init_label(r), per_layer[-1][-1] / per_layer[-1][0], steps[-1]))
        if ratios:
            f.append(f"{norm}-LN, last/first layer gradient-norm ratio at each run's last diagnostic step: " +
                     ", ".join(f"{n} {fmt_ratio(x)}" for n, x, _ in ratios) + ".")
    # Xiong et al.'s Post-LN pattern, looked for during training rather
    # than at initialization.
    med = {}
    for norm in norms:
        rs = []
        for r in runs:
            if r["variables"]["norm"] != norm or r["variables"]["init"] == "zero":
                continue
            _, per_layer = layer_norm_series(st.metrics[r["name"]])
            if per_layer and per_layer[-1][0] > 0:
                rs.append(per_layer[-1][-1] / per_layer[-1][0])
        if rs:
            med[norm] = statistics.median(rs)
    if "post" in med and "pre" in med:
        if med["post"] > GROWS and med["pre"] <= GROWS:
            f.append(f"During training the Post-LN runs develop Xiong et al.'s pattern: at the last diagnostic step "
                     f"their last layer's gradient norm is {fmt_ratio(med['post'])}× the first layer's (median over the "
                     f"non-zero schemes), against {fmt_ratio(med['pre'])}× under Pre-LN; the lower Post-LN layers barely "
                     "receive gradient.")
        else:
            f.append(f"During training the last/first layer gradient ratio is {fmt_ratio(med['post'])}× under Post-LN "
                     f"and {fmt_ratio(med['pre'])}× under Pre-LN (median over the non-zero schemes); Xiong et al.'s "
                     "Post-LN pattern does not appear here.")
    doc.h(3, "Findings")
    doc.bullets(f)
    findings[PRESET] = f
