#!/usr/bin/env python3
"""Draws a gpt2lab study (OUT/study.json + each run's metrics.jsonl) into
OUT/report.md and OUT/report.html (figures inline, base64), with figures in
OUT/figures/.

Every sentence under "Findings" is computed from the numbers in the study;
none is pre-written. Where a measurement disagrees with the papers (Xiong et
al. 2020 for the LayerNorm placement, Radford et al. 2019 for GPT-2's scaled
residual init) the text says so.

Usage: report.py OUT
Exit status: 0 written, 2 bad input, 3 matplotlib missing.
"""
import base64
import html
import json
import math
import os
import statistics
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
except ImportError:  # the study command turns exit 3 into an install hint
    sys.stderr.write("report.py: matplotlib is missing (Debian: apt-get install python3-matplotlib)\n")
    sys.exit(3)

PRESETS = ["grad-at-init", "norm", "init", "depth"]
SECTION_TITLES = {
    "grad-at-init": "grad-at-init: gradient norms at initialization",
    "norm": "norm: Pre-LN vs Post-LN, warmup and learning rate",
    "init": "init: initialization schemes and the residual scale",
    "depth": "depth: Pre-LN vs Post-LN as depth grows",
}
# Xiong et al.'s claim is about the shape of the per-layer profile; a ratio
# of the last layer's gradient norm to the first layer's above GROWS counts
# as "grows toward the output", below SHRINKS as "shrinks".
GROWS, SHRINKS = 1.25, 0.8
SPIKE_WINDOW, SPIKE_JUMP = 20, 0.10  # a loss 10% above the median of the previous 20 steps
DPI = 72

COLORS = {"pre": "tab:blue", "post": "tab:red"}
INIT_COLORS = {"gpt2": "tab:blue", "normal": "tab:orange", "xavier": "tab:green", "he": "tab:purple",
               "zero": "tab:gray"}


# ---------------------------------------------------------------- loading

def load_metrics(out, rec):
    """Rows of a run's metrics.jsonl, split by kind."""
    m = {"steps": [], "loss": [], "grad_norm": [], "val_steps": [], "val": [], "diag": [], "diverged": None}
    path = os.path.join(out, rec.get("metrics", ""))
    if not rec.get("metrics") or not os.path.exists(path):
        return m
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed run
            if r.get("diverged"):
                m["diverged"] = r
            elif "grad_norms" in r:
                m["diag"].append(r)
            elif "val_loss" in r:
                m["val_steps"].append(r["step"])
                m["val"].append(r["val_loss"])
            elif "loss" in r:
                m["steps"].append(r["step"])
                m["loss"].append(r["loss"])
                m["grad_norm"].append(r.get("grad_norm", float("nan")))
    return m


def read_shards(directory, split):
    """Token ids of a split's llm.c shards (256 int32 header, then uint16)."""
    import glob
    import numpy as np
    files = sorted(glob.glob(os.path.join(directory, f"{split}.bin")) +
                   glob.glob(os.path.join(directory, f"{split}_*.bin")))
    parts = []
    for path in files:
        header = np.fromfile(path, dtype="<i4", count=256)
        parts.append(np.fromfile(path, dtype="<u2", offset=1024)[: int(header[2])])
    return np.concatenate(parts) if parts else None


def unigram_baseline(directory, vocab):
    """Cross-entropy (nats) of the train split's token frequencies (add-one
    smoothed) on the (val, train) splits: the loss of a model that learned
    which tokens are common and nothing about context. (None, None) when the
    shards are not there."""
    try:
        import numpy as np
        train, val = read_shards(directory, "train"), read_shards(directory, "val")
    except (ImportError, OSError, ValueError):
        return None, None
    if train is None or val is None or not vocab or len(val) == 0:
        return None, None
    counts = np.bincount(train, minlength=vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[val].mean()), float(-logp[train].mean())


def smooth(xs, k):
    """Trailing moving average over k values (fewer at the start)."""
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= k:
            acc -= xs[i - k]
        out.append(acc / min(i + 1, k))
    return out


def count_spikes(loss):
    """Loss spikes: steps whose loss exceeds the median of the previous
    SPIKE_WINDOW steps by more than SPIKE_JUMP (relative); consecutive
    spiking steps are one spike."""
    spikes, inside = 0, False
    for i in range(SPIKE_WINDOW, len(loss)):
        med = statistics.median(loss[i - SPIKE_WINDOW:i])
        hit = math.isfinite(loss[i]) and loss[i] > med * (1 + SPIKE_JUMP)
        if hit and not inside:
            spikes += 1
        inside = hit
    return spikes


def fmt(x, nd=3):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if isinstance(x, float):
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
            return f"{x:.{nd - 1}e}"
        return f"{x:.{nd}f}"
    return str(x)


def fmt_ratio(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def fmt_num(x):
    return f"{x:.3g}" if isinstance(x, (int, float)) else "?"


def fmt_lr(lr):
    e = math.floor(math.log10(lr) + 1e-9)
    m = lr / 10 ** e
    return f"{m:g}e{e}"


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def spearman(xs, ys):
    """Spearman rank correlation (average ranks on ties); None if undefined."""
    n = len(xs)
    if n < 3:
        return None

    def ranks(v):
        order = sorted(range(n), key=lambda i: v[i])
        r = [0.0] * n
        i = 0
        while i < n:
            j = i
            while j + 1 < n and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    a, b = ranks(xs), ranks(ys)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = math.sqrt(sum((x - ma) ** 2 for x in a))
    vb = math.sqrt(sum((y - mb) ** 2 for y in b))
    if va == 0 or vb == 0:
        return None
    return cov / (va * vb)


# ---------------------------------------------------------------- document

class Doc:
    """Blocks rendered both as Markdown and as HTML."""

    def __init__(self, out):
        self.out = out
        self.blocks = []
        self.figures = []
        os.makedirs(os.path.join(out, "figures"), exist_ok=True)

    def h(self, level, text):
        self.blocks.append(("h", level, text))

    def p(self, text):
        self.blocks.append(("p", text))

    def bullets(self, items):
        if items:
            self.blocks.append(("ul", list(items)))

    def table(self, header, rows):
        if rows:
            self.blocks.append(("table", header, rows))

    def pre(self, text):
        self.blocks.append(("pre", text))

    def figure(self, fig, name, caption):
        path = os.path.join(self.out, "figures", name)
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(name)
        self.blocks.append(("img", name, caption))

    def markdown(self):
        lines = []
        for b in self.blocks:
            if b[0] == "h":
                lines += ["#" * b[1] + " " + b[2], ""]
            elif b[0] == "p":
                lines += [b[1], ""]
            elif b[0] == "ul":
                lines += ["- " + x for x in b[1]] + [""]
            elif b[0] == "table":
                cell = lambda c: str(c).replace("|", "\\|").replace("\n", " ")
                lines.append("| " + " | ".join(cell(c) for c in b[1]) + " |")
                lines.append("|" + "|".join("---" for _ in b[1]) + "|")
                lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in b[2]]
                lines.append("")
            elif b[0] == "pre":
                lines += ["```", b[1], "```", ""]
            elif b[0] == "img":
                lines += [f"![{b[2]}](figures/{b[1]})", "", f"*{b[2]}*", ""]
        return "\n".join(lines)

    def html(self, title):
        e = html.escape
        parts = [
            "<!DOCTYPE html>",
            "<html><head><meta charset='utf-8'><title>" + e(title) + "</title>",
            "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.45}"
            "table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #ccc;padding:3px 6px}"
            "th{background:#f2f2f2}img{max-width:100%}figcaption{font-style:italic;color:#444}"
            "pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap}</style></head><body>",
        ]
        for b in self.blocks:
            if b[0] == "h":
                parts.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                parts.append("<p>" + e(b[1]) + "</p>")
            elif b[0] == "ul":
                parts.append("<ul>" + "".join("<li>" + e(x) + "</li>" for x in b[1]) + "</ul>")
            elif b[0] == "table":
                parts.append("<table><tr>" + "".join("<th>" + e(str(c)) + "</th>" for c in b[1]) + "</tr>")
                for r in b[2]:
                    parts.append("<tr>" + "".join("<td>" + e(str(c)) + "</td>" for c in r) + "</tr>")
                parts.append("</table>")
            elif b[0] == "pre":
                parts.append("<pre>" + e(b[1]) + "</pre>")
            elif b[0] == "img":
                with open(os.path.join(self.out, "figures", b[1]), "rb") as f:
                    data = base64.b64encode(f.read()).decode("ascii")
                parts.append(f"<figure><img alt='{e(b[2])}' src='data:image/png;base64,{data}'>"
                             f"<figcaption>{e(b[2])}</figcaption></figure>")
        parts.append("</body></html>")
        return "\n".join(parts)


# ---------------------------------------------------------------- study model

class Study:
    def __init__(self, out):
        self.out = out
        with open(os.path.join(out, "study.json")) as f:
            self.s = json.load(f)
        self.runs = self.s.get("runs", [])
        self.budget = self.s.get("budget", {})
        self.vocab = self.s.get("data", {}).get("vocab_size", 0)
        self.uniform = math.log(self.vocab) if self.vocab else None
        self.unigram, self.unigram_train = unigram_baseline(self.s.get("data", {}).get("dir", ""), self.vocab)
        self.metrics = {}
        for r in self.runs:
            if r.get("kind") == "train":
                self.metrics[r["name"]] = load_metrics(out, r)

    def preset_runs(self, preset):
        return [r for r in self.runs if r.get("preset") == preset]

    def has(self, preset):
        return any(r.get("status") in ("completed", "diverged") for r in self.preset_runs(preset))

    def val_loss(self, r):
        o = r.get("outcome", {})
        return o.get("val_loss") if r.get("status") == "completed" else None

    def diverged(self, r):
        return r.get("status") == "diverged"

    def diverged_at(self, r):
        return r.get("outcome", {}).get("diverged_at")

    def smoothed(self, r):
        m = self.metrics.get(r["name"])
        if not m or not m["loss"]:
            return [], []
        k = max(1, len(m["loss"]) // 40)
        return m["steps"], smooth(m["loss"], k)


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


# ---------------------------------------------------------------- grad-at-init

def section_grad_at_init(doc, st, findings):
    runs = [r for r in st.preset_runs("grad-at-init") if r.get("status") == "completed" and "result" in r]
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
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
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
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
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
    findings["grad-at-init"] = f


# ---------------------------------------------------------------- norm

def section_norm(doc, st, findings):
    runs = [r for r in st.preset_runs("norm") if r.get("status") in ("completed", "diverged")]
    lrs = sorted({r["variables"]["lr"] for r in runs})
    warmups = sorted({r["variables"]["warmup"] for r in runs})
    cfg = runs[0]["config"]
    doc.p(f"{len(runs)} training runs of a {cfg['model']['n_layer']}-layer, n_embd {cfg['model']['n_embd']} GPT-2 "
          f"(GPT-2 init), {cfg['steps']} steps of {cfg['batch_size']}×{cfg['seq_len']} tokens, cosine decay, "
          f"gradient clipping {'off' if not cfg['grad_clip'] else cfg['grad_clip']}; divergence = a non-finite "
          f"loss or gradient, or a loss above {cfg['max_loss']:.2f}.")
    target = preset_target(st, runs)
    cell = {(r["variables"]["norm"], r["variables"]["warmup"], r["variables"]["lr"]): r for r in runs}

    for key, fname, caption in (
            ("loss", "norm_loss.png", "Training loss (smoothed; circles: validation; ×: divergence)"),
            ("grad", "norm_grad_norm.png", "Global gradient norm over training (before clipping)")):
        fig, axes = plt.subplots(len(warmups), len(lrs), figsize=(5.2 * len(lrs), 3.4 * len(warmups)),
                                 squeeze=False)
        for i, w in enumerate(warmups):
            for j, lr in enumerate(lrs):
                ax = axes[i][j]
                lows = []
                for norm in ("pre", "post"):
                    r = cell.get((norm, w, lr))
                    if not r:
                        continue
                    if key == "loss":
                        lows += plot_losses(ax, st, r, COLORS[norm], f"{norm}-LN")
                    else:
                        m = st.metrics[r["name"]]
                        if m["steps"]:
                            ax.plot(m["steps"], m["grad_norm"], color=COLORS[norm], lw=0.8, label=f"{norm}-LN")
                if key == "loss":
                    clip_ylim(ax, st, lows)
                    ax.set_ylabel("loss (nats)")
                else:
                    ax.set_yscale("log")
                    ax.set_ylabel("‖g‖")
                ax.set_title(f"lr {fmt_lr(lr)}, " + (f"warmup {w} steps" if w else "no warmup"), fontsize=10)
                ax.set_xlabel("step")
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
        fig.tight_layout()
        doc.figure(fig, fname, caption)

    header, rows = train_table(st, runs, target)
    doc.table(header, rows)

    f = []
    for norm in ("post", "pre"):
        for w in warmups:
            group = [cell[(norm, w, lr)] for lr in lrs if (norm, w, lr) in cell]
            div = [r for r in group if st.diverged(r)]
            where = f" (at lr {', '.join(fmt_lr(r['variables']['lr']) for r in div)})" if div else ""
            f.append(f"{'Post' if norm == 'post' else 'Pre'}-LN {'with' if w else 'without'} warmup diverged in "
                     f"{len(div)} of {len(group)} runs{where}.")
    # Which placement tolerated which learning rate.
    for lr in lrs:
        dp = sum(st.diverged(cell[(n, w, lr)]) for n in ("pre",) for w in warmups if ("pre", w, lr) in cell)
        dq = sum(st.diverged(cell[(n, w, lr)]) for n in ("post",) for w in warmups if ("post", w, lr) in cell)
        if dp > dq:
            f.append(f"At lr {fmt_lr(lr)} Pre-LN diverged in {dp} and Post-LN in {dq} of {len(warmups)} runs each: "
                     "the opposite of Xiong et al. (2020), who find Pre-LN the one that tolerates large learning "
                     "rates without warmup.")
        elif dq > dp:
            f.append(f"At lr {fmt_lr(lr)} Post-LN diverged in {dq} and Pre-LN in {dp} of {len(warmups)} runs each, "
                     "as Xiong et al. (2020) lead one to expect.")
    # Pre vs Post at equal settings.
    better, compared, diffs = 0, 0, []
    for w in warmups:
        for lr in lrs:
            a, b = cell.get(("pre", w, lr)), cell.get(("post", w, lr))
            if not a or not b:
                continue
            va, vb = st.val_loss(a), st.val_loss(b)
            compared += 1
            if va is not None and (vb is None or va < vb):
                better += 1
            if va is not None and vb is not None:
                diffs.append(vb - va)
    if compared:
        f.append(f"Pre-LN ended with the lower validation loss (or Post-LN diverged) in {better} of {compared} "
                 f"matched settings" + (f"; mean Post − Pre difference {statistics.mean(diffs):+.3f} nats where "
                                        f"both finished." if diffs else "."))
    # Warmup's effect on Post-LN.
    if len(warmups) == 2:
        helped, n = 0, 0
        parts = []
        for lr in lrs:
            a, b = cell.get(("post", warmups[0], lr)), cell.get(("post", warmups[1], lr))
            if not a or not b:
                continue
            n += 1
            va, vb = st.val_loss(a), st.val_loss(b)
            if vb is not None and (va is None or vb < va):
                helped += 1
            parts.append(f"lr {fmt_lr(lr)}: {fmt(va)} → {fmt(vb)}")
        if n:
            f.append(f"Warmup improved Post-LN's final validation loss in {helped} of {n} learning rates "
                     f"({'; '.join(parts)}).")
            if helped == n:
                f.append("This agrees with Xiong et al. (2020): Post-LN depends on the warmup stage.")
            else:
                f.append("Xiong et al. (2020) find Post-LN needs warmup; at this model size and step count the "
                         "measurement does not show that for every learning rate.")
    for norm in ("post", "pre"):
        line = plateau_finding(st, [r for r in runs if r["variables"]["norm"] == norm],
                               "Post-LN" if norm == "post" else "Pre-LN")
        if line:
            f.append(line)
    spikes = {norm: sum(count_spikes(st.metrics[r["name"]]["loss"]) for r in runs if r["variables"]["norm"] == norm)
              for norm in ("pre", "post")}
    f.append(f"Loss spikes (a step {int(SPIKE_JUMP * 100)}% above the median of the previous {SPIKE_WINDOW}): "
             f"Post-LN {spikes['post']}, Pre-LN {spikes['pre']} in total.")
    if target is not None:
        for norm in ("pre", "post"):
            reached = [steps_to_target(st, r, target) for r in runs if r["variables"]["norm"] == norm]
            ok = [s for s in reached if s is not None]
            f.append(f"{'Pre' if norm == 'pre' else 'Post'}-LN reached loss {target:.2f} in {len(ok)} of "
                     f"{len(reached)} runs" + (f", fastest at step {min(ok)}." if ok else "."))
    done = [r for r in runs if st.val_loss(r) is not None]
    if done:
        best = min(done, key=st.val_loss)
        f.append(f"Best run: {best['name']} ({describe(best)}), validation loss {st.val_loss(best):.3f} "
                 f"(perplexity {math.exp(st.val_loss(best)):.1f}).")
    doc.h(3, "Findings")
    doc.bullets(f)
    findings["norm"] = f


# ---------------------------------------------------------------- init

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


def section_init(doc, st, findings):
    runs = [r for r in st.preset_runs("init") if r.get("status") in ("completed", "diverged")]
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
    findings["init"] = f


# ---------------------------------------------------------------- depth

def depth_variant(r):
    v = r["variables"]
    return f"{v['norm']}-LN, " + ("scale" if v["residual_scale"] else "no scale")


def section_depth(doc, st, findings):
    runs = [r for r in st.preset_runs("depth") if r.get("status") in ("completed", "diverged")]
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
    findings["depth"] = f


# ---------------------------------------------------------------- samples, divergence

def section_samples(doc, st, findings):
    runs = [r for r in st.runs if r.get("kind") == "train" and r.get("status") in ("completed", "diverged")]
    with_sample = [r for r in runs if r.get("sample")]
    prompt = with_sample[0]["sample"]["prompt"] if with_sample else ""
    sb = st.budget.get("sample", {})
    doc.p(f"Each run's final checkpoint continues the prompt \"{prompt}\" (after <|endoftext|>) for up to "
          f"{sb.get('tokens', '?')} tokens, temperature {fmt_num(sb.get('temperature'))}, top-k {sb.get('top_k', '?')}, "
          f"a fixed seed. distinct-n: unique word n-grams / all; rep-4: share of word 4-grams already seen earlier "
          "in the sample (higher = more looping).")
    pts = [(r["outcome"]["val_ppl"], r["sample"]["distinct_2"], r["sample"]["repeated_4gram_rate"], r)
           for r in with_sample if r.get("status") == "completed" and r.get("outcome", {}).get("val_ppl")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    presets = [p for p in PRESETS if any(x[3]["preset"] == p for x in pts)]
    cmap = {"norm": "tab:blue", "init": "tab:green", "depth": "tab:red"}
    for p in presets:
        sel = [x for x in pts if x[3]["preset"] == p]
        axes[0].scatter([x[0] for x in sel], [x[1] for x in sel], color=cmap.get(p, "k"), label=p, s=18)
        axes[1].scatter([x[0] for x in sel], [x[2] for x in sel], color=cmap.get(p, "k"), label=p, s=18)
    for ax, yl in zip(axes, ("distinct-2", "rep-4")):
        ax.set_xscale("log")
        ax.set_xlabel("validation perplexity")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3, which="both")
        if presets:
            ax.legend(fontsize=8)
    fig.tight_layout()
    doc.figure(fig, "samples_quality.png", "Text-sample quality against validation perplexity, one point per run")

    rows = []
    for r in runs:
        s = r.get("sample")
        o = r.get("outcome", {})
        text = s["text"].replace("\n", " ⏎ ") if s else (r.get("note") or "–")
        if len(text) > 220:
            text = text[:220] + " …"
        rows.append([r["name"], fmt(o.get("val_ppl") if r.get("status") == "completed" else None, 1),
                     fmt(s["distinct_1"], 2) if s else "–", fmt(s["distinct_2"], 2) if s else "–",
                     fmt(s["repeated_4gram_rate"], 2) if s else "–", text])
    doc.table(["run", "val ppl", "distinct-1", "distinct-2", "rep-4", "sample"], rows)

    f = []
    if len(pts) >= 3:
        rho_d = spearman([x[0] for x in pts], [x[1] for x in pts])
        rho_r = spearman([x[0] for x in pts], [x[2] for x in pts])
        if rho_d is not None:
            f.append(f"Across {len(pts)} completed runs, Spearman's ρ between validation perplexity and distinct-2 "
                     f"is {rho_d:+.2f}" + (f", and with rep-4 {rho_r:+.2f}." if rho_r is not None else "."))
        best = min(pts, key=lambda x: x[0])
        worst = max(pts, key=lambda x: x[0])
        f.append(f"Lowest perplexity: {best[3]['name']} (ppl {best[0]:.1f}, distinct-2 {best[1]:.2f}, rep-4 "
                 f"{best[2]:.2f}); highest: {worst[3]['name']} (ppl {worst[0]:.1f}, distinct-2 {worst[1]:.2f}, "
                 f"rep-4 {worst[2]:.2f}).")
    loops = [x for x in pts if x[2] > 0.2]
    if pts:
        f.append(f"{len(loops)} of {len(pts)} samples repeat more than 20% of their 4-grams.")
    doc.h(3, "Findings")
    doc.bullets(f)
    findings["samples"] = f


def section_divergence(doc, st, findings):
    runs = [r for r in st.runs if r.get("kind") == "train"]
    rows = []
    for r in runs:
        m = st.metrics.get(r["name"], {})
        loss = m.get("loss", [])
        if r.get("status") == "diverged":
            o = r.get("outcome", {})
            rows.append([r["name"], describe(r), "diverged", o.get("diverged_at", "–"), o.get("reason", ""),
                         count_spikes(loss), fmt(max_loss(st, r))])
        elif loss and count_spikes(loss):
            rows.append([r["name"], describe(r), r.get("status"), "–", "", count_spikes(loss), fmt(max_loss(st, r))])
        elif r.get("status") not in ("completed", "diverged"):
            rows.append([r["name"], describe(r), r.get("status", "pending"), "–", "not finished", "–", "–"])
    n_div = sum(r.get("status") == "diverged" for r in runs)
    doc.p(f"{n_div} of {len(runs)} training runs diverged; this table lists them and every run with a loss spike.")
    if rows:
        doc.table(["run", "setting", "status", "diverged at step", "reason", "loss spikes", "max train loss"], rows)
    findings["divergence"] = [f"{n_div} of {len(runs)} training runs diverged."]


# ---------------------------------------------------------------- main

def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: report.py OUT (a folder with study.json)\n")
        return 2
    out = sys.argv[1]
    try:
        st = Study(out)
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(f"report.py: cannot read {os.path.join(out, 'study.json')}: {e}\n")
        return 2
    doc = Doc(out)
    s = st.s
    data = s.get("data", {})
    runs = st.runs
    secs = sum(r.get("seconds", 0) or r.get("result", {}).get("seconds", 0) for r in runs)
    title = "gpt2lab study report"
    doc.h(1, title)
    doc.p(f"Budget '{st.budget.get('name', '?')}', {len(runs)} runs ({', '.join(s.get('presets', []))}), "
          f"{s.get('threads', '?')} threads, {secs / 60:.1f} minutes of run time; data {data.get('dir', '?')} "
          f"(tokenizer {data.get('tokenizer_identity', '?')}, vocabulary {data.get('vocab_size', '?')}). "
          f"Study created {s.get('created', '?')}, last updated {s.get('updated', '?')}.")
    if s.get("command"):
        doc.pre(s["command"])
    summary_at = len(doc.blocks)
    findings = {}
    for preset in PRESETS:
        doc.h(2, SECTION_TITLES[preset])
        if not st.has(preset):
            doc.p(f"Not run in this study (gpt2lab study --preset {preset} --out {out}).")
            continue
        {"grad-at-init": section_grad_at_init, "norm": section_norm, "init": section_init,
         "depth": section_depth}[preset](doc, st, findings)
    doc.h(2, "Text samples")
    section_samples(doc, st, findings)
    doc.h(2, "Divergence and loss spikes")
    section_divergence(doc, st, findings)
    doc.h(2, "Method")
    doc.bullets([
        "Train loss curves are trailing moving averages over 1/40 of a run; validation points are the "
        "trainer's evaluations (the same validation batches every time).",
        f"A loss spike is a step whose loss is more than {int(SPIKE_JUMP * 100)}% above the median of the "
        f"previous {SPIKE_WINDOW} steps (consecutive such steps count once).",
        "'Steps to loss ≤ x': the first step whose smoothed train loss reaches x, where x is 0.1 nats below the "
        "unigram baseline on the training split (the point where a model starts to use context); without the "
        "shards at hand, the median final smoothed train loss of the preset's runs that did not diverge.",
        "Unigram baseline: the cross-entropy of the training split's token frequencies (add-one smoothed) on the "
        "validation split; a model at this loss predicts common tokens and nothing from context.",
        f"Xiong pattern at init: Post-LN's last/first-layer FFN gradient ratio above {GROWS}, Pre-LN's at most "
        f"{GROWS}.",
        "One seed per setting (the same seed for every run, so runs differ only in what the grid varies): "
        "differences of a few hundredths of a nat between two runs are within what another seed could change.",
        "All numbers and every finding above are computed by tools/report.py from study.json and the runs' "
        "metrics.jsonl; rerunning it on the same folder gives the same report.",
    ])
    doc.p("Budget: " + json.dumps(st.budget, sort_keys=True))

    # The summary goes near the top but is assembled last.
    summary = []
    for key in ("grad-at-init", "norm", "init", "depth", "samples", "divergence"):
        if findings.get(key):
            summary.append(f"[{key}] " + findings[key][0])
            for extra in findings[key][1:]:
                if any(w in extra for w in ("Xiong", "Radford", "distinct hidden unit", "of the unigram baseline")):
                    summary.append(f"[{key}] " + extra)
    doc.blocks[summary_at:summary_at] = [("h", 2, "Summary of findings"), ("ul", summary)]

    with open(os.path.join(out, "report.md.tmp"), "w") as f:
        f.write(doc.markdown())
    os.replace(os.path.join(out, "report.md.tmp"), os.path.join(out, "report.md"))
    with open(os.path.join(out, "report.html.tmp"), "w") as f:
        f.write(doc.html(title))
    os.replace(os.path.join(out, "report.html.tmp"), os.path.join(out, "report.html"))
    print(f"report.py: wrote {os.path.join(out, 'report.md')}, report.html and {len(doc.figures)} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
