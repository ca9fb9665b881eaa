"""From a Study to the plain inputs of verdicts.py: runs grouped by setting
(every seed of a setting together), and the per-seed numbers each claim
rests on. The sections draw their tables from the same groups.

A study written before seeds (study.json version 1) has one run per
setting: each run is its setting's only seed, and no comparison of it
reaches verdicts.MIN_SEEDS.
"""
import math

from .stats import Bound, fmt_lr
from .verdicts import GAI_SHOWN, edge_label, log_slope, warmup_label

SEED_KEYS = ("seed", "seed_index")
PLATEAU_MARGIN = 0.1  # a run left the unigram plateau when val loss < unigram − this (nats)


def finished(st, preset):
    """A preset's finished runs, without the runs that only select a
    setting for others (init's Post-LN sweep: study.json "selections")."""
    return [r for r in st.preset_runs(preset) if r.get("status") in ("completed", "diverged")
            and r.get("variables", {}).get("arm") != "select"]


def groups(st, runs, key):
    """{key(r): [runs, by seed index]} in first-seen order."""
    out = {}
    for r in runs:
        out.setdefault(key(r), []).append(r)
    for k in out:
        out[k].sort(key=st.seed_index)
    return out


def warmup_fraction(r):
    """A training run's warmup as a fraction of its steps (v2 records it;
    v1 only the steps)."""
    v = r.get("variables", {})
    if isinstance(v.get("warmup_fraction"), (int, float)):
        return float(v["warmup_fraction"])
    steps = r.get("config", {}).get("steps")
    w = v.get("warmup", r.get("config", {}).get("warmup", 0)) or 0
    return round(w / steps, 4) if steps else 0.0


def embedding(r):
    return r.get("variables", {}).get("embedding_scale") or "none"


def init_label(r):
    v = r.get("variables", {})
    return v.get("init", "?") + ("+scale" if v.get("residual_scale") and v.get("init") not in ("gpt2", "zero") else "")


def left_plateau(st, r):
    """True when the run finished below the unigram plateau (val loss <
    unigram − PLATEAU_MARGIN), False when it did not (or diverged), None
    without a baseline or an end."""
    if st.unigram is None or r.get("status") not in ("completed", "diverged"):
        return None
    v = st.val_loss(r)
    return v is not None and v < st.unigram - PLATEAU_MARGIN


def train_target(st, runs):
    """The train loss runs are timed to: 0.1 nats below the unigram
    baseline of the training split (the point where a model starts to use
    context; the validation split's where the train split's is unknown);
    without a baseline, the median final smoothed train loss of the runs
    that did not diverge, rounded up to 0.05."""
    base = st.unigram_train if st.unigram_train is not None else st.unigram
    if base is not None:
        return math.floor((base - PLATEAU_MARGIN) * 100) / 100
    finals = sorted(st.smoothed(r)[1][-1] for r in runs if not st.diverged(r) and st.smoothed(r)[1])
    if not finals:
        return None
    mid = len(finals) // 2
    median = finals[mid] if len(finals) % 2 else (finals[mid - 1] + finals[mid]) / 2
    return math.ceil(median * 20) / 20


def step_to_target(st, r, target):
    steps, sm = st.smoothed(r)
    for s, x in zip(steps, sm):
        if x <= target:
            return s
    return None


def tokens_to_target(st, r, target):
    """(tokens when the smoothed train loss first reaches target, reached):
    a run that never does counts with its total tokens (a lower bound)."""
    s = step_to_target(st, r, target)
    if s is not None:
        return st.tokens_at(r, s), True
    return st.total_tokens(r), False


# ---------------------------------------------------------------- grad-at-init

def gai_ratio(result):
    ffn = result.get("grad_norm", {}).get("ffn") or []
    return ffn[-1] / ffn[0] if ffn and ffn[0] else None


def gai_groups(st):
    """{(embedding, depth, init, norm): [results, by seed]}."""
    runs = [r for r in st.preset_runs("grad-at-init") if r.get("status") == "completed" and "result" in r]
    g = groups(st, runs, lambda r: (embedding(r), r["variables"].get("depth"), r["variables"].get("init"),
                                    r["variables"].get("norm")))
    return {k: [r["result"] for r in v] for k, v in g.items()}


def gai_profiles(st):
    g = gai_groups(st)
    out = []
    for (emb, depth, init, norm) in g:
        if norm != "post" or (emb, depth, init, "pre") not in g:
            continue
        out.append({"embedding": emb, "depth": depth, "init": init,
                    "post": [gai_ratio(x) for x in g[(emb, depth, init, "post")]],
                    "pre": [gai_ratio(x) for x in g[(emb, depth, init, "pre")]]})
    return out


def gai_run_slopes(result):
    """{grad_norm key: log_slope of its per-layer norms} for the weight
    matrices the slope test judges and the FFN sum (verdicts.GAI_SHOWN),
    and "ratio": the FFN sum's last/first ratio (shown, not judged)."""
    gn = result.get("grad_norm", {})
    out = {key: log_slope(gn.get(key)) for key, _ in GAI_SHOWN}
    out["ratio"] = gai_ratio(result)
    return out


def gai_slopes(st):
    """verdicts.gai_slope_verdict's input: per (embedding, depth, init)
    with both placements, each placement's per-seed slopes and ratios:
    {"embedding", "depth", "init", "post": {key: [per seed]}, "pre": {...}}."""
    g = gai_groups(st)
    out = []
    for (emb, depth, init, norm) in g:
        if norm != "post" or (emb, depth, init, "pre") not in g:
            continue
        cell = {"embedding": emb, "depth": depth, "init": init}
        for side in ("post", "pre"):
            runs = [gai_run_slopes(x) for x in g[(emb, depth, init, side)]]
            cell[side] = {key: [r[key] for r in runs] for key in [k for k, _ in GAI_SHOWN] + ["ratio"]}
        out.append(cell)
    return out


# ---------------------------------------------------------------- lr-edge

def edge_records(st):
    """The lr-edge searches, one per (norm, warmup_fraction, clip, seed):
    study.json's "edges" (v2), else rebuilt from the preset's runs (the
    largest lr that trained, the smallest above it that did not)."""
    recs = [e for e in st.edges if e.get("preset", "lr-edge") == "lr-edge" and isinstance(e.get("setting"), dict)]
    if recs:
        return recs
    runs = [r for r in st.preset_runs("lr-edge") if r.get("status") in ("completed", "diverged")]
    by = groups(st, runs, lambda r: (r["variables"].get("norm"), warmup_fraction(r), r["variables"].get("clip", 0),
                                     st.seed_index(r)))
    out = []
    for (norm, wf, clip, seed), rs in by.items():
        probes = sorted(({"lr": r["variables"]["lr"], "trains": bool(r.get("outcome", {}).get("trains")),
                          "run": r["name"]} for r in rs if isinstance(r["variables"].get("lr"), (int, float))),
                        key=lambda p: p["lr"])
        ok = [p["lr"] for p in probes if p["trains"]]
        edge = max(ok) if ok else None
        above = [p["lr"] for p in probes if not p["trains"] and (edge is None or p["lr"] > edge)]
        out.append({"preset": "lr-edge", "setting": {"norm": norm, "warmup_fraction": wf, "clip": clip,
                                                     "seed_index": seed},
                    "grid": sorted({p["lr"] for p in probes}), "probes": probes, "edge": edge,
                    "failed": min(above) if above else None, "complete": True})
    return out


def edge_log2(e):
    """log2 of a search's max stable lr; a search that left the grid is a
    Bound: nothing trained, '< log2(lowest probe)'; everything up to the
    top trained, '≥ log2(top)'. None without probes."""
    grid = sorted(x for x in (e.get("grid") or [p["lr"] for p in e.get("probes", [])]) if x > 0)
    if isinstance(e.get("edge"), (int, float)) and e["edge"] > 0:
        x = math.log2(e["edge"])
        return Bound(">", x) if e.get("failed") is None else x
    return Bound("<", math.log2(grid[0])) if grid else None


def edge_setting(e):
    s = e["setting"]
    return (s.get("norm"), float(s.get("warmup_fraction") or 0), float(s.get("clip") or 0))


def edge_groups(st):
    """{(norm, warmup_fraction, clip): [edge records, by seed]}."""
    out = {}
    for e in edge_records(st):
        out.setdefault(edge_setting(e), []).append(e)
    for k in out:
        out[k].sort(key=lambda e: e["setting"].get("seed_index", e["setting"].get("seed", 0)))
    return out


# Probe classes of an exhaustive lr-edge scan (every grid point probed),
# from worst to best: a probe that diverged (the trainer's rule: a non-finite
# loss, or one above ln V + margin for a window of steps), one that ended on
# the unigram plateau (did not learn within the horizon), one that left it
# after a spike it recovered from, and one that trained cleanly.
PROBE_CLASSES = ("diverged", "stuck", "spiked", "trained")


def probe_class(st, r):
    """One of PROBE_CLASSES for a finished probe run; None otherwise."""
    if r.get("status") == "diverged":
        return "diverged"
    if r.get("status") != "completed":
        return None
    left = left_plateau(st, r)
    if left is None:
        left = bool(r.get("outcome", {}).get("trains"))
    if not left:
        return "stuck"
    return "spiked" if (st.spikes(r) or 0) > 0 else "trained"


def scan_classes(st, e):
    """[(lr, class)] of an exhaustive search's probes in lr order (a probe
    not finished yet is left out)."""
    by_name = {r["name"]: r for r in st.preset_runs(e.get("preset", "lr-edge"))}
    out = []
    for p in e.get("probes", []):
        r = by_name.get(p.get("run"))
        c = probe_class(st, r) if r else None
        if c is not None and isinstance(p.get("lr"), (int, float)) and p["lr"] > 0:
            out.append((p["lr"], c))
    return sorted(out)


def stability_log2(e, classes):
    """log2 of the highest lr that does not diverge: the probe below the
    first (lowest) divergence. '≥ top' when no probe diverged, '< lowest'
    when the lowest did. None for a search that is not an exhaustive scan
    or not finished."""
    if not e.get("exhaustive") or not e.get("complete") or not classes:
        return None
    for i, (lr, c) in enumerate(classes):
        if c == "diverged":
            return Bound("<", math.log2(lr)) if i == 0 else math.log2(classes[i - 1][0])
    return Bound(">", math.log2(classes[-1][0]))


def trainability_log2(e, classes):
    """log2 of the lowest lr that leaves the plateau within the horizon
    (trained or spiked and recovered). '< lowest' when the lowest probe
    already did (the edge is at or below it), '≥ top' when none did."""
    if not e.get("exhaustive") or not e.get("complete") or not classes:
        return None
    for i, (lr, c) in enumerate(classes):
        if c in ("trained", "spiked"):
            return Bound("<", math.log2(lr)) if i == 0 else math.log2(lr)
    return Bound(">", math.log2(classes[-1][0]))


def two_edges(st):
    """{(norm, warmup_fraction, clip): {"stability": [log2 per seed],
    "trainability": [...], "classes": [[(lr, class)] per seed]}} of the
    exhaustive lr-edge scans (empty for a study that searched instead)."""
    out = {}
    for key, es in edge_groups(st).items():
        if not all(e.get("exhaustive") for e in es):
            continue
        cls = [scan_classes(st, e) for e in es]
        out[key] = {"stability": [stability_log2(e, c) for e, c in zip(es, cls)],
                    "trainability": [trainability_log2(e, c) for e, c in zip(es, cls)], "classes": cls}
    return out


def edge_inputs(st):
    """Per warmup × clipping setting, Pre-LN's and Post-LN's max stable lr
    per seed (log2): for an exhaustive scan the highest lr that does not
    diverge, for a search the largest that trained (study v2)."""
    g = edge_groups(st)
    scans = two_edges(st)
    out = []
    for wf, clip in sorted({(w, c) for (_, w, c) in g}):
        pre, post = g.get(("pre", wf, clip), []), g.get(("post", wf, clip), [])
        if not (pre and post):
            continue
        sp, so = scans.get(("pre", wf, clip)), scans.get(("post", wf, clip))
        if sp and so:
            vp = [x for x in sp["stability"] if x is not None]
            vo = [x for x in so["stability"] if x is not None]
            out.append({"warmup_fraction": wf, "clip": clip, "label": edge_label(wf, clip), "pre": vp, "post": vo,
                        "measure": "stability",
                        "trainability": {"pre": [x for x in sp["trainability"] if x is not None],
                                         "post": [x for x in so["trainability"] if x is not None]}})
        else:
            out.append({"warmup_fraction": wf, "clip": clip, "label": edge_label(wf, clip),
                        "pre": [edge_log2(e) for e in pre], "post": [edge_log2(e) for e in post]})
    return out


# ---------------------------------------------------------------- norm

def norm_key(r):
    v = r["variables"]
    return v.get("norm"), warmup_fraction(r), v.get("lr")


def norm_groups(st):
    """{(norm, warmup_fraction, lr): [runs, by seed]}."""
    return groups(st, finished(st, "norm"), norm_key)


def norm_plateau(st):
    if st.unigram is None:
        return []
    out = []
    for (norm, wf, lr), rs in norm_groups(st).items():
        left = [left_plateau(st, r) for r in rs]
        out.append({"norm": norm, "warmup_fraction": wf, "lr": lr, "left": sum(bool(x) for x in left),
                    "seeds": len(rs)})
    return out


def norm_times(st):
    g = norm_groups(st)
    target = train_target(st, [r for rs in g.values() for r in rs])
    if target is None:
        return []
    out = []
    for (norm, wf, lr) in g:
        if norm != "pre" or ("post", wf, lr) not in g:
            continue
        pre = [tokens_to_target(st, r, target) for r in g[("pre", wf, lr)]]
        post = [tokens_to_target(st, r, target) for r in g[("post", wf, lr)]]
        out.append({"setting": f"{warmup_label(wf)}, lr {fmt_lr(lr)}", "target": target,
                    "pre": [censored_tokens(x) for x in pre], "post": [censored_tokens(x) for x in post],
                    "reached_pre": sum(ok for _, ok in pre), "reached_post": sum(ok for _, ok in post)})
    return out


# The convergence measure (faster/2): tokens until the validation loss (the
# same fixed batches at every evaluation) first reaches CONV_DEPTH nats below
# the unigram baseline, linearly interpolated between evaluations. A model
# gets there only by using context, so the value depends on the model, not on
# where one noisy train batch happened to cross a line near the plateau; a
# run that never gets there is "not reached" (a bound), never a number.
CONV_DEPTH = 0.5


def val_curve(st, r):
    """[(step, val loss)] of a run: outcome.val_curve (study v3), else the
    eval rows of its metrics."""
    c = r.get("outcome", {}).get("val_curve")
    if isinstance(c, list) and c:
        return [(float(x[0]), float(x[1])) for x in c if isinstance(x, list) and len(x) == 2]
    m = st.metrics.get(r.get("name"), {})
    return list(zip(m.get("val_steps", []), m.get("val", [])))


def tokens_to_val(curve, target, tokens_per_step):
    """(tokens when the curve first reaches target, interpolated; reached).
    Not reached: (tokens of the last evaluation, False)."""
    prev = None
    for step, loss in curve:
        if loss <= target:
            if prev is None or prev[1] == loss:
                return step * tokens_per_step, True
            s0, l0 = prev
            return (s0 + (l0 - target) / (l0 - loss) * (step - s0)) * tokens_per_step, True
        prev = (step, loss)
    return (curve[-1][0] * tokens_per_step if curve else None), False


def tokens_per_step(r):
    c = r.get("config", {})
    try:
        return int(c["batch_size"]) * int(c["seq_len"]) * int(c.get("accum", 1) or 1)
    except (KeyError, TypeError, ValueError):
        return None


def val_reach(st, r, target):
    """tokens_to_val for a run; a diverged run never reaches the target."""
    tps = tokens_per_step(r)
    curve = val_curve(st, r)
    if tps is None or not curve:
        return None, False
    if r.get("status") == "diverged":
        return st.total_tokens(r), False
    return tokens_to_val(curve, target, tps)


def norm_val_times(st):
    """faster/2's inputs: per warmup × lr, Pre-LN's and Post-LN's tokens to
    the validation target per seed (a Bound, '≥ tokens', where not reached)."""
    if st.unigram is None:
        return []
    target = st.unigram - CONV_DEPTH
    g = norm_groups(st)
    out = []
    for (norm, wf, lr) in g:
        if norm != "pre" or ("post", wf, lr) not in g:
            continue
        pre = [val_reach(st, r, target) for r in g[("pre", wf, lr)]]
        post = [val_reach(st, r, target) for r in g[("post", wf, lr)]]
        out.append({"setting": f"{warmup_label(wf)}, lr {fmt_lr(lr)}", "target": target, "measure": "validation",
                    "pre": [censored_tokens(x) for x in pre], "post": [censored_tokens(x) for x in post],
                    "reached_pre": sum(ok for _, ok in pre), "reached_post": sum(ok for _, ok in post)})
    return out


def censored_tokens(reach):
    """tokens_to_target's (tokens, reached) for a comparison: the tokens, or
    for a run that never reached the target a Bound '≥ its total tokens'
    (it would need at least that many; never averaged)."""
    tokens, reached = reach
    return tokens if reached or tokens is None else Bound(">", tokens)


def norm_finals(st):
    return [{"norm": norm, "setting": f"{warmup_label(wf)}, lr {fmt_lr(lr)}", "warmup_fraction": wf, "lr": lr,
             "values": [st.final_value(r) for r in rs]} for (norm, wf, lr), rs in norm_groups(st).items()]


# ---------------------------------------------------------------- init, depth

def init_groups(st):
    """{(norm, init label): [runs, by seed]}."""
    return groups(st, finished(st, "init"), lambda r: (r["variables"].get("norm"), init_label(r)))


def init_inputs(st):
    return [{"norm": norm, "init": label, "values": [st.final_value(r) for r in rs]}
            for (norm, label), rs in init_groups(st).items()]


def depth_groups(st):
    """{(norm, residual_scale, depth): [runs, by seed]}."""
    return groups(st, finished(st, "depth"), lambda r: (r["variables"].get("norm"),
                                                        bool(r["variables"].get("residual_scale")),
                                                        r["variables"].get("depth")))


def depth_deltas(st):
    """Per (norm, depth): final val loss without the residual scale minus
    with it, per seed (runs paired by seed index), and those seed indices."""
    g = depth_groups(st)
    out = []
    for (norm, scale, depth), off in g.items():
        if scale or (norm, True, depth) not in g:
            continue
        on = {st.seed_index(r): st.final_value(r) for r in g[(norm, True, depth)]}
        paired = [r for r in off
                  if st.seed_index(r) in on and st.final_value(r) is not None and on[st.seed_index(r)] is not None]
        out.append({"norm": norm, "depth": depth, "deltas": [st.final_value(r) - on[st.seed_index(r)] for r in paired],
                    "seeds": [st.seed_index(r) for r in paired]})
    return sorted(out, key=lambda x: (x["norm"], x["depth"]))


# ---------------------------------------------------------------- translation

MT_ARMS = ("scratch", "finetune", "pretrain")
MT_MEASURES = ("bleu", "chrf")


def mt_key(r):
    """A translation run's setting: (arm, init, norm, warmup fraction; None
    for pre-training, whose warmup is the budget's and not varied)."""
    v = r["variables"]
    arm = v.get("arm")
    return arm, v.get("init"), v.get("norm"), None if arm == "pretrain" else warmup_fraction(r)


def mt_order(key):
    arm, init, norm, wf = key
    return (MT_ARMS.index(arm) if arm in MT_ARMS else len(MT_ARMS), str(init), wf or 0.0,
            {"pre": 0, "post": 1}.get(norm, 2))


def mt_groups(st):
    """{(arm, init, norm, warmup fraction): [runs, by seed]} over every
    translation run whatever its status (a skipped fine-tune is counted,
    not scored), scratch first, then fine-tuning, then pre-training."""
    g = groups(st, st.preset_runs("translation"), mt_key)
    return {k: g[k] for k in sorted(g, key=mt_order)}


def mt_score(r, measure):
    """A run's test score (BLEU or chrF, 0..100) for comparisons over
    seeds: its translation record's; 0 for a diverged run (it translates
    nothing); None for a run that was skipped, interrupted or not scored."""
    t = r.get("translation")
    if isinstance(t, dict) and isinstance(t.get(measure), (int, float)) and math.isfinite(t[measure]):
        return float(t[measure])
    return 0.0 if r.get("status") == "diverged" else None


def mt_inputs(st):
    """verdicts' translation cells: per scratch and fine-tune setting, the
    seed indices and each measure per seed (mt_score)."""
    out = []
    for (arm, init, norm, wf), rs in mt_groups(st).items():
        if arm not in ("scratch", "finetune"):
            continue
        cell = {"arm": arm, "init": init, "norm": norm, "warmup_fraction": wf,
                "seeds": [st.seed_index(r) for r in rs]}
        for m in MT_MEASURES:
            cell[m] = [mt_score(r, m) for r in rs]
        # The target side's validation loss, negated: higher is better, as
        # for the scores (verdicts.MT_PRIMARY).
        cell["neg_val_loss"] = [None if st.final_value(r) is None else -st.final_value(r) for r in rs]
        out.append(cell)
    return out


# ---------------------------------------------------------------- atlas

def atlas_groups(st):
    """{(variant, depth): [depth-sweep runs, by seed]} of the atlas preset."""
    runs = [r for r in finished(st, "atlas") if r["variables"].get("arm") == "depth"]
    return groups(st, runs, lambda r: (r["variables"].get("variant"), r["variables"].get("depth")))


def atlas_edge_groups(st):
    """{variant: [stability-edge searches, by seed]} of the atlas preset."""
    out = {}
    for e in st.edges:
        if e.get("preset") == "atlas" and isinstance(e.get("setting"), dict):
            out.setdefault(e["setting"].get("variant"), []).append(e)
    for es in out.values():
        es.sort(key=lambda e: e["setting"].get("seed_index", 0))
    return out


def residual_growth(r, when="final"):
    """How much the residual stream grows through the blocks: its RMS after
    the last block over its RMS after the first, at init or at the run's
    end; None for one block or without the measurement. The embeddings are
    left out: the placements differ in what the first block adds to them
    (Sandwich's normalized outputs have RMS ~1 against embeddings of ~0.03,
    Post-LN's stream is a norm's output), which would swamp the growth."""
    rs = (r.get("residual_stream") or {}).get(when) or {}
    rms = rs.get("rms") or []
    return rms[-1] / rms[1] if len(rms) >= 3 and rms[1] else None


def training_growth(r):
    """How much the growth through the blocks grew while the run trained:
    residual_growth at the end over at init (the same run, the same
    batches); None without both. Placements start from different growths
    (Sandwich's output norms add a unit-RMS branch per block), so the end
    alone mixes the init with what training did."""
    end, init = residual_growth(r), residual_growth(r, "init")
    return end / init if end is not None and init else None


def step_ms(st, r):
    """A run's median training step time (ms), its first step left out (warm-up)."""
    ms = [x for x in st.metrics.get(r["name"], {}).get("ms", [])[1:] if isinstance(x, (int, float))]
    if not ms:
        return None
    ms.sort()
    return ms[len(ms) // 2] if len(ms) % 2 else (ms[len(ms) // 2 - 1] + ms[len(ms) // 2]) / 2


def atlas_inputs(st):
    """{"cells": [{variant, depth, seeds, left, final, tokens, growth,
    growth_init, growth_train, ms}], "edges": {variant: [log2 edges]}} for verdicts'
    atlas claims; empty without atlas runs."""
    g = atlas_groups(st)
    if not g:
        return {}
    target = train_target(st, [r for rs in g.values() for r in rs])
    cells = []
    for (variant, depth), rs in g.items():
        cells.append({"variant": variant, "depth": depth, "seeds": len(rs),
                      "left": sum(bool(left_plateau(st, r)) for r in rs),
                      "final": [st.final_value(r) for r in rs],
                      "tokens": [censored_tokens(tokens_to_target(st, r, target)) for r in rs]
                      if target is not None else [],
                      "target": target,
                      "growth": [residual_growth(r) for r in rs],
                      "growth_init": [residual_growth(r, "init") for r in rs],
                      "growth_train": [training_growth(r) for r in rs],
                      "ms": [step_ms(st, r) for r in rs]})
    edges = {v: [edge_log2(e) for e in es] for v, es in atlas_edge_groups(st).items()}
    return {"cells": cells, "edges": edges}


def gather(st):
    """Every plain input verdicts.evaluate() takes, from the study, with why
    an input is empty."""
    why = {}
    if not finished(st, "grad-at-init"):
        why["profiles"] = why["gai_slopes"] = "grad-at-init not run"
    if not finished(st, "lr-edge") and not st.edges:
        why["edges"] = "lr-edge not run"
    if not finished(st, "norm"):
        why["plateau"] = why["times"] = why["val_times"] = why["finals"] = "norm not run"
    else:
        if st.unigram is None:
            why["plateau"] = why["val_times"] = \
                "no unigram baseline (study.json has none and the shards are not at hand)"
    for key, preset in (("inits", "init"), ("depth_deltas", "depth"), ("mt", "translation"), ("atlas", "atlas")):
        if not finished(st, preset):
            why[key] = f"{preset} not run"
    return {"profiles": gai_profiles(st), "gai_slopes": gai_slopes(st), "edges": edge_inputs(st),
            "plateau": norm_plateau(st), "times": norm_times(st), "val_times": norm_val_times(st),
            "finals": norm_finals(st), "inits": init_inputs(st),
            "depth_deltas": depth_deltas(st), "mt": mt_inputs(st), "atlas": atlas_inputs(st),
            "fluency": fluency_inputs(st), "why": why}


# ---------------------------------------------------------------- fluency

NOT_JUDGED = ("lr-edge", "translation")  # presets without fluency samples (probes; another task)


def judged_runs(st):
    """The finished training runs that draw fluency samples: every preset's
    but lr-edge probes, atlas edge probes and translation runs."""
    return [r for r in st.runs if r.get("kind") == "train" and r.get("status") in ("completed", "diverged")
            and r.get("preset") not in NOT_JUDGED and r.get("variables", {}).get("arm") != "edge"]


def judge_nll(r):
    """A completed run's mean judge NLL of its fluency samples (nats/token);
    None for a diverged run (its samples, where a checkpoint was saved,
    come from before the divergence) or a run without a score."""
    f = r.get("fluency")
    x = f.get("judge_nll_mean") if isinstance(f, dict) and r.get("status") == "completed" else None
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def trained(st, r):
    """The run left the unigram plateau: gpt2lab's outcome.trains where it
    recorded one, else left_plateau()."""
    t = r.get("outcome", {}).get("trains")
    return t if isinstance(t, bool) else left_plateau(st, r)


def fluency_side(st, rs):
    return [judge_nll(r) for r in rs], sum(bool(trained(st, r)) for r in rs), len(rs)


def fluency_inputs(st):
    """verdicts.fluency_verdict's input: the judge's calibration, every
    judged run's (mean judge NLL, left the plateau), and the matched
    comparisons: norm Pre-LN vs Post-LN at equal warmup and lr, init gpt2
    vs each other plain scheme (no '+scale' variant) per placement. Empty
    runs when no run has a judge score."""
    runs = [{"name": r["name"], "preset": r.get("preset"), "nll": judge_nll(r), "left": trained(st, r)}
            for r in judged_runs(st) if judge_nll(r) is not None]
    norm, init, why = [], [], {}
    g = norm_groups(st)
    for (n, wf, lr) in g:
        if n == "pre" and ("post", wf, lr) in g:
            (pre, lp, sp), (post, lq, sq) = fluency_side(st, g[(n, wf, lr)]), fluency_side(st, g[("post", wf, lr)])
            norm.append({"setting": f"{warmup_label(wf)}, lr {fmt_lr(lr)}", "pre": pre, "post": post,
                         "left_pre": lp, "seeds_pre": sp, "left_post": lq, "seeds_post": sq})
    gi = init_groups(st)
    for (n, label) in gi:
        if label != "gpt2":
            continue
        mine, lg, sg = fluency_side(st, gi[(n, label)])
        for (m, rival) in gi:
            if m == n and rival != "gpt2" and "+scale" not in rival:
                other, lo, so = fluency_side(st, gi[(m, rival)])
                init.append({"norm": n, "rival": rival, "gpt2": mine, "other": other, "left_gpt2": lg,
                             "seeds_gpt2": sg, "left_other": lo, "seeds_other": so})
    if not runs:
        fb = st.budget.get("fluency") if isinstance(st.budget.get("fluency"), dict) else {}
        why["runs"] = ("no run has fluency records (a study written before the fluency judge)"
                       if not isinstance(st.s.get("judge"), dict) and not (fb.get("samples") or 0) > 0 else
                       "no finished run of a preset that draws fluency samples: lr-edge probes and translation "
                       "runs draw none" if not judged_runs(st) else
                       "no finished run has fluency records yet, though the study has the judge")
    if not finished(st, "norm"):
        why["norm"] = "norm not run"
    if not finished(st, "init"):
        why["init"] = "init not run"
    rules = st.s.get("rules")
    return {"calibration": st.s.get("judge") if isinstance(st.s.get("judge"), dict) else None, "runs": runs,
            "norm": norm if runs else [], "init": init if runs else [], "why": why,
            "unregistered": isinstance(rules, dict) and "fluency" not in rules}


# ---------------------------------------------------------------- design artefacts

def artefact_checks(st):
    """What the study varied that could rule out a design artefact behind a
    result that disagrees with the papers: longer warmup, clipping, more
    steps, seeds. Computed from the settings the study holds."""
    def grouped(values, show):
        by = {}
        for preset, v in values.items():
            by.setdefault(v, []).append(preset)
        return "; ".join(f"{show(v)} ({', '.join(ps)})" for v, ps in sorted(by.items()))

    out = []
    warm = {p: max(warmup_fraction(r) for r in finished(st, p)) for p in ("norm", "lr-edge") if finished(st, p)}
    if any(warm.values()):
        out.append("warmup up to " + grouped({p: w for p, w in warm.items() if w}, lambda w: f"{w:.0%} of the steps"))
    elif warm:
        out.append("no warmup")
    clips = {}
    for r in st.runs:
        c = r.get("variables", {}).get("clip", r.get("config", {}).get("grad_clip")) if r.get("kind") == "train" else 0
        if isinstance(c, (int, float)) and c:
            clips.setdefault(r.get("preset"), set()).add(float(c))
    shown = {p: ", ".join(f"{c:g}" for c in sorted(cs)) for p, cs in clips.items()}
    out.append("gradient clipping at " + grouped(shown, str) if clips else "no gradient clipping")
    steps = {}
    for r in st.runs:
        if r.get("kind") == "train" and isinstance(r.get("config", {}).get("steps"), int):
            steps[r.get("preset")] = max(steps.get(r.get("preset"), 0), r["config"]["steps"])
    if steps:
        out.append("runs of up to " + grouped(steps, lambda s: f"{s} steps"))
    seeds = st.seeds()
    out.append(f"{len(seeds)} seeds per setting" if len(seeds) > 1 else "one seed per setting")
    return out
