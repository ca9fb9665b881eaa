"""norm: Pre-LN vs Post-LN across warmup length and learning rate, over
seeds (Xiong et al. 2020)."""
import math
import statistics

from ..common import add_findings, artefact_line, clip_ylim, plot_band, seeds_note, setting_table
from ..evidence import artefact_checks, left_plateau, norm_groups, train_target
from ..plot import COLORS, plt
from ..stats import fmt_lr, fmt_msd
from ..verdicts import Diff, disagrees, warmup_label

PRESET = "norm"
TITLE = "norm: Pre-LN vs Post-LN, warmup and learning rate"
NAME = {"pre": "Pre-LN", "post": "Post-LN"}


def label(key, runs=None):
    norm, wf, lr = key
    return f"{NAME.get(norm, norm)}, {warmup_label(wf)}, lr {fmt_lr(lr)}"


def draw_curves(doc, st, g, warmups, lrs):
    """The figures of training loss and gradient norm, one panel per (warmup, lr)."""
    for key_, fname, caption in (
            ("loss", "norm_loss.png", "Training loss per setting, mean over seeds with a ±1 sd band (circles: "
                                      "validation; ×: divergence)"),
            ("grad", "norm_grad_norm.png", "Global gradient norm over training (before clipping), mean over seeds "
                                           "with a ±1 sd band")):
        fig, axes = plt.subplots(len(warmups), len(lrs), figsize=(5.2 * len(lrs), 3.4 * len(warmups)),
                                 squeeze=False)
        for i, w in enumerate(warmups):
            for j, lr in enumerate(lrs):
                ax = axes[i][j]
                lows = []
                for norm in ("pre", "post"):
                    rs = g.get((norm, w, lr))
                    if rs:
                        lows += plot_band(ax, st, rs, COLORS[norm], f"{norm}-LN", what=key_)
                if key_ == "loss":
                    clip_ylim(ax, st, lows)
                    ax.set_ylabel("loss (nats)")
                else:
                    ax.set_yscale("log")
                    ax.set_ylabel("‖g‖")
                ax.set_title(f"lr {fmt_lr(lr)}, {warmup_label(w)}", fontsize=10)
                ax.set_xlabel("step")
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
        doc.figure(fig, fname, caption)


def divergence_findings(st, g, warmups, lrs):
    """Divergence and spikes per placement and warmup; which settings left the plateau, seed by seed."""
    f = []
    # Divergence and spikes per placement and warmup.
    for norm in ("post", "pre"):
        for w in warmups:
            group = [r for lr in lrs for r in g.get((norm, w, lr), [])]
            if not group:
                continue
            div = [r for r in group if st.diverged(r)]
            where = (" (at lr " + ", ".join(sorted({fmt_lr(r["variables"]["lr"]) for r in div})) + ")") if div else ""
            spikes = [st.spikes(r) for r in group if st.spikes(r) is not None]
            f.append(f"{NAME[norm]}, {warmup_label(w)}: diverged in {len(div)} of {len(group)} runs{where}"
                     + (f"; {sum(spikes)} loss spikes that recovered (the trainer's count)." if spikes else "."))
    # Which settings left the plateau, seed by seed.
    if st.unigram is not None:
        parts = []
        for k, rs in g.items():
            left = sum(bool(left_plateau(st, r)) for r in rs)
            parts.append(f"{label(k)} {left}/{len(rs)}")
        f.append(f"Seeds that left the unigram plateau (final validation loss below {st.unigram:.3f} − 0.1): "
                 + "; ".join(parts) + ".")
    return f


def comparison_findings(st, g, warmups, lrs):
    """Pre vs Post at equal settings, and warmup's effect on each placement."""
    f = []
    pre_better = post_better = same = 0
    for w in warmups:
        for lr in lrs:
            a, b = g.get(("pre", w, lr)), g.get(("post", w, lr))
            if a and b:
                d = Diff([st.final_value(r) for r in a], [st.final_value(r) for r in b])
                pre_better += d.sign < 0
                post_better += d.sign > 0
                same += d.sign == 0
    if pre_better + post_better + same:
        f.append(f"Final validation loss, Pre-LN vs Post-LN at equal warmup and lr (a diverged seed counts as ln V): "
                 f"Pre-LN lower in {pre_better}, Post-LN lower in {post_better}, within seed noise (or fewer than 3 "
                 f"seeds) in {same} of {pre_better + post_better + same} settings.")
    if len(warmups) >= 2:
        for norm in ("post", "pre"):
            parts = []
            for lr in lrs:
                a, b = g.get((norm, warmups[0], lr)), g.get((norm, warmups[-1], lr))
                if a and b:
                    d = Diff([st.final_value(r) for r in b], [st.final_value(r) for r in a])
                    word = {-1: "lower", 1: "higher", 0: "within seed noise"}[d.sign] if d.enough else "too few seeds"
                    parts.append(f"lr {fmt_lr(lr)}: {fmt_msd([st.final_value(r) for r in a])} → "
                                 f"{fmt_msd([st.final_value(r) for r in b])} ({word})")
            if parts:
                f.append(f"{NAME[norm]}, final validation loss without warmup → with {warmup_label(warmups[-1])}: "
                         + "; ".join(parts) + ".")
    return f


def add_verdicts(st, f):
    """Adds the no-warmup, faster and better-final verdicts' lines to the findings f."""
    disagree = False
    for key in ("no-warmup", "faster", "better-final"):
        v = st.verdicts.get(key) if st.verdicts else None
        if v:
            f += v.lines(PRESET)
            disagree = disagree or disagrees(v)
    if disagree:
        f.append("Where a verdict above is 'not observed', 'mixed' or 'contradicted', this disagrees with (or does "
                 "not show) Xiong et al. (2020)'s result. " + artefact_line(st, artefact_checks(st)))


def best_findings(st, g):
    """The best setting by validation loss, where every seed has one."""
    f = []
    done = [(k, [st.val_loss(r) for r in rs]) for k, rs in g.items() if all(st.val_loss(r) is not None for r in rs)]
    if done:
        k, vals = min(done, key=lambda kv: statistics.mean(kv[1]))
        f.append(f"Best setting: {label(k)}, validation loss {fmt_msd(vals)} (perplexity "
                 f"{math.exp(statistics.mean(vals)):.1f}).")
    return f


def draw(doc, st, findings):
    g = norm_groups(st)
    runs = [r for rs in g.values() for r in rs]
    lrs = sorted({k[2] for k in g})
    warmups = sorted({k[1] for k in g})
    cfg = runs[0]["config"]
    clip = cfg.get("grad_clip")
    window = cfg.get("max_loss_window")
    rule = (f"a loss above {cfg['max_loss']:.2f} for {window} consecutive steps" if window else
            f"a loss above {cfg['max_loss']:.2f}") if isinstance(cfg.get("max_loss"), (int, float)) else "a loss guard"
    levels = {k[2]: rs[0]["variables"].get("lr_level") for k, rs in g.items()}
    doc.p(f"{len(runs)} training runs ({seeds_note(st, g)}) of a {cfg['model']['n_layer']}-layer, n_embd "
          f"{cfg['model']['n_embd']} GPT-2 (GPT-2 init), {cfg['steps']} steps of {cfg['batch_size']}×{cfg['seq_len']} "
          f"tokens, cosine decay, gradient clipping {'off' if not clip else clip}; warmup "
          f"{', '.join(f'{w:.0%}' for w in warmups)} of the steps; lr "
          f"{', '.join(fmt_lr(lr) + (f' ({levels[lr]})' if levels.get(lr) else '') for lr in lrs)}. A run diverged "
          f"when its loss was not finite or on {rule} (the trainer's rule; a loss that went above the threshold and "
          "came back is a spike). Curves: mean over seeds, band ±1 sd; circles: mean validation loss; ×: a seed "
          "that diverged.")
    target = train_target(st, runs)
    draw_curves(doc, st, g, warmups, lrs)
    header, rows = setting_table(st, g, target, lambda k, rs: label(k))
    doc.table(header, rows)
    f = divergence_findings(st, g, warmups, lrs) + comparison_findings(st, g, warmups, lrs)
    add_verdicts(st, f)
    f += best_findings(st, g)
    add_findings(doc, findings, PRESET, f)
