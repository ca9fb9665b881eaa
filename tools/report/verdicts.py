"""The study's claims and their verdicts, from plain numbers.

Every function here takes lists and dicts of numbers (no Study, no files),
so that the sections' findings and the verdict table at the top of the
report come from the same code (the sections call these functions and print
their `details`), and tests can feed synthetic inputs
(tests/reference/e2e/test_study_verdicts.py). evidence.py turns a study into
these inputs.

The rules:

- Seeds. A comparison of two settings uses every seed of each; it states a
  difference only when both have at least MIN_SEEDS seeds and
  |Δmean| > NOISE · pooled sd, pooled sd = sqrt((sd1² + sd2²) / 2)
  (sample sds); otherwise the two are "within seed noise" (Diff).
- A setting "trains" in a binary measure (left the unigram plateau) when
  every one of its seeds (at least MIN_SEEDS) did, "fails" when none did;
  anything in between is seed-dependent and supports no statement.
- Censoring. A value outside the probed range (an lr-edge search where
  nothing trained, or everything did) is a Bound ('< x', '≥ x'), never a
  number: it is not averaged, and a comparison with a bound on either side
  is resolved only when the bound itself decides it (every seed of one
  side surely beyond every seed of the other); otherwise it is "not
  resolved", which supports no verdict.
- Verdicts: CONFIRMED, NOT_OBSERVED ("not observed at this scale": tested,
  no resolved difference in the claimed direction), CONTRADICTED (a
  resolved difference the other way), MIXED (the claim's measures do not
  all agree; each measure's own verdict is shown) and NOT_TESTED (the study
  has no such runs, or too few seeds).
- Where a claim rests on several settings (or placements), it is decided by
  the majority of the settings that could be compared (more than half
  resolved one way: majority(), combine_settings()); where it rests on
  several measures, by combine(): confirmed only when every measure that
  could be computed confirms.
- Slopes over layers (grad-at-init, rule stable-gradients/2). A run's
  per-layer gradient norms are summarised by the least-squares slope of
  their log against the layer index; a setting's mean slope over seeds
  gets a CI_LEVEL Student-t interval (n − 1 dof, at least MIN_SEEDS
  seeds): "grows" when it lies entirely above 0, "shrinks" entirely
  below, else flat within noise (SlopeCI).
- Trends over depth (rule scale-depth/2): per seed, the least-squares
  slope of a paired difference against log2(depth); the seeds' slopes get
  the same Student-t interval (SlopeCI).
- Registered rules. RULES declares each claim's measures and rule, with a
  versioned id; gpt2lab records them in study.json ("rules") when it
  creates a study, before any run. A claim whose registered rule differs
  from this code's is reported under both (registered(); the current one
  marked "rule changed after the runs").
"""
import math
import statistics

from .stats import GROWS, Bound, fmt_lr, fmt_ratio, fmt_tokens, plural, surely_above

MIN_SEEDS = 3
NOISE = 2.0  # a difference is stated when |Δmean| > NOISE · pooled sd

CONFIRMED = "confirmed"
NOT_OBSERVED = "not observed at this scale"
CONTRADICTED = "contradicted"
MIXED = "mixed"
NOT_TESTED = "not tested"
VALUES = (CONFIRMED, NOT_OBSERVED, CONTRADICTED, MIXED, NOT_TESTED)

# The claims, in the order of the verdict table: key, wording, the sections
# (presets) that hold the measurements.
CLAIMS = [
    ("stable-gradients", "Pre-LN gives more stable gradients", ("grad-at-init", "lr-edge")),
    ("no-warmup", "Pre-LN does not need warmup", ("lr-edge", "norm")),
    ("faster", "Pre-LN converges faster", ("norm",)),
    ("better-final", "Pre-LN reaches better final performance", ("norm",)),
    ("gpt2-init", "GPT-2's scaled init beats zero / normal / Xavier / He", ("init",)),
    ("scale-depth", "The residual scale matters more as depth grows", ("depth",)),
    ("mt-no-warmup", "Pre-LN translates better than Post-LN without warmup (Xiong et al.)", ("translation",)),
    ("mt-warmup", "Warmup is needed by Post-LN, not by Pre-LN (translation)", ("translation",)),
    ("mt-pretrain-gap", "Pre-training narrows the placement gap (translation)", ("translation",)),
    ("deepnorm", "DeepNorm trains Post-LN where plain Post-LN does not", ("atlas",)),
    ("rezero-faster", "ReZero converges faster than Pre-LN/Post-LN", ("atlas",)),
    ("sandwich-growth", "Sandwich/Peri-LN bounds the residual growth of Pre-LN", ("atlas",)),
    ("rmsnorm-cost", "RMSNorm matches LayerNorm at lower cost", ("atlas",)),
    ("fluency", "Pre-LN / GPT-2 init generate more fluent text", ("fluency",)),
]
CLAIM_TEXT = {k: text for k, text, _ in CLAIMS}
CLAIM_SECTIONS = {k: secs for k, _, secs in CLAIMS}


class Diff:
    """Two settings' per-seed values, a and b: means, sds, Δ = mean(a) −
    mean(b), the pooled sd, and whether the difference is resolved
    (sign +1: a larger, −1: b larger, 0: within seed noise, not resolved
    or too few seeds).

    A value may be a Bound (censored: outside the probed range). A
    comparison with a bound on either side is `censored`: no mean, sd or Δ
    is formed; it is resolved only when every value of one side is surely
    above every value of the other (the bounds themselves decide it), and
    otherwise "not resolved"."""

    def __init__(self, a, b):
        ok = lambda x: isinstance(x, Bound) or (x is not None and math.isfinite(x))  # noqa: E731
        self.values_a, self.values_b = [x for x in a if ok(x)], [x for x in b if ok(x)]
        self.censored = any(isinstance(x, Bound) for x in self.values_a + self.values_b)
        self.n_a, self.n_b = len(self.values_a), len(self.values_b)
        self.enough = self.n_a >= MIN_SEEDS and self.n_b >= MIN_SEEDS
        if self.censored:
            self.a = self.b = []
            self.mean_a = self.mean_b = self.sd_a = self.sd_b = self.delta = self.pooled = None
            above = all(surely_above(x, y) for x in self.values_a for y in self.values_b)
            below = all(surely_above(y, x) for x in self.values_a for y in self.values_b)
            self.resolved = self.enough and (above or below)
            self.sign = (1 if above else -1) if self.resolved else 0
            return
        self.a, self.b = self.values_a, self.values_b
        self.mean_a = statistics.mean(self.a) if self.a else None
        self.mean_b = statistics.mean(self.b) if self.b else None
        self.sd_a = statistics.stdev(self.a) if self.n_a >= 2 else None
        self.sd_b = statistics.stdev(self.b) if self.n_b >= 2 else None
        self.delta = self.mean_a - self.mean_b if self.a and self.b else None
        self.pooled = math.sqrt((self.sd_a ** 2 + self.sd_b ** 2) / 2) if self.enough else None
        # (a relative 1e-9 keeps float rounding from counting as a difference when the pooled sd is 0)
        scale = max(abs(self.mean_a), abs(self.mean_b), 1.0) if self.enough else 1.0
        self.resolved = self.enough and abs(self.delta) > NOISE * self.pooled + 1e-9 * scale
        self.sign = (1 if self.delta > 0 else -1) if self.resolved else 0

    @property
    def unresolved_bound(self):
        """A comparison with a bound that the bound does not decide."""
        return self.censored and self.enough and not self.resolved

    def censored_text(self, show, delta):
        def side(xs):
            if not any(isinstance(x, Bound) for x in xs):
                m = statistics.mean(xs)
                return show(m) + (f" ± {delta(statistics.stdev(xs))}" if len(xs) >= 2 else "")
            kinds = {(x.kind, x.value) for x in xs if isinstance(x, Bound)}
            if len(kinds) == 1 and all(isinstance(x, Bound) for x in xs):
                return f"{xs[0].text(show)} (every seed)"
            return "[" + ", ".join(x.text(show) if isinstance(x, Bound) else show(x) for x in xs) + "]"

        if not self.values_a or not self.values_b:
            return "no values to compare"
        a, b = side(self.values_a), side(self.values_b)
        if not self.enough:
            return f"{a} vs {b} ({self.n_a} vs {self.n_b} seeds; {MIN_SEEDS} needed to state a difference)"
        if self.resolved:
            return f"{a} vs {b} (censored: decided by the bound, every seed of one side beyond every seed of the other)"
        return f"{a} vs {b} (censored: not resolved, the bound does not decide it)"

    def text(self, show=lambda x: f"{x:.3f}", delta=None):
        """'A ± sd vs B ± sd (Δ +x, 2·pooled sd y)', or the reason no
        difference is stated; a censored side as its bound."""
        delta = delta or show
        if self.censored:
            return self.censored_text(show, delta)
        if self.delta is None:
            return "no values to compare"
        a = show(self.mean_a) + (f" ± {delta(self.sd_a)}" if self.sd_a is not None else "")
        b = show(self.mean_b) + (f" ± {delta(self.sd_b)}" if self.sd_b is not None else "")
        if not self.enough:
            return f"{a} vs {b} ({self.n_a} vs {self.n_b} seeds; {MIN_SEEDS} needed to state a difference)"
        sign = "+" if self.delta >= 0 else "−"
        verdict = "" if self.resolved else ": within seed noise"
        noise = delta(NOISE * self.pooled)
        return f"{a} vs {b} (Δ {sign}{delta(abs(self.delta))}, {NOISE:g}·pooled sd {noise}{verdict})"


class Verdict:
    """One claim's verdict, the numbers behind it (one line for the table)
    and its details: {section (preset): the sentences that section prints
    under Findings}."""

    def __init__(self, key, verdict, numbers, details=None):
        assert verdict in VALUES, verdict
        self.key, self.verdict, self.numbers = key, verdict, numbers
        self.details = details if isinstance(details, dict) else {CLAIM_SECTIONS[key][0]: list(details or [])}
        self.claim = CLAIM_TEXT[key]
        self.sections = CLAIM_SECTIONS[key]
        self.rule = None  # the rule id it was computed under (evaluate())
        # Where study.json registered another rule: its id, and the verdict
        # under it (None when this code cannot compute that rule).
        self.registered_rule, self.registered = None, None

    @property
    def changed(self):
        """The rule was changed after the runs (the registered one differs)."""
        return self.registered_rule is not None

    def lines(self, section):
        """What `section` prints for this claim: its details, then the
        verdict (under the registered rule first, where it was changed)."""
        return list(self.details.get(section, [])) + self.registered_lines() + [self.line()]

    def registered_lines(self):
        if not self.changed:
            return []
        if self.registered is None:
            return [f"The registered rule of \"{self.claim}\", {self.registered_rule}, is not known to this report; "
                    "its verdict cannot be shown."]
        return [self.registered.line()]

    def line(self):
        """The sentence a section prints for the claim."""
        if self.changed:
            return f"Verdict on \"{self.claim}\" under rule {self.rule}, changed after the runs (registered: " \
                   f"{self.registered_rule}): {self.verdict} ({self.numbers})."
        if self.rule and self.rule != RULES[self.key]["id"]:
            return f"Verdict on \"{self.claim}\" under the registered rule {self.rule}: {self.verdict} " \
                   f"({self.numbers})."
        return f"Verdict on \"{self.claim}\": {self.verdict} ({self.numbers})."

    def __repr__(self):
        return f"Verdict({self.key!r}, {self.verdict!r}, {self.numbers!r})"


def majority(signs, claimed=1):
    """A verdict from per-setting signs (+1, −1, 0; None = not comparable):
    CONFIRMED when more than half of the comparable settings are resolved
    in the claimed direction, CONTRADICTED when more than half are resolved
    the other way, NOT_OBSERVED otherwise, NOT_TESTED when none is
    comparable."""
    signs = [s for s in signs if s is not None]
    if not signs:
        return NOT_TESTED
    if sum(s == claimed for s in signs) * 2 > len(signs):
        return CONFIRMED
    if sum(s == -claimed for s in signs) * 2 > len(signs):
        return CONTRADICTED
    return NOT_OBSERVED


def combine(verdicts):
    """Several MEASURES of one claim: CONFIRMED only when every measure that
    could be computed (not NOT_TESTED) confirms, CONTRADICTED only when
    every one contradicts, NOT_OBSERVED when every one is not observed,
    NOT_TESTED when none could be computed, MIXED otherwise (the measures
    disagree: the claim's numbers show each measure's own verdict)."""
    vs = [v for v in verdicts if v != NOT_TESTED]
    if not vs:
        return NOT_TESTED
    for v in (CONFIRMED, CONTRADICTED, NOT_OBSERVED):
        if all(x == v for x in vs):
            return v
    return MIXED


SIGN_OF = {CONFIRMED: 1, CONTRADICTED: -1, NOT_OBSERVED: 0, MIXED: 0, NOT_TESTED: None}


def combine_settings(verdicts):
    """Several SETTINGS (or placements) of one measure, each with its own
    verdict: the majority rule over the settings that could be compared
    (majority(); a mixed setting counts as not resolved)."""
    return majority([SIGN_OF[v] for v in verdicts])


def seeds_state(left, seeds):
    """A binary measure over a setting's seeds: 'trains' (all of at least
    MIN_SEEDS seeds), 'fails' (none of them), 'mixed', or 'few seeds'."""
    if seeds < MIN_SEEDS:
        return "few seeds"
    return "trains" if left == seeds else "fails" if left == 0 else "mixed"


def disagrees(v):
    """A verdict that disagrees with the paper or does not show its result
    (the report then lists what the study varied to rule out an artefact)."""
    return v.verdict in (NOT_OBSERVED, CONTRADICTED, MIXED)


FEW = f"fewer than {MIN_SEEDS} seeds per setting"


# ---------------------------------------------------------------- grad-at-init

def gai_setting(post, pre):
    """One (embedding, depth, init) setting's last/first-layer FFN gradient
    ratios over seeds: 'pattern' (Xiong et al.'s: Post-LN's ratio above
    GROWS, Pre-LN's at most GROWS, Post-LN's resolved above Pre-LN's),
    'reversed' (the same with the placements swapped), 'neither', or
    'few seeds'; and the Diff(post, pre)."""
    d = Diff(post, pre)
    if not d.enough:
        return "few seeds", d
    if d.sign > 0 and d.mean_a > GROWS and d.mean_b <= GROWS:
        return "pattern", d
    if d.sign < 0 and d.mean_b > GROWS and d.mean_a <= GROWS:
        return "reversed", d
    return "neither", d


EMBEDDING_WORDS = {"none": "GPT-2's embeddings (N(0, 0.02))",
                   "sqrt": "embeddings ×√d (the original Transformer's input scale)",
                   "unit": "unit-scale embeddings (N(0, 1/d) tables ×√d, the original Transformer's)"}


def gai_verdict(profiles):
    """profiles: [{"embedding", "depth", "init", "post": [ratios], "pre":
    [ratios]}]. Per embedding setting, the majority of its (depth, init)
    settings decides (pattern +1, reversed −1, neither 0); the measure
    confirms when every embedding setting shows the pattern, contradicts
    when one shows it reversed. Returns (verdict, numbers, details)."""
    by_emb = {}
    for p in profiles:
        by_emb.setdefault(p.get("embedding", "none"), []).append(p)
    per_emb, nums, details = {}, [], []
    for emb, rows in by_emb.items():
        kinds = [gai_setting(r["post"], r["pre"])[0] for r in rows]
        signs = [{"pattern": 1, "reversed": -1, "neither": 0}.get(k) for k in kinds]
        per_emb[emb] = majority(signs)
        n = sum(s is not None for s in signs)
        pat, rev = kinds.count("pattern"), kinds.count("reversed")
        if not n:
            nums.append(f"embedding {emb}: {FEW}")
            continue
        nums.append(f"embedding {emb}: pattern in {pat} of {n} settings" + (f", reversed in {rev}" if rev else ""))
        details.append(f"With {EMBEDDING_WORDS.get(emb, 'embedding setting ' + emb)}, Xiong et al.'s pattern "
                       f"(Post-LN's last/first ratio above {GROWS}, Pre-LN's at most {GROWS}, the difference beyond "
                       f"seed noise) holds in {pat} of {n} (depth, init) settings with {MIN_SEEDS}+ seeds"
                       + (f" and is reversed in {rev}" if rev else "") + ".")
    vs = list(per_emb.values())
    if not vs or all(v == NOT_TESTED for v in vs):
        verdict = NOT_TESTED
    elif CONTRADICTED in vs:
        verdict = CONTRADICTED
    elif all(v == CONFIRMED for v in vs if v != NOT_TESTED):
        verdict = CONFIRMED
    else:
        verdict = NOT_OBSERVED
    return verdict, "; ".join(nums) or "no grad-at-init runs", details


# ---------------------------------------------------------------- grad-at-init, rule 2: slopes over layers

CI_LEVEL = 0.95  # a mean slope's confidence interval (Student t, n − 1 dof)
# The weight matrices whose per-layer gradient norms the slope test judges
# (grad_norm keys; Xiong et al.'s W¹ and W² of each FFN), then the FFN sum
# (√(‖∇W¹‖² + ‖∇W²‖²)), shown beside them and not judged.
GAI_MATRICES = (("mlp.c_fc", "W¹"), ("mlp.c_proj", "W²"))
GAI_SHOWN = GAI_MATRICES + (("ffn", "FFN"),)
GROWS_WORD, SHRINKS_WORD, FLAT_WORD = "grows", "shrinks", "flat / within noise"
INIT_WORDS = {"gpt2": "GPT-2's init (N(0, 0.02), c_proj ×1/√(2L))", "normal": "normal init (N(0, 0.02))",
              "xavier": "Xavier init", "he": "He init"}


def t_coverage(t, dof):
    """P(|T| ≤ t) for Student's t with dof degrees of freedom (a positive
    integer), in closed form (Abramowitz & Stegun 26.7.3, 26.7.4)."""
    th = math.atan(t / math.sqrt(dof))
    s, c2 = math.sin(th), math.cos(th) ** 2
    if dof % 2:
        total, term = 0.0, math.cos(th)
        if dof > 1:
            total = term
            for k in range(3, dof - 1, 2):
                term *= (k - 1) / k * c2
                total += term
        return 2 / math.pi * (th + s * total)
    total, term = 1.0, 1.0
    for k in range(2, dof - 1, 2):
        term *= (k - 1) / k * c2
        total += term
    return s * total


def t_quantile(dof, level=CI_LEVEL):
    """The two-sided critical value of Student's t: the t with P(|T| ≤ t)
    = level (12.706 for 1 dof, 2.262 for 9, at 95%), by bisection on
    t_coverage."""
    lo, hi = 0.0, 1.0
    while t_coverage(hi, dof) < level:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_coverage(mid, dof) < level else (lo, mid)
    return (lo + hi) / 2


def log_slope(norms):
    """The least-squares slope of ln(norm) against the layer index
    0..L−1: the growth per layer in log units (slope s: ×e^s per layer,
    ×e^(s(L−1)) from the first layer to the last). None for fewer than two
    layers or a norm that is not a positive finite number."""
    if not isinstance(norms, list) or len(norms) < 2 or \
            not all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in norms):
        return None
    ys = [math.log(x) for x in norms]
    xm, ym = (len(ys) - 1) / 2, statistics.mean(ys)
    return sum((i - xm) * (y - ym) for i, y in enumerate(ys)) / sum((i - xm) ** 2 for i in range(len(ys)))


class SlopeCI:
    """One setting's per-seed slopes (log_slope): n, mean, sd, half (the
    half-width of the mean's CI_LEVEL interval, t_quantile(n − 1)·sd/√n),
    low, high, and the pattern: GROWS_WORD when the interval lies entirely
    above 0, SHRINKS_WORD entirely below, FLAT_WORD otherwise; 'few seeds'
    with fewer than MIN_SEEDS slopes (the interval is still computed from
    two)."""

    def __init__(self, slopes):
        self.values = [x for x in slopes if x is not None and math.isfinite(x)]
        self.n = len(self.values)
        self.mean = statistics.mean(self.values) if self.values else None
        self.sd = statistics.stdev(self.values) if self.n >= 2 else None
        self.half = t_quantile(self.n - 1) * self.sd / math.sqrt(self.n) if self.n >= 2 else None
        self.low = self.high = None
        if self.half is not None:
            self.low, self.high = self.mean - self.half, self.mean + self.half
        self.enough = self.n >= MIN_SEEDS
        if not self.enough:
            self.pattern = "few seeds"
        # (1e-12: float rounding of a flat profile is no growth)
        elif self.low > 1e-12:
            self.pattern = GROWS_WORD
        elif self.high < -1e-12:
            self.pattern = SHRINKS_WORD
        else:
            self.pattern = FLAT_WORD

    def text(self, nd=3):
        """'+0.052 ± 0.021' (mean ± CI half-width), '+0.052 (1 seed)', '–'."""
        if self.mean is None:
            return "–"
        # (a mean that rounds to zero is printed without a sign)
        m = f"{self.mean:+.{nd}f}" if round(self.mean, nd) else f"{0:.{nd}f}"
        return f"{m} (1 seed)" if self.half is None else f"{m} ± {self.half:.{nd}f}"


def gai_slope_setting(post, pre):
    """One (embedding, init, depth) setting and weight matrix: Post-LN's
    and Pre-LN's per-seed slopes. 'pattern' (Xiong et al.'s: Post-LN's
    gradient grows toward the output, its slope's CI entirely above 0,
    and Pre-LN's does not, its CI not entirely above 0), 'reversed' (Pre-LN's
    grows and Post-LN's does not), 'neither' (both grow, or neither
    does), or 'few seeds' (either placement has fewer than MIN_SEEDS);
    and the two SlopeCIs."""
    p, q = SlopeCI(post), SlopeCI(pre)
    if not (p.enough and q.enough):
        return "few seeds", p, q
    if p.pattern == GROWS_WORD and q.pattern != GROWS_WORD:
        return "pattern", p, q
    if q.pattern == GROWS_WORD and p.pattern != GROWS_WORD:
        return "reversed", p, q
    return "neither", p, q


KIND_SIGN = {"pattern": 1, "reversed": -1, "neither": 0}


def gai_slope_cells(slopes):
    """slopes: [{"embedding", "init", "depth", "post": {matrix: [slope
    per seed]}, "pre": {...}}] (evidence.gai_slopes). Per (embedding,
    init), in first-seen order: [(depth, matrix, label, kind, SlopeCI post,
    SlopeCI pre)] over its depths × GAI_MATRICES."""
    cells = {}
    for s in sorted(slopes, key=lambda s: s["depth"]):
        for key, label in GAI_MATRICES:
            kind, p, q = gai_slope_setting(s["post"].get(key) or [], s["pre"].get(key) or [])
            cells.setdefault((s["embedding"], s["init"]), []).append((s["depth"], key, label, kind, p, q))
    return cells


def depths_text(depths):
    return ", ".join(map(str, depths)) + " layers"


def slope_states(rows, idx, key):
    """'grows at 6, 12 layers, is flat within noise at 24 layers' for one
    placement (idx 4: Post-LN, 5: Pre-LN) and matrix of gai_slope_cells' rows."""
    by = {}
    for r in rows:
        if r[1] == key and r[3] != "few seeds":
            by.setdefault(r[idx].pattern, []).append(r[0])
    verbs = {GROWS_WORD: "grows", FLAT_WORD: "is flat within noise", SHRINKS_WORD: "shrinks"}
    return ", ".join(f"{verbs[w]} at {depths_text(by[w])}" for w in (GROWS_WORD, FLAT_WORD, SHRINKS_WORD) if w in by)


def gai_slope_verdict(slopes):
    """The grad-at-init measure under rule stable-gradients/2. Each
    (embedding, init, depth) setting and matrix (W¹, W²) is classified by
    gai_slope_setting; per (embedding, init) the majority of its depth ×
    matrix settings decides (pattern +1, reversed −1, neither 0: majority());
    the measure is combine() over the (embedding, init) cells: confirmed
    only when every computable cell confirms, mixed when they disagree.
    Returns (verdict, numbers, details): details are one sentence per
    (embedding, init), saying what was found with that init and embedding
    only."""
    cells = gai_slope_cells(slopes)
    per_cell, nums, details = [], [], []
    for (emb, init), rows in cells.items():
        signs = [KIND_SIGN.get(kind) for _, _, _, kind, _, _ in rows]
        v = majority(signs)
        per_cell.append(v)
        n = sum(s is not None for s in signs)
        pat, rev = signs.count(1), signs.count(-1)
        words = f"With {INIT_WORDS.get(init, 'init ' + init)} and {EMBEDDING_WORDS.get(emb, 'embedding ' + emb)}"
        if not n:
            nums.append(f"{emb}/{init}: {FEW}")
            details.append(f"{words}: {FEW} with per-matrix (W¹, W²) gradient norms, so no slope is judged.")
            continue
        nums.append(f"{emb}/{init} {pat}/{n}" + (f" (reversed {rev})" if rev else ""))
        seeds = sorted({x.n for r in rows if r[3] != "few seeds" for x in r[4:6]})
        parts = [f"{norm}'s {label} {slope_states(rows, idx, key)}" for norm, idx in (("Post-LN", 4), ("Pre-LN", 5))
                 for key, label in GAI_MATRICES]
        details.append(f"{words}, the slope of log ‖∇W‖ over the layers ({CI_LEVEL:.0%} CI over "
                       f"{'–'.join(map(str, (seeds[0], seeds[-1]) if len(seeds) > 1 else seeds))} seeds): "
                       + "; ".join(parts) + f". Xiong et al.'s pattern (Post-LN's gradient growing toward the output, "
                       f"Pre-LN's not) holds in {pat} of {n} (depth, matrix) settings"
                       + (f" and is reversed in {rev}" if rev else "") + f": {v} with this init and embedding.")
    verdict = combine(per_cell)
    counts = ", ".join(f"{x} {per_cell.count(x)}" for x in VALUES if per_cell.count(x))
    numbers = ("Xiong pattern by log-slope CI, in (depth × W¹/W²) settings per embedding/init: " + ", ".join(nums)
               + f" [cells: {counts}]") if nums else "no grad-at-init runs"
    return verdict, numbers, details


# ---------------------------------------------------------------- lr-edge

def edge_label(warmup_fraction, clip):
    return (f"warmup {warmup_fraction:.0%}" if warmup_fraction else "no warmup") + ", " + \
        (f"clip {clip:g}" if clip else "no clipping")


def log2_text(x):
    return fmt_lr(2 ** x)


def octaves(x):
    return f"{x:.2f} oct"


def edge_comparisons(edges, only_warmup=None):
    """edges: [{"warmup_fraction", "clip", "pre": [log2 max stable lr per
    seed, or a Bound where the search left the grid: '< lowest probe' when
    nothing trained, '≥ top' when everything did; see evidence.edge_log2]. Returns [(label,
    Diff(pre, post))] for the settings (only those with the given warmup
    fraction, if given)."""
    out = []
    for e in edges:
        if only_warmup is not None and e["warmup_fraction"] != only_warmup:
            continue
        out.append((edge_label(e["warmup_fraction"], e["clip"]), Diff(e["pre"], e["post"])))
    return out


def edge_verdict(edges, only_warmup=None):
    """Pre-LN's max stable lr above Post-LN's, by majority over the
    settings. Returns (verdict, numbers, details)."""
    comps = edge_comparisons(edges, only_warmup)
    verdict = majority([d.sign if d.enough else None for _, d in comps])
    higher = sum(d.sign > 0 for _, d in comps)
    lower = sum(d.sign < 0 for _, d in comps)
    n = sum(d.enough for _, d in comps)
    censored = sum(d.unresolved_bound for _, d in comps)
    where = "without warmup" if only_warmup == 0 else "over warmup × clipping"
    numbers = f"max stable lr {where}: " + (f"Pre-LN higher in {higher}, lower in {lower} of {n} settings"
                                            + (f" (not resolved, censored, in {censored})" if censored else "")
                                            if n else FEW if comps else "no setting with both placements")
    details = [f"Max stable lr, Pre-LN vs Post-LN, {label} (geometric mean ± sd in octaves): "
               f"{d.text(log2_text, octaves)}." for label, d in comps]
    return verdict, numbers, details


# ---------------------------------------------------------------- norm

def warmup_label(fraction):
    return f"warmup {fraction:.0%}" if fraction else "no warmup"


def plateau_verdict(plateau):
    """plateau: [{"norm", "warmup_fraction", "lr", "left": seeds that left
    the unigram plateau, "seeds"}]. Per lr: +1 when Post-LN without warmup
    fails and with the longest warmup trains while Pre-LN without warmup
    trains (Post-LN needs warmup, Pre-LN does not); −1 when Pre-LN without
    warmup fails where Pre-LN with the longest warmup or Post-LN without
    warmup trains (Pre-LN needs warmup too); 0 otherwise. Confirms when an
    lr gives +1 and none −1 (and the reverse). Returns (verdict, numbers,
    details)."""
    cell = {(p["norm"], p["warmup_fraction"], p["lr"]): p for p in plateau}
    lrs = sorted({p["lr"] for p in plateau})
    signs, details, parts = [], [], []
    for lr in lrs:
        ws = sorted({w for (n, w, x) in cell if x == lr})
        if len(ws) < 2 or 0 not in ws:
            continue
        long = ws[-1]

        def state(norm, w):
            p = cell.get((norm, w, lr))
            return seeds_state(p["left"], p["seeds"]) if p else "few seeds"

        def frac(norm, w):
            p = cell.get((norm, w, lr))
            return f"{p['left']}/{p['seeds']}" if p else "–"

        s = {k: state(*k) for k in (("post", 0), ("post", long), ("pre", 0), ("pre", long))}
        if "few seeds" in (s[("post", 0)], s[("pre", 0)]):
            signs.append(None)
            continue
        if s[("post", 0)] == "fails" and s[("post", long)] == "trains" and s[("pre", 0)] == "trains":
            sign, why = 1, "Post-LN needs the warmup there, Pre-LN does not"
        elif s[("pre", 0)] == "fails" and "trains" in (s[("pre", long)], s[("post", 0)]):
            sign, why = -1, ("Pre-LN needs warmup there" if s[("pre", long)] == "trains" else
                             "Post-LN trains without warmup there and Pre-LN does not")
        else:
            sign, why = 0, "no warmup dependence that separates the placements"
        signs.append(sign)
        parts.append(f"lr {fmt_lr(lr)}: Post-LN {frac('post', 0)} → {frac('post', long)}, "
                     f"Pre-LN {frac('pre', 0)} → {frac('pre', long)}")
        details.append(f"At lr {fmt_lr(lr)}, seeds that left the unigram plateau without warmup → with "
                       f"{warmup_label(long)}: Post-LN {frac('post', 0)} → {frac('post', long)}, Pre-LN "
                       f"{frac('pre', 0)} → {frac('pre', long)}: {why}.")
    pos, neg = signs.count(1), signs.count(-1)
    if not [s for s in signs if s is not None]:
        verdict = NOT_TESTED
    elif pos and not neg:
        verdict = CONFIRMED
    elif neg and not pos:
        verdict = CONTRADICTED
    else:
        verdict = NOT_OBSERVED
    numbers = "left the plateau (seeds), no warmup → longest warmup: " + (
        "; ".join(parts) if parts else FEW if signs else "no lr with both warmups")
    return verdict, numbers, details


def no_warmup_verdict(edges, plateau, why=None):
    """Claim 2: lr-edge without warmup (edge_verdict at warmup 0) and the
    norm preset's plateau (plateau_verdict), combined. why: {"edges",
    "plateau": why that input is empty}."""
    why = why or {}
    ve, ne, de = edge_verdict(edges, only_warmup=0) if edges else \
        (NOT_TESTED, why.get("edges", "lr-edge not run"), [])
    vp, np_, dp = plateau_verdict(plateau) if plateau else (NOT_TESTED, why.get("plateau", "norm not run"), [])
    verdict = combine([ve, vp])
    return Verdict("no-warmup", verdict, f"{ne} [{ve}]; {np_} [{vp}]", {"lr-edge": de, "norm": dp})


def warmup_benefit_verdict(finals):
    """no-warmup/2's third measure. finals: norm_finals' settings (norm,
    warmup_fraction, lr, values: final val loss per seed). Per lr, no warmup
    against the longest warmup: +1 when warmup resolvedly improves Post-LN's
    final loss and not Pre-LN's (Pre-LN does not need it, Post-LN does); −1
    when it resolvedly improves Pre-LN's (Pre-LN needs it too); 0 otherwise.
    Majority over the lrs. Returns (verdict, numbers, details)."""
    cell = {(f["norm"], f.get("warmup_fraction"), f.get("lr")): f["values"] for f in finals}
    signs, details, parts = [], [], []
    for lr in sorted({k[2] for k in cell if k[2] is not None}):
        ws = sorted({k[1] for k in cell if k[2] == lr and k[1] is not None})
        if len(ws) < 2 or ws[0] != 0:
            continue
        diffs = {n: Diff(cell[(n, 0, lr)], cell[(n, ws[-1], lr)]) for n in ("pre", "post")
                 if (n, 0, lr) in cell and (n, ws[-1], lr) in cell}
        if len(diffs) < 2 or not all(d.enough for d in diffs.values()):
            signs.append(None)
            continue
        pre_helped, post_helped = diffs["pre"].sign > 0, diffs["post"].sign > 0
        sign = -1 if pre_helped else 1 if post_helped else 0
        signs.append(sign)
        parts.append(f"lr {fmt_lr(lr)}: Pre-LN {'helped' if pre_helped else 'not helped'}, Post-LN "
                     f"{'helped' if post_helped else 'not helped'}")
        for n, name in (("pre", "Pre-LN"), ("post", "Post-LN")):
            details.append(f"Final validation loss, {name} at lr {fmt_lr(lr)}, no warmup vs {warmup_label(ws[-1])}: "
                           f"{diffs[n].text()}.")
    verdict = majority(signs)
    numbers = "does warmup lower the final loss (no warmup → longest): " + (
        "; ".join(parts) if parts else FEW if signs else "no lr with both warmups")
    return verdict, numbers, details


def no_warmup_verdict_v2(edges, plateau, finals, why=None):
    """no-warmup/2: the stability edge without warmup (edge_verdict at
    warmup 0), the plateau measure, and whether warmup improves Pre-LN's
    final loss (warmup_benefit_verdict), combined."""
    why = why or {}
    ve, ne, de = edge_verdict(edges, only_warmup=0) if edges else \
        (NOT_TESTED, why.get("edges", "lr-edge not run"), [])
    vp, np_, dp = plateau_verdict(plateau) if plateau else (NOT_TESTED, why.get("plateau", "norm not run"), [])
    vf, nf, df = warmup_benefit_verdict(finals) if finals else (NOT_TESTED, why.get("finals", "norm not run"), [])
    return Verdict("no-warmup", combine([ve, vp, vf]), f"{ne} [{ve}]; {np_} [{vp}]; {nf} [{vf}]",
                   {"lr-edge": de, "norm": dp + df})


def faster_val_verdict(times, why=None):
    """faster/2: as faster_verdict, on tokens until the validation loss
    reaches CONV_DEPTH below the unigram baseline (evidence.norm_val_times)."""
    v = faster_verdict(times, why)
    v.numbers = v.numbers.replace("the target", "the validation target")
    v.details = {k: [d.replace("Tokens to the target loss", "Tokens to the validation target") for d in ds]
                 for k, ds in v.details.items()}
    return v


def stable_gradients_verdict(profiles, edges, why=None):
    """Claim 1: grad-at-init profiles (gai_verdict) and lr-edge over every
    warmup × clipping setting (edge_verdict), combined."""
    why = why or {}
    vg, ng, dg = gai_verdict(profiles) if profiles else \
        (NOT_TESTED, why.get("profiles", "grad-at-init not run"), [])
    ve, ne, de = edge_verdict(edges) if edges else (NOT_TESTED, why.get("edges", "lr-edge not run"), [])
    return Verdict("stable-gradients", combine([vg, ve]), f"{ng} [{vg}]; {ne} [{ve}]", {"grad-at-init": dg,
                                                                                        "lr-edge": de})


def stable_gradients_slope_verdict(slopes, edges, why=None):
    """Claim 1 under rule stable-gradients/2: the grad-at-init measure by
    the slope test (gai_slope_verdict) instead of the last/first ratio,
    and lr-edge over every warmup × clipping setting (edge_verdict),
    combined."""
    why = why or {}
    vg, ng, dg = gai_slope_verdict(slopes) if slopes else \
        (NOT_TESTED, why.get("gai_slopes", why.get("profiles", "grad-at-init not run")), [])
    ve, ne, de = edge_verdict(edges) if edges else (NOT_TESTED, why.get("edges", "lr-edge not run"), [])
    return Verdict("stable-gradients", combine([vg, ve]), f"{ng} [{vg}]; {ne} [{ve}]", {"grad-at-init": dg,
                                                                                        "lr-edge": de})


def faster_verdict(times, why=None):
    """Claim 3. times: [{"setting": label, "pre": [tokens to the target
    loss per seed], "post": [...], "reached_pre": k, "reached_post": k}]; a
    seed that never reached the target is a Bound, '≥ its run's total
    tokens' (censored: decided only where the bound decides). Settings where neither placement reached it in any
    seed are left out. Pre-LN faster (fewer tokens) by majority."""
    comps, details = [], []
    for t in times:
        if not t.get("reached_pre") and not t.get("reached_post"):
            continue
        d = Diff(t["pre"], t["post"])
        comps.append((t["setting"], d))
        unreached = t.get("reached_pre", d.n_a) < d.n_a or t.get("reached_post", d.n_b) < d.n_b
        details.append(f"Tokens to the target loss, Pre-LN vs Post-LN, {t['setting']} (reached in "
                       f"{t.get('reached_pre', '?')}/{d.n_a} vs {t.get('reached_post', '?')}/{d.n_b} seeds"
                       + ("; a seed that never reached it is a bound, ≥ its run's total tokens" if unreached else "")
                       + f"): {d.text(fmt_tokens)}.")
    verdict = majority([d.sign if d.enough else None for _, d in comps], claimed=-1)
    faster = sum(d.sign < 0 for _, d in comps)
    slower = sum(d.sign > 0 for _, d in comps)
    n = sum(d.enough for _, d in comps)
    numbers = (f"Pre-LN reached the target with fewer tokens in {faster}, more in {slower} of {n} settings" if n else
               FEW if comps else (why or "no setting where either placement reached the target loss"))
    return Verdict("faster", verdict, numbers, details)


def best_setting(settings, norm):
    """The setting of a placement with the lowest mean over at least
    MIN_SEEDS seeds, or None."""
    ok = [s for s in settings if s["norm"] == norm and len(s["values"]) >= MIN_SEEDS]
    return min(ok, key=lambda s: statistics.mean(s["values"])) if ok else None


def better_final_verdict(settings, why=None):
    """Claim 4. settings: [{"norm", "setting": label, "values": [final val
    loss per seed; a diverged seed counts as ln V]}]. The best setting of
    each placement (lowest mean), compared: Pre-LN's lower → confirmed."""
    pre, post = best_setting(settings, "pre"), best_setting(settings, "post")
    if not pre or not post:
        return Verdict("better-final", NOT_TESTED, why or (FEW if settings else "norm not run"))
    d = Diff(pre["values"], post["values"])
    verdict = {-1: CONFIRMED, 1: CONTRADICTED, 0: NOT_OBSERVED}[d.sign]
    numbers = f"best Pre-LN ({pre['setting']}) vs best Post-LN ({post['setting']}): {d.text()}"
    detail = f"Final validation loss, best Pre-LN setting ({pre['setting']}) vs best Post-LN ({post['setting']}): " \
             f"{d.text()}."
    edges = [name for name, best in (("Pre-LN", pre), ("Post-LN", post)) if at_sweep_edge(settings, best)]
    if edges:
        note = f" {' and '.join(edges)}'s best lr is at the edge of its sweep: a better one may lie beyond it."
        numbers += ";" + note.rstrip(".")
        detail += note
    return Verdict("better-final", verdict, numbers, [detail])


def at_sweep_edge(settings, best):
    """Whether a best setting's lr is the lowest or highest its placement
    swept (at the same warmup), where the sweep has at least 3 lrs."""
    lrs = sorted({s.get("lr") for s in settings if s["norm"] == best["norm"]
                  and s.get("warmup_fraction") == best.get("warmup_fraction") and s.get("lr") is not None})
    return len(lrs) >= 3 and best.get("lr") in (lrs[0], lrs[-1])


# ---------------------------------------------------------------- init

GPT2_RIVALS = ("zero", "normal", "xavier", "he")


def gpt2_init_verdict(groups, why=None):
    """Claim 5. groups: [{"norm", "init": label (gpt2, zero, normal,
    xavier, he, xavier+scale, ...), "values": [final val loss per seed]}].
    Per placement, gpt2 against each of GPT2_RIVALS present: confirmed when
    it is resolved better than every rival in every placement,
    contradicted when a rival is resolved better in some placement,
    otherwise not observed."""
    cell = {(g["norm"], g["init"]): g["values"] for g in groups}
    norms = [n for n in ("pre", "post") if (n, "gpt2") in cell]
    wins, losses, ties, details, parts = 0, 0, 0, [], []
    for norm in norms:
        for rival in GPT2_RIVALS:
            if (norm, rival) not in cell:
                continue
            d = Diff(cell[(norm, "gpt2")], cell[(norm, rival)])
            if not d.enough:
                continue
            wins += d.sign < 0
            losses += d.sign > 0
            ties += d.sign == 0
            word = {-1: "better", 1: "worse", 0: "within seed noise"}[d.sign]
            parts.append(f"{norm}-LN vs {rival}: {word}")
            details.append(f"{norm}-LN, final validation loss, gpt2 vs {rival}: {d.text()}.")
    n = wins + losses + ties
    if not n:
        return Verdict("gpt2-init", NOT_TESTED, why or (FEW if groups else "init not run"))
    verdict = CONTRADICTED if losses else CONFIRMED if wins == n else NOT_OBSERVED
    return Verdict("gpt2-init", verdict, f"gpt2 better in {wins}, worse in {losses}, within noise in {ties} of {n} "
                                         f"comparisons ({'; '.join(parts)})", details)


# ---------------------------------------------------------------- depth

def scale_depth_verdict(deltas, why=None):
    """Claim 6. deltas: [{"norm", "depth", "deltas": [final val loss
    without the residual scale − with it, per seed (paired by seed)]}]. Per
    placement: Δ at the deepest depth against Δ at the shallowest;
    confirmed when the deep one is resolved larger and its mean is positive
    (the scale helps, and helps more), contradicted when it is resolved
    smaller; the placements are settings: combined by the majority rule
    (combine_settings)."""
    by_norm = {}
    for x in deltas:
        by_norm.setdefault(x["norm"], {})[x["depth"]] = x["deltas"]
    vs, parts, details = [], [], []
    for norm in ("pre", "post"):
        if norm not in by_norm or len(by_norm[norm]) < 2:
            continue
        ds = sorted(by_norm[norm])
        lo, hi = ds[0], ds[-1]
        d = Diff(by_norm[norm][hi], by_norm[norm][lo])
        if not d.enough:
            v = NOT_TESTED
        elif d.sign > 0 and d.mean_a > 0:
            v = CONFIRMED
        elif d.sign < 0:
            v = CONTRADICTED
        else:
            v = NOT_OBSERVED
        vs.append(v)
        text = d.text(lambda x: f"{x:+.3f}", lambda x: f"{x:.3f}")
        parts.append(f"{norm}-LN Δ(off − on) at {hi} vs {lo} layers: {text} [{v}]")
        per = ", ".join(f"{dd}L {_msd(by_norm[norm][dd])}" for dd in ds)
        details.append(f"{norm}-LN, final validation loss without the residual scale minus with it (per seed, "
                       f"mean ± sd): {per}; {hi} vs {lo} layers: {text} → {v}.")
    verdict = combine_settings(vs)
    return Verdict("scale-depth", verdict, "; ".join(parts) or why or
                   ("fewer than two depths" if deltas else "depth not run"), details)


def depth_slope(points):
    """The least-squares slope of Δ against log2(depth) over [(depth, Δ)]:
    the change of Δ per doubling of depth. None for fewer than two depths."""
    if len({d for d, _ in points}) < 2:
        return None
    xs, ys = [math.log2(d) for d, _ in points], [y for _, y in points]
    xm, ym = statistics.mean(xs), statistics.mean(ys)
    return sum((x - xm) * (y - ym) for x, y in zip(xs, ys)) / sum((x - xm) ** 2 for x in xs)


def seed_series(rows):
    """{seed index: [(depth, Δ)]} over one placement's depth rows, keeping
    only seeds measured at every depth (so each seed's slope spans the same
    depths)."""
    by_seed = {}
    for x in rows:
        for seed, d in zip(x.get("seeds") or [], x["deltas"]):
            if d is not None and math.isfinite(d):
                by_seed.setdefault(seed, []).append((x["depth"], d))
    return {s: pts for s, pts in by_seed.items() if len(pts) == len(rows)}


def scale_depth_trend_verdict(deltas, why=None):
    """Claim 6 under rule scale-depth/2: a trend test over every depth, not
    only the deepest against the shallowest. Per placement and seed, the
    least-squares slope of Δ (final val loss without the residual scale −
    with it, paired by seed) against log2(depth); the per-seed slopes get a
    CI_LEVEL Student-t interval (SlopeCI, at least MIN_SEEDS seeds).
    Confirmed when the interval lies above 0 and Δ's mean at the deepest
    depth is positive (the scale helps, and more so with depth),
    contradicted when it lies below 0, else not observed; placements are
    settings (combine_settings)."""
    vs, parts, details = [], [], []
    for norm in ("pre", "post"):
        rows = sorted((x for x in deltas if x["norm"] == norm), key=lambda x: x["depth"])
        if len(rows) < 2:
            continue
        ci = SlopeCI([depth_slope(pts) for pts in seed_series(rows).values()])
        deep = [d for d in rows[-1]["deltas"] if d is not None and math.isfinite(d)]
        if not ci.enough:
            v = NOT_TESTED
        elif ci.pattern == GROWS_WORD and deep and statistics.mean(deep) > 0:
            v = CONFIRMED
        elif ci.pattern == SHRINKS_WORD:
            v = CONTRADICTED
        else:
            v = NOT_OBSERVED
        vs.append(v)
        span = f"{rows[0]['depth']}–{rows[-1]['depth']} layers"
        parts.append(f"{norm}-LN slope of Δ(off − on) per doubling of depth, {span}: {ci.text()} "
                     f"({CI_LEVEL:.0%} CI, {plural(ci.n, 'seed')}) [{v}]")
        per = ", ".join(f"{x['depth']}L {_msd(x['deltas'])}" for x in rows)
        details.append(f"{norm}-LN, final validation loss without the residual scale minus with it (per seed, "
                       f"mean ± sd): {per}; least-squares slope over log2(depth) per seed, mean ± {CI_LEVEL:.0%} CI "
                       f"half-width: {ci.text()} over {plural(ci.n, 'seed')} measured at every depth → {v}.")
    return Verdict("scale-depth", combine_settings(vs), "; ".join(parts) or why or
                   ("fewer than two depths" if deltas else "depth not run"), details)


def _msd(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if not xs:
        return "–"
    if len(xs) == 1:
        return f"{xs[0]:+.3f} (1 seed)"
    return f"{statistics.mean(xs):+.3f} ± {statistics.stdev(xs):.3f}"


# ---------------------------------------------------------------- translation

MT_MEASURES = (("bleu", "BLEU"), ("chrf", "chrF"))
NO_GAP = "no gap"


def score(x):
    return f"{x:.2f}"


def mt_index(cells):
    """{(arm, init, norm, warmup fraction): cell} of evidence.mt_inputs()."""
    return {(c["arm"], c["init"], c["norm"], c["warmup_fraction"]): c for c in cells}


def mt_settings(cell, arm):
    """(inits, warmup fractions) of an arm's settings, sorted."""
    keys = [k for k in cell if k[0] == arm]
    return sorted({k[1] for k in keys}, key=str), sorted({k[3] for k in keys if k[3] is not None})


def mt_diffs(cell, a, b, measures=MT_MEASURES):
    """{measure label: Diff of two settings' per-seed scores}, or None when
    a setting is missing."""
    if a not in cell or b not in cell:
        return None
    return {label: Diff(cell[a][m], cell[b][m]) for m, label in measures}


def mt_text(diffs):
    return ", ".join(f"{label} {d.text(score)}" for label, d in diffs.items())


def mt_decide(signs, name, up, down, what):
    """Per measure, the majority of its settings' signs (+1, −1, 0; None:
    too few seeds; NO_GAP: nothing to compare, see mt_gap_sign), the
    measures (BLEU, chrF) combined by combine(): both must agree. Returns
    (verdict, numbers)."""
    vs, parts = [], []
    for label, ss in signs.items():
        ints = [x for x in ss if isinstance(x, int)]
        n = len(ints)
        if n:
            v, text = majority(ints), f"{up} in {ints.count(1)}, {down} in {ints.count(-1)} of {n} {what}"
        elif NO_GAP in ss:
            v, text = NOT_OBSERVED, "no resolved placement gap"
        else:
            v, text = NOT_TESTED, FEW
        vs.append(v)
        parts.append(f"{label} {text} [{v}]")
    return combine(vs), f"{name}: " + "; ".join(parts)


def mt_no_warmup_verdict(cells, why=None, measures=MT_MEASURES):
    """Claim 7. From scratch without warmup, per init: Pre-LN's test scores
    against Post-LN's (higher is better). Per measure (BLEU, chrF) the
    majority of the inits decides; the measures combined by combine()."""
    cell = mt_index(cells)
    inits, warmups = mt_settings(cell, "scratch")
    if 0.0 not in warmups:
        return Verdict("mt-no-warmup", NOT_TESTED, why or "no translation run from scratch without warmup")
    signs, details = {label: [] for _, label in measures}, []
    for init in inits:
        ds = mt_diffs(cell, ("scratch", init, "pre", 0.0), ("scratch", init, "post", 0.0), measures)
        if ds is None:
            continue
        for label, d in ds.items():
            signs[label].append(d.sign if d.enough else None)
        details.append(f"From scratch without warmup, init {init}, test Pre-LN vs Post-LN: {mt_text(ds)}.")
    verdict, numbers = mt_decide(signs, "from scratch, no warmup", "Pre-LN higher", "lower", "inits")
    return Verdict("mt-no-warmup", verdict, numbers, details)


def mt_warmup_sign(post, pre):
    """One init's warmup effect (Diffs: with warmup − without): −1 when
    warmup resolved raises Pre-LN's score (Pre-LN needs it too), +1 when it
    raises Post-LN's and not Pre-LN's, 0 otherwise, None with too few
    seeds."""
    if not post.enough or not pre.enough:
        return None
    if pre.sign > 0:
        return -1
    return 1 if post.sign > 0 else 0


WARMUP_WORDS = {1: "warmup helps Post-LN and not Pre-LN", -1: "Pre-LN needs warmup too",
                0: "no warmup dependence that separates the placements", None: FEW}


def mt_warmup_verdict(cells, why=None, measures=MT_MEASURES):
    """Claim 8. From scratch, per init: the longest warmup against none for
    each placement (mt_warmup_sign). Per measure the majority of the inits
    decides; the measures combined by combine()."""
    cell = mt_index(cells)
    inits, warmups = mt_settings(cell, "scratch")
    if len(warmups) < 2 or 0.0 not in warmups:
        return Verdict("mt-warmup", NOT_TESTED, why or "no translation runs from scratch with and without warmup")
    long = warmups[-1]
    signs, details = {label: [] for _, label in measures}, []
    for init in inits:
        d = {n: mt_diffs(cell, ("scratch", init, n, long), ("scratch", init, n, 0.0), measures)
             for n in ("post", "pre")}
        if None in d.values():
            continue
        words = []
        for _, label in measures:
            sign = mt_warmup_sign(d["post"][label], d["pre"][label])
            signs[label].append(sign)
            words.append(f"{label}: {WARMUP_WORDS[sign]}")
        details.append(f"From scratch, init {init}, test scores with {warmup_label(long)} vs without: Post-LN "
                       f"{mt_text(d['post'])}; Pre-LN {mt_text(d['pre'])} ({'; '.join(words)}).")
    verdict, numbers = mt_decide(signs, f"from scratch, {warmup_label(long)} vs none", "the pattern",
                                 "Pre-LN needing it", "inits")
    return Verdict("mt-warmup", verdict, numbers, details)


def mt_gaps(cell, arm, init, wf, measure):
    """Per seed index: Pre-LN's score − Post-LN's (seeds paired by index)."""
    pre, post = cell[(arm, init, "pre", wf)], cell[(arm, init, "post", wf)]
    b = {i: x for i, x in zip(post["seeds"], post[measure]) if x is not None}
    return [x - b[i] for i, x in zip(pre["seeds"], pre[measure]) if x is not None and i in b]


def mt_gap_sign(scratch, tuned, gap):
    """One warmup setting and measure: +1 when |Pre − Post| per seed is
    resolved larger from scratch than after pre-training (pre-training
    narrows the gap), −1 when resolved larger after it, 0 when within seed
    noise; NO_GAP when neither arm has a resolved Pre-LN vs Post-LN
    difference (nothing to narrow); None with too few seeds."""
    if not gap.enough:
        return None
    if not scratch.resolved and not tuned.resolved:
        return NO_GAP
    return gap.sign


GAP_WORDS = {1: "the placement matters more from scratch", -1: "the placement matters more after pre-training",
             0: "the two gaps are within seed noise of each other", NO_GAP: "no placement gap in either",
             None: FEW}


def mt_pretrain_gap_verdict(cells, why=None, measures=MT_MEASURES):
    """Claim 9. Per warmup setting the fine-tunings share with the runs
    from scratch (init gpt2, the init the pre-training used): the placement
    gap |Pre − Post| per seed from scratch against after pre-training
    (mt_gap_sign). Per measure the majority of the settings with a gap
    decides (settings compared but none with a gap: not observed); the
    measures combined by combine()."""
    cell = mt_index(cells)
    inits, warmups = mt_settings(cell, "scratch")
    _, tuned = mt_settings(cell, "finetune")
    init = "gpt2" if "gpt2" in inits else (inits[0] if inits else None)
    signs, details = {label: [] for _, label in measures}, []
    for wf in [w for w in warmups if w in tuned]:
        ks = [(arm, i, n, wf) for arm, i in (("scratch", init), ("finetune", "pretrained")) for n in ("pre", "post")]
        if not all(k in cell for k in ks):
            continue
        ds, df = mt_diffs(cell, ks[0], ks[1], measures), mt_diffs(cell, ks[2], ks[3], measures)
        parts = []
        for m, label in measures:
            gap = Diff([abs(x) for x in mt_gaps(cell, "scratch", init, wf, m)],
                       [abs(x) for x in mt_gaps(cell, "finetune", "pretrained", wf, m)])
            sign = mt_gap_sign(ds[label], df[label], gap)
            signs[label].append(sign)
            parts.append(f"{label} {gap.text(score)}: {GAP_WORDS[sign]}")
        details.append(f"{warmup_label(wf).capitalize()}, test Pre-LN vs Post-LN from scratch (init {init}): "
                       f"{mt_text(ds)}; after pre-training: {mt_text(df)}. The gap |Pre − Post| per seed (paired by "
                       f"seed), from scratch vs after pre-training: {'; '.join(parts)}.")
    if not details:
        return Verdict("mt-pretrain-gap", NOT_TESTED, why or "no translation runs both from scratch and fine-tuned")
    verdict, numbers = mt_decide(signs, "|Pre − Post| from scratch vs after pre-training", "narrower after",
                                 "wider", "warmup settings with a placement gap")
    return Verdict("mt-pretrain-gap", verdict, numbers, details)


MT_PRIMARY = (("neg_val_loss", "−val loss"),)


def merge_details(a, b):
    """Two verdicts' details (lists, or {section: list}) as one."""
    if isinstance(a, dict) or isinstance(b, dict):
        a, b = a or {}, b or {}
        return {k: list(a.get(k) or []) + list(b.get(k) or []) for k in {**a, **b}}
    return list(a or []) + list(b or [])


def mt_primary(f, key):
    """Rule version 2 of a translation claim: decided by the target side's
    validation loss (negated, so that higher is better like the scores;
    unlike BLEU it separates settings whose translations are all near 0),
    with BLEU's and chrF's verdicts of version 1 shown beside it."""
    def verdict(cells, why=None):
        v, beside = f(cells, why, MT_PRIMARY), f(cells, why, MT_MEASURES)
        if v.verdict == NOT_TESTED and beside.verdict == NOT_TESTED:
            return v
        numbers = f"{v.numbers}; beside it, not deciding: {beside.verdict} by {beside.numbers}"
        return Verdict(key, v.verdict, numbers, merge_details(v.details, beside.details))
    return verdict


mt_no_warmup_verdict_v2 = mt_primary(mt_no_warmup_verdict, "mt-no-warmup")
mt_warmup_verdict_v2 = mt_primary(mt_warmup_verdict, "mt-warmup")
mt_pretrain_gap_verdict_v2 = mt_primary(mt_pretrain_gap_verdict, "mt-pretrain-gap")


# ---------------------------------------------------------------- atlas

def atlas_cells(atlas):
    """{(variant, depth): cell} of evidence.atlas_inputs()' cells, and the depths in order."""
    cells = {(c["variant"], c["depth"]): c for c in atlas.get("cells", [])}
    return cells, sorted({d for _, d in cells})


BOTH_TRAIN = "both train"


def deepnorm_sign(post, deep):
    """One depth: +1 when DeepNorm trains (every seed) where plain Post-LN
    does not (none or only some of its seeds leave the plateau), −1 when
    Post-LN trains where DeepNorm fails, 0 when neither trains, BOTH_TRAIN
    (the depth does not test the claim), None with too few seeds."""
    p, d = seeds_state(post["left"], post["seeds"]), seeds_state(deep["left"], deep["seeds"])
    if "few seeds" in (p, d):
        return None
    if p == "trains" and d == "trains":
        return BOTH_TRAIN
    if d == "trains":
        return 1
    return -1 if p == "trains" and d == "fails" else 0


def deepnorm_verdict(atlas, why=None):
    """Claim 10. Per depth of the sweep, who leaves the unigram plateau
    (deepnorm_sign; the majority of the depths where Post-LN does not train
    decides), and the stability edge at one depth (DeepNorm's resolved
    above Post-LN's: it trains at rates where Post-LN does not); the two
    measures combined by combine()."""
    cells, depths = atlas_cells(atlas)
    details, signs = [], []
    for d in depths:
        post, deep = cells.get(("post-ln", d)), cells.get(("deepnorm", d))
        if post and deep:
            signs.append(deepnorm_sign(post, deep))
            details.append(f"{d} layers: Post-LN left the plateau in {post['left']}/{post['seeds']} seeds, "
                           f"DeepNorm in {deep['left']}/{deep['seeds']}.")
    if not details:
        return Verdict("deepnorm", NOT_TESTED, why or "no atlas runs of Post-LN and DeepNorm")
    tested = [x for x in signs if x is not None and x != BOTH_TRAIN]
    # Post-LN trained at every depth: nothing for DeepNorm to fix here.
    by_depth = majority(tested) if tested else NOT_OBSERVED if BOTH_TRAIN in signs else NOT_TESTED
    edges = atlas.get("edges", {})
    e = Diff(edges.get("deepnorm", []), edges.get("post-ln", []))
    by_edge = NOT_TESTED if not e.enough else (CONFIRMED if e.sign > 0 else CONTRADICTED if e.sign < 0
                                               else NOT_OBSERVED)
    details.append(f"Max stable lr (log2), DeepNorm vs Post-LN: {e.text(log2_text, octaves)}.")
    verdict = combine([by_depth, by_edge])
    numbers = (f"depth sweep: {by_depth} (DeepNorm trains where Post-LN does not at {sum(x == 1 for x in tested)}, "
               f"Post-LN where DeepNorm does not at {sum(x == -1 for x in tested)} of {len(signs)} depths); "
               f"edge: {by_edge}")
    return Verdict("deepnorm", verdict, numbers, details)


def rezero_verdict(atlas, why=None):
    """Claim 11. Per depth, tokens to the train target (a seed that never
    reaches it is a Bound, ≥ its total tokens): ReZero against Pre-LN and
    against Post-LN; the majority of the (depth, rival) comparisons decides
    (fewer tokens: faster)."""
    cells, depths = atlas_cells(atlas)
    details, signs, by_rival = [], [], {"Pre-LN": [], "Post-LN": []}
    for d in depths:
        rz = cells.get(("rezero", d))
        for rival, name in (("pre-ln", "Pre-LN"), ("post-ln", "Post-LN")):
            other = cells.get((rival, d))
            if rz and other and rz["tokens"] and other["tokens"]:
                diff = Diff(rz["tokens"], other["tokens"])
                signs.append(diff.sign if diff.enough else None)
                by_rival[name].append(signs[-1])
                details.append(f"{d} layers, tokens to loss ≤ {rz['target']:.2f}, ReZero vs {name}: "
                               f"{diff.text(fmt_tokens)}.")
    if not details:
        return Verdict("rezero-faster", NOT_TESTED, why or "no atlas runs of ReZero with a train target")
    verdict = majority(signs, claimed=-1)
    tested = [x for x in signs if x is not None]
    # The majority over (depth, rival) hides a split by rival: shown as such.
    split = "; ".join(f"vs {name}: faster at {sum(x == -1 for x in xs)}, slower at {sum(x == 1 for x in xs)} of "
                      f"{sum(x is not None for x in xs)} depths" for name, xs in by_rival.items() if xs)
    return Verdict("rezero-faster", verdict, f"faster in {sum(x == -1 for x in tested)}, slower in "
                   f"{sum(x == 1 for x in tested)} of {len(tested)} (depth, rival) comparisons ({split})", details)


def sandwich_end_verdict(atlas, why=None):
    """Claim 12, rule sandwich-growth/1 (the rule before the full run): per
    depth, the residual stream's growth through the blocks at the end of
    training (RMS after the last block / after the first): Sandwich's
    resolved below Pre-LN's bounds it; the majority of the depths decides.
    Kept so that a study registered under it is still judged by it."""
    cells, depths = atlas_cells(atlas)
    details, signs = [], []
    for d in depths:
        sw, pre = cells.get(("sandwich", d)), cells.get(("pre-ln", d))
        if sw and pre:
            end = Diff(sw["growth"], pre["growth"])
            signs.append(end.sign if end.enough else None)
            details.append(f"{d} layers, residual RMS after the last / the first block at the end of training, "
                           f"Sandwich vs Pre-LN: {end.text(fmt_ratio)}.")
    if not details:
        v = Verdict("sandwich-growth", NOT_TESTED, why or "no atlas runs of Sandwich and Pre-LN")
    else:
        tested = [x for x in signs if x is not None]
        v = Verdict("sandwich-growth", majority(signs, claimed=-1),
                    f"lower growth at {sum(x == -1 for x in tested)}, higher at {sum(x == 1 for x in tested)} of "
                    f"{len(tested)} depths (end of training)", {"atlas": []})
    return v


def sandwich_verdict(atlas, why=None):
    """Claim 12, rule sandwich-growth/2 (chosen after the full run; a
    study registered under /1 is reported under both). Per depth, how much the residual stream's growth through
    the blocks (RMS after the last block / after the first) grew during
    training, end over init of the same run: Sandwich's resolved below
    Pre-LN's bounds it; the majority of the depths decides. The growth at
    init and at the end are shown, not judged: Sandwich's output norms make
    every branch add a unit-RMS vector, so its stream starts out growing
    more through the blocks, and the end alone would judge that start."""
    cells, depths = atlas_cells(atlas)
    details, signs = [], []
    for d in depths:
        sw, pre = cells.get(("sandwich", d)), cells.get(("pre-ln", d))
        if sw and pre:
            train = Diff(sw["growth_train"], pre["growth_train"])
            end, init = Diff(sw["growth"], pre["growth"]), Diff(sw["growth_init"], pre["growth_init"])
            signs.append(train.sign if train.enough else None)
            details.append(f"{d} layers, residual RMS after the last / the first block, Sandwich vs Pre-LN: grew "
                           f"during training (end / init) {train.text(fmt_ratio)}; at init {init.text(fmt_ratio)}; "
                           f"at the end {end.text(fmt_ratio)}.")
    if not details:
        return Verdict("sandwich-growth", NOT_TESTED, why or "no atlas runs of Sandwich and Pre-LN")
    tested = [x for x in signs if x is not None]
    return Verdict("sandwich-growth", majority(signs, claimed=-1),
                   f"less growth during training at {sum(x == -1 for x in tested)}, more at "
                   f"{sum(x == 1 for x in tested)} of {len(tested)} depths", details)


def rmsnorm_verdict(atlas, why=None):
    """Claim 13. Per depth, Pre-LN with RMSNorm against LayerNorm: it
    matches when its final loss is not resolved higher (majority of the
    depths), and costs less when its median step time is resolved lower
    (majority). The claim is a conjunction: confirmed when both hold,
    contradicted when either is resolved the other way, not tested when
    either could not be measured, mixed when one holds and the other is
    not observed. Step times are the study's own: runs side by
    side (--jobs) share the machine, so bench/norm_cost.sh is the cleaner
    measure of cost."""
    cells, depths = atlas_cells(atlas)
    details, loss, cost = [], [], []
    for d in depths:
        rms, ln = cells.get(("pre-rms", d)), cells.get(("pre-ln", d))
        if rms and ln:
            fl, ms = Diff(rms["final"], ln["final"]), Diff(ln["ms"], rms["ms"])
            loss.append((-1 if fl.sign > 0 else 1) if fl.enough else None)
            cost.append(ms.sign if ms.enough else None)
            details.append(f"{d} layers, RMSNorm vs LayerNorm: final val loss {fl.text()}; median step ms, "
                           f"LayerNorm vs RMSNorm, {Diff(ln['ms'], rms['ms']).text(lambda x: f'{x:.2f}')}.")
    if not details:
        return Verdict("rmsnorm-cost", NOT_TESTED, why or "no atlas runs of Pre-LN with RMSNorm and LayerNorm")
    vl, vc = majority(loss), majority(cost)
    if CONTRADICTED in (vl, vc):
        verdict = CONTRADICTED
    elif NOT_TESTED in (vl, vc):
        verdict = NOT_TESTED
    else:
        verdict = CONFIRMED if vl == vc == CONFIRMED else NOT_OBSERVED if vl == vc else MIXED
    return Verdict("rmsnorm-cost", verdict, f"matches LayerNorm's loss: {vl}; cheaper step: {vc} (the study's "
                   "own step times; bench/norm_cost.sh times them side by side)", details)


def rmsnorm_verdict_v2(atlas, why=None):
    """Claim 13 under rule rmsnorm-cost/2: the loss half as rmsnorm-cost/1;
    the cost half is not decided by the study. Its step times come from
    runs that trained at different times on a machine that other work may
    share (v3's Pre-RMSNorm sweep ran beside a test suite: 2-8x the step
    time of LayerNorm runs made before it), so they measure the load as
    much as the model; they are shown, not deciding. Only a side-by-side
    timing (bench/norm_cost.sh) can say "cheaper". So: contradicted when
    RMSNorm's loss is resolved higher at most depths, else not tested,
    with the loss half's own verdict beside it."""
    cells, depths = atlas_cells(atlas)
    details, loss = [], []
    for d in depths:
        rms, ln = cells.get(("pre-rms", d)), cells.get(("pre-ln", d))
        if rms and ln:
            fl = Diff(rms["final"], ln["final"])
            loss.append((-1 if fl.sign > 0 else 1) if fl.enough else None)
            details.append(f"{d} layers, RMSNorm vs LayerNorm: final val loss {fl.text()}; median step ms "
                           f"(shown, not deciding), LayerNorm vs RMSNorm, "
                           f"{Diff(ln['ms'], rms['ms']).text(lambda x: f'{x:.2f}')}.")
    if not details:
        return Verdict("rmsnorm-cost", NOT_TESTED, why or "no atlas runs of Pre-LN with RMSNorm and LayerNorm")
    vl = majority(loss)
    verdict = CONTRADICTED if vl == CONTRADICTED else NOT_TESTED
    return Verdict("rmsnorm-cost", verdict, f"matches LayerNorm's loss: {vl}; cheaper step: not measured by the "
                   "study (its step times come from runs at different times on a shared machine; "
                   "bench/norm_cost.sh times the two side by side)", details)


# ---------------------------------------------------------------- fluency

PASSES, FAILS, NOT_CHECKABLE = "passes", "fails", "not checkable"
# The judge's calibration in study.json ("judge"), in the order it must rank them.
CALIBRATION = (("val_text_nll", "real val text"), ("unigram_sampler_nll", "the unigram sampler"),
               ("shuffled_val_nll", "shuffled val text"))


def nll_text(x):
    return f"{x:.3f}"


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def calibration_check(calibration):
    """(state, sentence): the judge's NLL of real val text below that of
    the unigram sampler (what a model on the plateau emits) below that of
    the same val text shuffled."""
    cal = calibration if isinstance(calibration, dict) else {}
    vals = [cal.get(k) for k, _ in CALIBRATION]
    if not all(finite(x) for x in vals):
        return NOT_CHECKABLE, "Calibration: not checkable (study.json has no judge calibration on val text)."
    shown = ", ".join(f"{name} {nll_text(x)}" for (_, name), x in zip(CALIBRATION, vals))
    if vals[0] < vals[1] < vals[2]:
        return PASSES, (f"Calibration passes: the judge ranks real val text above the unigram sampler above shuffled "
                        f"val text (NLL {shown} nats/token).")
    ranked = " < ".join(name for (_, name), _ in sorted(zip(CALIBRATION, vals), key=lambda p: p[1]))
    return FAILS, (f"Calibration fails: the judge should rank real val text < the unigram sampler < shuffled val "
                   f"text by NLL, it ranks {ranked} ({shown} nats/token).")


def plateau_check(runs):
    """(state, sentence): runs [{"nll": a run's mean judge NLL, "left": it
    left the unigram plateau}]; the mean NLL of those that left it below
    that of those that did not; not checkable unless the study has both."""
    runs = [r for r in runs or [] if finite(r.get("nll")) and r.get("left") is not None]
    left = [r["nll"] for r in runs if r["left"]]
    stuck = [r["nll"] for r in runs if not r["left"]]
    if not left or not stuck:
        why = ("no judged run" if not runs else "every judged run left the unigram plateau" if left else
               "no judged run left the unigram plateau")
        return NOT_CHECKABLE, f"Runs: not checkable ({why}; the check needs runs on and off the plateau)."
    a, b = statistics.mean(left), statistics.mean(stuck)
    if a < b:
        return PASSES, (f"Runs pass: mean judge NLL {nll_text(a)} over the {len(left)} runs that left the unigram "
                        f"plateau, below {nll_text(b)} over the {len(stuck)} that did not.")
    return FAILS, (f"Runs fail: mean judge NLL {nll_text(a)} over the {len(left)} runs that left the unigram plateau, "
                   f"not below {nll_text(b)} over the {len(stuck)} that did not (the judge should rank runs that left "
                   "the plateau above the rest).")


def fluency_sanity(calibration, runs):
    """Does the fluency judge rank what it should? Returns (state,
    [(state, sentence) of calibration_check, of plateau_check]): FAILS when
    either check fails, PASSES when none fails and at least one passes,
    NOT_CHECKABLE otherwise."""
    checks = [calibration_check(calibration), plateau_check(runs)]
    states = [s for s, _ in checks]
    return (FAILS if FAILS in states else PASSES if PASSES in states else NOT_CHECKABLE), checks


def fluency_part(cells, a_name, what, why_empty):
    """One measure of the fluency claim over matched cells [{"setting": the
    comparison in words, "a": [judge NLL per seed of the side claimed more
    fluent, a_name], "b": [...], "left_a", "seeds_a", "left_b", "seeds_b":
    seeds that left the unigram plateau, seeds}]: lower NLL is more fluent; each cell by the seed-noise
    rule; a cell where no seed of either side left the plateau is left out
    (two plateau models say nothing about fluency); the cells combined by
    combine_settings(). Returns (verdict, numbers, details)."""
    if not cells:
        return NOT_TESTED, why_empty, []
    verdicts, details, out = [], [], []
    for c in cells:
        if not c["left_a"] and not c["left_b"]:
            out.append(c["setting"])
            continue
        d = Diff(c["a"], c["b"])
        verdicts.append({-1: CONFIRMED, 1: CONTRADICTED, 0: NOT_OBSERVED}[d.sign] if d.enough else NOT_TESTED)
        details.append(f"Judge NLL (nats/token), {c['setting']} (seeds that left the unigram "
                       f"plateau: {c['left_a']}/{c['seeds_a']} vs {c['left_b']}/{c['seeds_b']}): {d.text(nll_text)}.")
    left_out = (f" ({len(out)} of {len(cells)} {what}s left out: neither side left the unigram plateau)"
                if out else "")
    if out:
        details.append(f"Left out of the fluency comparisons, because no seed of either side left the unigram "
                       f"plateau (two plateau models say nothing about fluency): {'; '.join(out)}.")
    n = sum(v != NOT_TESTED for v in verdicts)
    if n:
        numbers = (f"{a_name} lower in {verdicts.count(CONFIRMED)}, higher in {verdicts.count(CONTRADICTED)} of {n} "
                   f"{what}s" + left_out)
    elif verdicts:
        numbers = FEW + left_out
    else:
        numbers = f"every {what} left out ({len(out)}): neither side left the unigram plateau"
    return combine_settings(verdicts), numbers, details


def fluency_verdict(fluency, why=None):
    """Claim 14, rule fluency/1. fluency: {"calibration": study.json's
    "judge"; "runs": [{"nll", "left"}], every judged run (the sanity
    check); "norm": [{"setting", "pre": [judge NLL per seed], "post",
    "left_pre", "seeds_pre", "left_post", "seeds_post"}], matched (same
    warmup and lr); "init": [{"norm", "rival", "gpt2": [...], "other",
    "left_gpt2", "seeds_gpt2", "left_other", "seeds_other"}]; "why": {"norm",
    "init", "runs": why that list is empty}; "unregistered": the study registered
    rules, not this one}. Each run is measured by its mean judge NLL (lower:
    more like the corpus). Measures: Pre-LN vs Post-LN (norm) and GPT-2 init
    vs each other scheme (init), each by fluency_part(), combined by
    combine(). Not tested when no run has fluency records, or when the
    judge's sanity check (fluency_sanity) fails."""
    fluency = fluency or {}
    tail = ("; rule fluency/1 was declared after this study was created (it is not among the rules the study "
            "registered)" if fluency.get("unregistered") else "")
    whys = fluency.get("why") or {}
    if not fluency.get("runs"):
        return Verdict("fluency", NOT_TESTED, (why or whys.get("runs") or "no run has fluency records (a study "
                                               "written before the fluency judge)") + tail, {"fluency": []})
    state, checks = fluency_sanity(fluency.get("calibration"), fluency["runs"])
    sanity = [x for _, x in checks]
    if state == FAILS:
        failed = " ".join(x for s, x in checks if s == FAILS)
        return Verdict("fluency", NOT_TESTED, f"the judge's sanity check fails: {failed}{tail}", {"fluency": sanity})
    norm = [{"setting": f"Pre-LN vs Post-LN, {c['setting']}", "a": c["pre"], "b": c["post"], "left_a": c["left_pre"],
             "seeds_a": c["seeds_pre"], "left_b": c["left_post"], "seeds_b": c["seeds_post"]}
            for c in fluency.get("norm") or []]
    init = [{"setting": (f"{c['norm']}-LN, " if c.get("norm") else "") + f"init gpt2 vs {c['rival']}",
             "a": c["gpt2"], "b": c["other"], "left_a": c["left_gpt2"], "seeds_a": c["seeds_gpt2"],
             "left_b": c["left_other"], "seeds_b": c["seeds_other"]} for c in fluency.get("init") or []]
    vn, nn, dn = fluency_part(norm, "Pre-LN", "setting", whys.get("norm") or "no norm setting with both placements")
    vi, ni, di = fluency_part(init, "GPT-2 init", "comparison",
                              whys.get("init") or "no init run of gpt2 and another plain scheme")
    check = f"judge sanity check {state} (calibration: {checks[0][0]}; runs off vs on the plateau: {checks[1][0]})"
    numbers = (f"mean judge NLL per run, Pre-LN vs Post-LN at equal warmup and lr: {nn} [{vn}]; GPT-2 init vs "
               f"each other scheme: {ni} [{vi}]; {check}" + tail)
    return Verdict("fluency", combine([vn, vi]), numbers, {"fluency": sanity + dn + di})


# ---------------------------------------------------------------- registered rules

# Every seed-noise and threshold parameter a rule uses.
PARAMS = {"NOISE": NOISE, "MIN_SEEDS": MIN_SEEDS, "GROWS": GROWS}
SETTINGS_RULE = "settings: majority of the comparable settings (more than half resolved one way)"
MEASURES_RULE = "measures: combine (confirmed only when every computable measure confirms; otherwise mixed)"


def _rule(key, version, function, measures, rule, params=None):
    """params: the rule's own parameters where they are not PARAMS."""
    return {"id": f"{key}/{version}", "claim": CLAIM_TEXT[key], "function": function, "measures": list(measures),
            "rule": rule, "params": dict(PARAMS if params is None else params)}


# Each claim's rule as plain data, versioned: what gpt2lab records in
# study.json ("rules") before the runs. A rule is changed by adding a new
# version here (and keeping the old one's function in RULE_FUNCTIONS), never
# by editing a registered one.
RULE_VERSIONS = [
    _rule("stable-gradients", 1, "stable_gradients_verdict",
          ("grad-at-init: Xiong pattern per (depth, init), per embedding scale", "lr-edge: max stable lr, Pre vs Post"),
          "grad-at-init: per embedding scale the majority of (depth, init) settings; every scale must show the "
          f"pattern; lr-edge: {SETTINGS_RULE} over warmup × clipping; {MEASURES_RULE}"),
    _rule("stable-gradients", 2, "stable_gradients_slope_verdict",
          ("grad-at-init: per-seed least-squares slope of log ‖∇W‖ over layers 0..L−1, W¹ (mlp.c_fc) and W² "
           "(mlp.c_proj), Post-LN vs Pre-LN, per (embedding, init, depth)", "lr-edge: max stable lr, Pre vs Post"),
          f"grad-at-init: per setting and matrix, the mean slope over seeds with its {CI_LEVEL:.0%} Student-t "
          f"interval (n − 1 dof, at least {MIN_SEEDS} seeds per placement); 'grows' = interval entirely above 0, "
          "'shrinks' = entirely below, else flat; Xiong et al.'s pattern = Post-LN grows and Pre-LN does not "
          "grow (reversed: Pre-LN grows and Post-LN does not; else neither); per (embedding, init) the majority "
          "of its depth × matrix settings; the measure: combine over the (embedding, init) cells; the FFN sum and "
          f"the last/first ratio are shown, not judged; lr-edge: {SETTINGS_RULE} over warmup × clipping; "
          f"{MEASURES_RULE}",
          {"NOISE": NOISE, "MIN_SEEDS": MIN_SEEDS, "CI": CI_LEVEL}),
    _rule("no-warmup", 1, "no_warmup_verdict",
          ("lr-edge without warmup: max stable lr, Pre vs Post", "norm: left the unigram plateau without warmup"),
          f"lr-edge: {SETTINGS_RULE} at warmup 0; plateau: an lr where Post-LN needs warmup and Pre-LN does not, and "
          f"none the other way; {MEASURES_RULE}"),
    _rule("faster", 1, "faster_verdict", ("tokens to the target loss, Pre vs Post",),
          f"fewer tokens for Pre-LN; {SETTINGS_RULE} over warmup × lr"),
    _rule("faster", 2, "faster_val_verdict",
          ("tokens until the validation loss (fixed batches, interpolated between evaluations) is 0.5 nats below "
           "the unigram baseline, Pre vs Post; not reached: a bound",),
          f"fewer tokens for Pre-LN; {SETTINGS_RULE} over warmup × lr where either placement reached it"),
    _rule("no-warmup", 2, "no_warmup_verdict_v2",
          ("lr-edge without warmup: stability edge (highest lr that does not diverge) on an exhaustive grid, "
           "else max stable lr, Pre vs Post", "norm: left the unigram plateau without warmup",
           "norm: does warmup lower the final loss, Pre-LN vs Post-LN"),
          f"lr-edge: {SETTINGS_RULE} at warmup 0; plateau: as no-warmup/1; warmup benefit: per lr +1 when warmup "
          f"resolvedly helps Post-LN and not Pre-LN, −1 when it resolvedly helps Pre-LN, majority over lrs; "
          f"{MEASURES_RULE}"),
    _rule("better-final", 1, "better_final_verdict", ("final validation loss, best setting per placement",),
          "best Pre-LN setting resolved below the best Post-LN setting"),
    _rule("gpt2-init", 1, "gpt2_init_verdict", ("final validation loss, gpt2 vs each rival init",),
          "confirmed when gpt2 is resolved better than every rival in every placement; contradicted when a rival "
          "is resolved better anywhere"),
    _rule("scale-depth", 1, "scale_depth_verdict", ("Δ final loss (off − on) at the deepest vs shallowest depth",),
          f"per placement, the deep Δ resolved larger and positive; placements: {SETTINGS_RULE}"),
    _rule("scale-depth", 2, "scale_depth_trend_verdict",
          ("Δ final loss (off − on) per seed at every depth: least-squares slope over log2(depth)",),
          f"per placement, the slope's {CI_LEVEL:.0%} Student-t CI over seeds (≥ {MIN_SEEDS}) above 0 and Δ at the "
          f"deepest depth positive; placements: {SETTINGS_RULE}"),
    _rule("mt-no-warmup", 1, "mt_no_warmup_verdict", ("test BLEU", "test chrF"),
          f"per measure {SETTINGS_RULE} over inits; {MEASURES_RULE}"),
    _rule("mt-warmup", 1, "mt_warmup_verdict", ("test BLEU", "test chrF"),
          f"per measure {SETTINGS_RULE} over inits (warmup helps Post-LN and not Pre-LN); {MEASURES_RULE}"),
    _rule("mt-pretrain-gap", 1, "mt_pretrain_gap_verdict", ("test BLEU", "test chrF"),
          f"per measure {SETTINGS_RULE} over warmup settings with a placement gap; {MEASURES_RULE}"),
    _rule("mt-no-warmup", 2, "mt_no_warmup_verdict_v2", ("target-side validation loss", "test BLEU and chrF beside"),
          f"by the validation loss: {SETTINGS_RULE} over inits; BLEU and chrF shown, not deciding"),
    _rule("mt-warmup", 2, "mt_warmup_verdict_v2", ("target-side validation loss", "test BLEU and chrF beside"),
          f"by the validation loss: {SETTINGS_RULE} over inits (warmup lowers Post-LN's loss and not Pre-LN's); "
          "BLEU and chrF shown, not deciding"),
    _rule("mt-pretrain-gap", 2, "mt_pretrain_gap_verdict_v2",
          ("target-side validation loss", "test BLEU and chrF beside"),
          f"by the validation loss: {SETTINGS_RULE} over warmup settings with a placement gap; BLEU and chrF "
          "shown, not deciding"),
    _rule("deepnorm", 1, "deepnorm_verdict", ("depth sweep: left the unigram plateau", "stability edge"),
          f"depth sweep: {SETTINGS_RULE} over depths where Post-LN does not train; edge: DeepNorm's resolved above "
          f"Post-LN's; {MEASURES_RULE}"),
    _rule("rezero-faster", 1, "rezero_verdict", ("tokens to the train target, ReZero vs Pre-LN and Post-LN",),
          f"fewer tokens for ReZero; {SETTINGS_RULE} over (depth, rival)"),
    _rule("sandwich-growth", 1, "sandwich_end_verdict", ("residual growth (last / first block) at the end",),
          f"Sandwich's growth at the end resolved below Pre-LN's; {SETTINGS_RULE} over depths"),
    _rule("sandwich-growth", 2, "sandwich_verdict", ("residual growth during training (end / init, same run)",),
          f"Sandwich's growth during training resolved below Pre-LN's; {SETTINGS_RULE} over depths"),
    _rule("rmsnorm-cost", 1, "rmsnorm_verdict", ("final validation loss", "median step time"),
          f"each {SETTINGS_RULE} over depths; a conjunction: confirmed when both hold, contradicted when either is "
          "resolved the other way, mixed when one holds and the other is not observed"),
    _rule("rmsnorm-cost", 2, "rmsnorm_verdict_v2", ("final validation loss", "median step time, shown only"),
          f"loss: {SETTINGS_RULE} over depths; the study's step times do not decide the cost (runs at different "
          "times on a shared machine): contradicted when the loss half is, else not tested"),
    _rule("fluency", 1, "fluency_verdict",
          ("mean judge NLL per run (n-gram judge of the training split), Pre-LN vs Post-LN at equal warmup and lr",
           "the same, gpt2 init vs each other plain init scheme"),
          f"lower NLL is more fluent; per measure {SETTINGS_RULE}, leaving out settings where no seed of either side "
          f"left the unigram plateau; {MEASURES_RULE}; not tested when the judge's sanity check fails (real val text "
          "< unigram sampler < shuffled val text, runs that left the plateau < runs that did not)"),
]
RULE_BY_ID = {r["id"]: r for r in RULE_VERSIONS}
# The current rule of each claim: its latest version.
RULES = {k: [r for r in RULE_VERSIONS if r["id"].split("/")[0] == k][-1] for k, _, _ in CLAIMS}


def rules_table():
    """The current rules as study.json records them: {claim key: rule}."""
    return {k: dict(RULES[k]) for k, _, _ in CLAIMS}


def _atlas(f):
    return lambda i, why: f(i.get("atlas") or {}, why.get("atlas"))


def _one(f, key):
    return lambda i, why: f(i.get(key) or [], why.get(key))


RULE_FUNCTIONS = {
    "stable-gradients/1": lambda i, why: stable_gradients_verdict(i.get("profiles") or [], i.get("edges") or [], why),
    "stable-gradients/2": lambda i, why: stable_gradients_slope_verdict(
        i.get("gai_slopes") or [], i.get("edges") or [], why),
    "no-warmup/1": lambda i, why: no_warmup_verdict(i.get("edges") or [], i.get("plateau") or [], why),
    "faster/1": _one(faster_verdict, "times"),
    "faster/2": _one(faster_val_verdict, "val_times"),
    "no-warmup/2": lambda i, why: no_warmup_verdict_v2(i.get("edges") or [], i.get("plateau") or [],
                                                       i.get("finals") or [], why),
    "better-final/1": _one(better_final_verdict, "finals"),
    "gpt2-init/1": _one(gpt2_init_verdict, "inits"),
    "scale-depth/1": _one(scale_depth_verdict, "depth_deltas"),
    "scale-depth/2": _one(scale_depth_trend_verdict, "depth_deltas"),
    "mt-no-warmup/1": _one(mt_no_warmup_verdict, "mt"),
    "mt-warmup/1": _one(mt_warmup_verdict, "mt"),
    "mt-pretrain-gap/1": _one(mt_pretrain_gap_verdict, "mt"),
    "mt-no-warmup/2": _one(mt_no_warmup_verdict_v2, "mt"),
    "mt-warmup/2": _one(mt_warmup_verdict_v2, "mt"),
    "mt-pretrain-gap/2": _one(mt_pretrain_gap_verdict_v2, "mt"),
    "deepnorm/1": _atlas(deepnorm_verdict),
    "rezero-faster/1": _atlas(rezero_verdict),
    "sandwich-growth/1": _atlas(sandwich_end_verdict),
    "sandwich-growth/2": _atlas(sandwich_verdict),
    "rmsnorm-cost/1": _atlas(rmsnorm_verdict),
    "rmsnorm-cost/2": _atlas(rmsnorm_verdict_v2),
    "fluency/1": lambda i, why: fluency_verdict(i.get("fluency") or {}, why.get("fluency")),
}

UNREGISTERED = "not registered"


def registered_rules(study):
    """{claim key: the rule id study.json registered} from study.json's
    dict. A study without "rules" (written before gpt2lab registered them)
    counts as registered under version 1 of every rule; "rules": null (the
    study could not run the report tool when it was created) registers
    none: returns UNREGISTERED. A registered rule whose parameters (NOISE,
    MIN_SEEDS, ...) differ from this code's rule of the same id counts as
    another rule, one this code cannot compute: the report then names it
    instead of replacing it silently."""
    if "rules" not in study:
        return {k: f"{k}/1" for k, _, _ in CLAIMS}
    rules = study.get("rules")
    if not isinstance(rules, dict):
        return UNREGISTERED
    out = {}
    for k, _, _ in CLAIMS:
        r = rules.get(k)
        if isinstance(r, dict) and isinstance(r.get("id"), str):
            if r["id"].split("/")[0] != k:  # an edit made "faster" judged by better-final's rule
                raise ValueError(f"study.json: field 'rules.{k}.id' is {r['id']!r}, a rule of another claim "
                                 "(edited or damaged?)")
            known = RULE_BY_ID.get(r["id"])
            same = known is None or r.get("params") == known["params"]
            out[k] = r["id"] if same else f"{r['id']} with parameters {r.get('params')}"
    return out


def evaluate(inputs, registered=None):
    """Every claim's Verdict under its current rule, in CLAIMS order, from
    the plain inputs of evidence.gather(): {"profiles", "edges", "plateau",
    "times", "finals", "inits", "depth_deltas", "mt", "atlas"} (a missing
    key: that measure was not run), and "why": {key: why that input is
    empty} for the numbers column. registered: registered_rules()' dict; a
    claim whose registered rule differs from the current one also carries
    the verdict under the registered rule (Verdict.registered)."""
    why = inputs.get("why") or {}
    out = []
    for k, _, _ in CLAIMS:
        v = RULE_FUNCTIONS[RULES[k]["id"]](inputs, why)
        v.rule = RULES[k]["id"]
        reg = registered.get(k) if isinstance(registered, dict) else None
        if reg is not None and reg != v.rule:
            v.registered_rule = reg
            if reg in RULE_FUNCTIONS:
                v.registered = RULE_FUNCTIONS[reg](inputs, why)
                v.registered.rule = reg
        out.append(v)
    return out
