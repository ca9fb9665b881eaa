"""Numbers: smoothing, loss spikes, rank correlation, and how they are printed."""
import math
import statistics

# Xiong et al.'s claim is about the shape of the per-layer profile; a ratio
# of the last layer's gradient norm to the first layer's above GROWS counts
# as "grows toward the output", below SHRINKS as "shrinks".
GROWS, SHRINKS = 1.25, 0.8
SPIKE_WINDOW, SPIKE_JUMP = 20, 0.10  # a loss 10% above the median of the previous 20 steps


class Bound:
    """A censored value: one outside the probed range, known only as a
    bound. kind '<': the value lies below `value` (e.g. an lr-edge search
    where nothing trained: the edge is below the lowest probe); kind '>':
    at or above it (everything trained up to the grid's top; a run that
    never reached a target loss within its tokens). A bound is never
    averaged or turned into a number: comparisons with it are decided only
    when the bound itself decides them (verdicts.Diff)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        assert kind in ("<", ">"), kind
        self.kind, self.value = kind, float(value)

    def text(self, show=lambda x: f"{x:g}"):
        return ("< " if self.kind == "<" else "≥ ") + show(self.value)

    def map(self, f):
        """The same bound through a monotone increasing f (log2 → lr)."""
        return Bound(self.kind, f(self.value))

    def __eq__(self, other):
        return isinstance(other, Bound) and (self.kind, self.value) == (other.kind, other.value)

    def __hash__(self):
        return hash((self.kind, self.value))

    def __repr__(self):
        return f"Bound({self.kind!r}, {self.value!r})"


def is_bound(x):
    return isinstance(x, Bound)


def interval(x):
    """(low, high) of a value: a number is its own, '<' v is (−inf, v), '>' v is [v, inf)."""
    if isinstance(x, Bound):
        return (-math.inf, x.value) if x.kind == "<" else (x.value, math.inf)
    return x, x


def surely_above(x, y):
    """x is above y whatever a bound among them hides (x, y: numbers or Bounds)."""
    lo, _ = interval(x)
    _, hi = interval(y)
    # '< v' holds values strictly below v: anything at or above v is above it.
    return lo > hi or (isinstance(y, Bound) and y.kind == "<" and lo >= hi)


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
    if abs(m - round(m, 2)) > 1e-9:  # a geometric mean, not a grid value
        m = float(f"{m:.3g}")
        if m >= 10:
            m, e = m / 10, e + 1
    return f"{m:g}e{e}"


def mean_sd(xs):
    """(mean, sample standard deviation) of the finite values in xs; sd is
    None for fewer than two values, both None for none."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return None, None
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) >= 2 else None)


def fmt_msd(xs, nd=3):
    """Seeds' values as 'mean ± sd' ('x (1 seed)' for one, '–' for none)."""
    m, sd = mean_sd(xs)
    if m is None:
        return "–"
    if sd is None:
        return f"{m:.{nd}f} (1 seed)"
    return f"{m:.{nd}f} ± {sd:.{nd}f}"


def fmt_tokens(x):
    """A token count, short: 12,288 -> '12.3k', 1.5e6 -> '1.50M'."""
    if x is None or not math.isfinite(x):
        return "–"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


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
