"""What several sections share: a setting in words, the table of settings
(every seed of a setting in one row: mean ± sd), loss curves with a seed
band, and the sentences about the unigram plateau and design artefacts."""
import math
import statistics

from .evidence import PLATEAU_MARGIN, left_plateau, tokens_to_target, warmup_fraction
from .stats import count_spikes, fmt, fmt_lr, fmt_msd, fmt_tokens


# The translation preset's arms, as a setting names them.
ARM_WORDS = {"scratch": "from scratch", "finetune": "fine-tuned", "pretrain": "pre-training"}


def describe(r):
    """A run's setting in words (its seed left out)."""
    v = r.get("variables", {})
    parts = []
    if v.get("arm") in ARM_WORDS:
        parts.append(ARM_WORDS[v["arm"]])
    if "embedding_scale" in v:
        parts.append(f"embedding {v['embedding_scale']}")
    for k in ("depth", "norm", "init"):
        if k in v:
            parts.append(f"L{v[k]}" if k == "depth" else (f"{v[k]}-LN" if k == "norm" else f"init {v[k]}"))
    if "residual_scale" in v and v.get("init") not in ("gpt2", "zero"):
        parts.append("scale" if v["residual_scale"] else "no scale")
    if "warmup_fraction" in v:
        parts.append(f"warmup {v['warmup_fraction']:.0%}" if v["warmup_fraction"] else "no warmup")
    elif "warmup" in v:
        parts.append(f"warmup {v['warmup']}" if v["warmup"] else "no warmup")
    if "clip" in v:
        parts.append(f"clip {v['clip']:g}" if v["clip"] else "no clipping")
    if "lr" in v:
        parts.append("lr " + fmt_lr(v["lr"]))
    return ", ".join(parts)


def max_loss(st, r):
    m = st.metrics.get(r["name"], {})
    xs = [x for x in m.get("loss", []) if isinstance(x, (int, float)) and math.isfinite(x)]
    d = m.get("diverged") or {}
    if isinstance(d.get("loss"), (int, float)) and math.isfinite(d["loss"]):
        xs.append(d["loss"])
    return max(xs) if xs else None


def jump_spikes(st, r):
    loss = st.metrics.get(r["name"], {}).get("loss", [])
    return count_spikes(loss) if loss else None


def per_seed(xs):
    return ", ".join("–" if x is None else str(x) for x in xs)


def setting_table(st, groups, target, label=None):
    """One row per setting (a group of seeds): diverged seeds (the trainer's
    rule), spikes (the trainer's count per seed, and the 10%-jump count),
    final validation loss mean ± sd over the seeds that completed, seeds
    that left the unigram plateau, tokens to the target loss."""
    label = label or (lambda key, runs: describe(runs[0]))
    rows = []
    for key, runs in groups.items():
        n = len(runs)
        div = [r for r in runs if st.diverged(r)]
        vals = [st.val_loss(r) for r in runs if st.val_loss(r) is not None]
        val = fmt_msd(vals)
        if vals and len(vals) < n:
            val += f" [{len(vals)} seeds]"
        left = [left_plateau(st, r) for r in runs]
        reach = [tokens_to_target(st, r, target) for r in runs] if target is not None else []
        got = [t for t, ok in reach if ok]
        spikes = [st.spikes(r) for r in runs]
        jumps = [jump_spikes(st, r) for r in runs]
        highs = [x for x in (max_loss(st, r) for r in runs) if x is not None]
        rows.append([
            label(key, runs), n,
            f"{len(div)}/{n}" + (f" (step {per_seed([st.diverged_at(r) for r in div])})" if div else ""),
            per_seed(spikes) if any(x is not None for x in spikes) else "–",
            per_seed(jumps) if any(x is not None for x in jumps) else "–",
            val,
            f"{sum(bool(x) for x in left)}/{n}" if any(x is not None for x in left) else "–",
            (fmt_tokens(statistics.mean(got)) + (f" ± {fmt_tokens(statistics.stdev(got))}" if len(got) > 1 else "")
             + f" ({len(got)}/{n})") if got else (f"– (0/{n})" if reach else "–"),
            fmt(max(highs)) if highs else "–"])
    header = ["setting", "seeds", "diverged", "spikes (trainer)", "spikes (10% jump)", "final val loss (mean ± sd)",
              f"left plateau (< unigram − {PLATEAU_MARGIN:g})",
              f"tokens to loss ≤ {fmt(target, 2)} (seeds)" if target is not None else "tokens to target",
              "max train loss"]
    return header, rows


def clip_ylim(ax, st, lo_values):
    lo = min(lo_values) if lo_values else 0
    hi = (st.uniform + 1.5) if st.uniform else None
    if hi is not None and math.isfinite(lo):
        ax.set_ylim(max(0, lo - 0.2), hi)
    if st.unigram is not None:
        ax.axhline(st.unigram, color="k", ls=":", lw=0.9, label="unigram baseline")


def band(series):
    """Per index: (mean, sd) over the series that reach it (sd 0 for one)."""
    n = max((len(s) for s in series), default=0)
    means, sds = [], []
    for i in range(n):
        xs = [s[i] for s in series if i < len(s) and math.isfinite(s[i])]
        means.append(statistics.mean(xs) if xs else float("nan"))
        sds.append(statistics.stdev(xs) if len(xs) > 1 else 0.0)
    return means, sds


def plot_band(ax, st, runs, color, label, style="-", what="loss"):
    """The seeds of one setting: the mean smoothed train loss (or gradient
    norm) with a ±1 sd band, mean validation points, and × where a seed
    diverged. Returns the plotted values (for the y range)."""
    curves, steps = [], []
    for r in runs:
        if what == "loss":
            s, sm = st.smoothed(r)
        else:
            m = st.metrics.get(r["name"], {})
            s, sm = m.get("steps", []), [x if isinstance(x, (int, float)) else float("nan")
                                         for x in m.get("grad_norm", [])]
        if len(s) > len(steps):
            steps = s
        if sm:
            curves.append(sm)
    lows = []
    if curves:
        mean, sd = band(curves)
        n = len(curves)
        ax.plot(steps[:len(mean)], mean, style, color=color, lw=1.3, label=f"{label} ({n} seed{'s' if n > 1 else ''})")
        if n > 1:
            lo = [m - s for m, s in zip(mean, sd)]
            hi = [m + s for m, s in zip(mean, sd)]
            if what != "loss":
                lo = [max(x, 1e-12) for x in lo]
            ax.fill_between(steps[:len(mean)], lo, hi, color=color, alpha=0.2, lw=0)
        lows += [x for x in mean if math.isfinite(x)]
    if what == "loss":
        vals = {}
        for r in runs:
            m = st.metrics.get(r["name"], {})
            for s, v in zip(m.get("val_steps", []), m.get("val", [])):
                if isinstance(v, (int, float)) and math.isfinite(v):
                    vals.setdefault(s, []).append(v)
        if vals:
            xs = sorted(vals)
            ax.plot(xs, [statistics.mean(vals[x]) for x in xs], "o", color=color, ms=3.5, mfc="white")
            lows += [statistics.mean(vals[x]) for x in xs]
        for r in runs:
            if st.diverged(r) and st.diverged_at(r) is not None:
                y = max_loss(st, r) or (st.uniform or 0)
                if st.uniform:
                    y = min(y, st.uniform + 1.4)
                ax.plot([st.diverged_at(r)], [y], "x", color=color, ms=9, mew=2)
    return lows


def plateau_line(st, groups, label=None):
    """Per setting: how many seeds left the unigram plateau; None without a
    baseline."""
    if st.unigram is None or not groups:
        return None
    label = label or (lambda key, runs: describe(runs[0]))
    parts = []
    for key, runs in groups.items():
        left = sum(bool(left_plateau(st, r)) for r in runs)
        parts.append(f"{label(key, runs)} {left}/{len(runs)}")
    return (f"Seeds that left the unigram plateau (final validation loss below {st.unigram:.3f} − "
            f"{PLATEAU_MARGIN:g}, the validation loss of the training set's token frequencies): "
            + "; ".join(parts) + ".")


def artefact_line(st, checks):
    return "To rule out a design artefact the study varied: " + "; ".join(checks) + "."


def add_findings(doc, findings, preset, lines):
    """A section's Findings list, also kept for the report's summary."""
    doc.h(3, "Findings")
    doc.bullets(lines)
    findings[preset] = lines


def seeds_note(st, groups):
    """'(n seeds per setting)' or the range."""
    ns = sorted({len(v) for v in groups.values()})
    if not ns:
        return "no runs"
    return (f"{ns[0]} seed{'s' if ns[0] != 1 else ''} per setting" if len(ns) == 1 else
            f"{ns[0]}–{ns[-1]} seeds per setting")


__all__ = ["describe", "max_loss", "setting_table", "clip_ylim", "plot_band", "plateau_line", "artefact_line",
           "add_findings", "seeds_note", "warmup_fraction", "jump_spikes"]


def depth_loss_axes(ax, st, depths, title, fontsize=10):
    """The axes of a final-loss-against-depth figure: the unigram baseline,
    depth on a log2 axis, labels, grid and legend."""
    if st.unigram is not None:
        ax.axhline(st.unigram, color="k", ls=":", lw=0.9, label="unigram baseline")
    ax.set_xscale("log", base=2)
    ax.set_xticks(depths)
    ax.set_xticklabels([str(d) for d in depths])
    ax.set_xlabel("layers")
    ax.set_ylabel("final validation loss (nats)")
    ax.set_title(title, fontsize=fontsize)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
