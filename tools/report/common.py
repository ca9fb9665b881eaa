"""What several sections share: a run's setting in words, the step a run
reaches a target loss, the table of training runs, and loss plots."""
import math
import statistics

from .stats import count_spikes, fmt, fmt_lr


def describe(r):
    v = r.get("variables", {})
    parts = []
    for k in ("depth", "norm", "init"):
        if k in v:
            parts.append(f"L{v[k]}" if k == "depth" else (f"{v[k]}-LN" if k == "norm" else f"init {v[k]}"))
    if "residual_scale" in v and v.get("init") not in ("gpt2", "zero"):
        parts.append("scale" if v["residual_scale"] else "no scale")
    if "warmup" in v:
        parts.append(f"warmup {v['warmup']}" if v["warmup"] else "no warmup")
    if "lr" in v:
        parts.append("lr " + fmt_lr(v["lr"]))
    return ", ".join(parts)


def steps_to_target(st, r, target):
    steps, sm = st.smoothed(r)
    for s, x in zip(steps, sm):
        if x <= target:
            return s
    return None


def preset_target(st, runs):
    """The train loss each run is timed to. With the data at hand: 0.1 nats
    below the unigram baseline on the train split, i.e. the step where the
    model starts to use context. Otherwise the median of the final smoothed
    train losses of the preset's runs that did not diverge, rounded up to
    0.05."""
    if st.unigram_train is not None:
        return math.floor((st.unigram_train - 0.1) * 100) / 100
    finals = [st.smoothed(r)[1][-1] for r in runs if not st.diverged(r) and st.smoothed(r)[1]]
    if not finals:
        return None
    return math.ceil(statistics.median(finals) * 20) / 20


def max_loss(st, r):
    m = st.metrics.get(r["name"], {})
    xs = [x for x in m.get("loss", []) if math.isfinite(x)]
    d = m.get("diverged") or {}
    if isinstance(d.get("loss"), (int, float)) and math.isfinite(d["loss"]):
        xs.append(d["loss"])
    return max(xs) if xs else None


def train_table(st, runs, target):
    rows = []
    for r in runs:
        m = st.metrics.get(r["name"], {})
        o = r.get("outcome", {})
        loss = m.get("loss", [])
        status = r.get("status", "pending")
        if status == "diverged":
            status = f"diverged @ {st.diverged_at(r)}"
        rows.append([r["name"], describe(r), status, fmt(st.val_loss(r)),
                     fmt(o.get("val_ppl") if r.get("status") == "completed" else None, 1),
                     fmt(steps_to_target(st, r, target)) if target is not None else "–",
                     count_spikes(loss) if loss else "–",
                     fmt(max_loss(st, r))])
    header = ["run", "setting", "status", "final val loss", "val ppl",
              f"steps to loss ≤ {fmt(target, 2)}" if target is not None else "steps to target",
              "loss spikes", "max train loss"]
    return header, rows


def clip_ylim(ax, st, lo_values):
    lo = min(lo_values) if lo_values else 0
    hi = (st.uniform + 1.5) if st.uniform else None
    if hi is not None and math.isfinite(lo):
        ax.set_ylim(max(0, lo - 0.2), hi)
    if st.unigram is not None:
        ax.axhline(st.unigram, color="k", ls=":", lw=0.9, label="unigram baseline")


def plateau_finding(st, runs, label):
    """How many runs ended at the unigram baseline (learned token frequencies
    and nothing about context)."""
    if st.unigram is None:
        return None
    done = [r for r in runs if st.val_loss(r) is not None]
    if not done:
        return None
    stuck = [r for r in done if st.val_loss(r) > st.unigram - 0.1]
    return (f"{label}: {len(stuck)} of {len(done)} completed runs ended within 0.1 nats of the unigram baseline "
            f"({st.unigram:.3f}, the validation loss of the training set's token frequencies)" +
            (": " + ", ".join(f"{r['name']} {st.val_loss(r):.3f}" for r in stuck) + "." if stuck else "."))


def plot_losses(ax, st, r, color, label, style="-"):
    steps, sm = st.smoothed(r)
    m = st.metrics.get(r["name"], {})
    lows = []
    if steps:
        ax.plot(steps, sm, style, color=color, label=label, lw=1.3)
        lows += [x for x in sm if math.isfinite(x)]
    if m.get("val"):
        ax.plot(m["val_steps"], m["val"], "o", color=color, ms=3.5, mfc="white")
        lows += m["val"]
    if st.diverged(r) and steps:
        # At the loss that tripped the guard, kept inside the plotted range.
        y = max_loss(st, r) or sm[-1]
        if st.uniform:
            y = min(y, st.uniform + 1.4)
        ax.plot([st.diverged_at(r)], [y], "x", color=color, ms=10, mew=2)
    return lows
