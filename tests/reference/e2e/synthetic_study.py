"""A synthetic "study v2" folder (study.json version 2 + each run's
metrics.jsonl) for the report tests: every preset (grad-at-init, norm,
lr-edge, init, depth, translation; atlas when asked) with seeds, in the schema `gpt2lab study` writes, and
every number chosen by the caller, so that a test can make each of the
report's verdicts come out either way.

    make_study(OUT, World(...))

Finished runs of norm, init, depth and the atlas's depth sweep carry
fluency records (samples scored by an n-gram judge, whose calibration is
study.json's "judge"), as gpt2lab has written them since study v3;
World(judge=None) writes a study without them.

A World holds the knobs; World.paper() is a study that agrees with the
papers (every verdict confirmed), World.against() one that contradicts
every claim, World.noise() one whose differences are all within seed
noise. Not a test itself (CMake runs only test_*.py).
"""
import json
import math
import os

VOCAB = 300
UNIFORM = math.log(VOCAB)  # 5.70
UNIGRAM = 5.0  # both splits: the plateau is val loss > 4.9, the train target 4.9
STEPS, EVAL_EVERY, DIAG_EVERY = 40, 10, 10
BATCH, SEQ = 2, 16
GRID = [1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2, 3.2e-2]
PRESETS = ["grad-at-init", "lr-edge", "norm", "init", "depth", "translation"]
# The atlas only where a test asks for it (World(presets=WITH_ATLAS)): its
# 150 more runs would slow every report drawn from a synthetic study.
WITH_ATLAS = PRESETS + ["atlas"]
ATLAS_VARIANTS = ["pre-ln", "post-ln", "deepnorm", "sandwich", "rezero", "pre-rms"]
NORM_WARMUPS = [0.0, 0.05, 0.25]
NORM_LRS = {"normal": 1e-3, "high": 4e-3}
INITS = [("zero", False), ("normal", False), ("gpt2", True), ("xavier", False), ("xavier", True), ("he", False)]
STUCK = 5.05  # a final loss on the plateau
MT_WARMUPS = [0.0, 0.25]
MT_INITS = ["gpt2", "xavier"]
MT_EXAMPLES = 5
# The fluency judge's calibration (study.json "judge"): real val text <
# the unigram sampler < shuffled val text, as a sound judge ranks them.
JUDGE = {"order": 3, "discount": 0.75, "train_tokens": 30000, "pieces": 20, "tokens": 8, "val_text_nll": 4.5,
         "unigram_sampler_nll": 7.0, "shuffled_val_nll": 8.5}
FLUENCY_PROMPTS = ["The state of the Union", "My fellow Americans,"]


def judge_paper(preset, variables, final, i):
    """A run's mean judge NLL (nats/token) as a sound judge gives it: it
    follows the run's final loss, so runs that left the plateau (final
    below 4.9) score below those on it (5.0 and up)."""
    return final + 2.0


def judge_against(preset, variables, final, i):
    """The judge reversed for the claim: Post-LN's samples more fluent (they
    follow World.against()'s final losses) and GPT-2 init's less fluent
    than every other scheme's."""
    return final + (3.5 if preset == "init" and variables.get("init") == "gpt2" else 2.0)


def mt_jitter(norm, i, size=1.0):
    """A translation seed's offset; Post-LN's in another phase than
    Pre-LN's, so that the per-seed placement gaps vary."""
    return jitter(i if norm == "pre" else i + 1, size)


def mt_paper(arm, norm, init, wf, i):
    """Test BLEU (None: the run diverges) as Xiong et al. have it: Post-LN
    from scratch without warmup far below the rest (one xavier seed
    diverges), warmup closes the gap, pre-training closes it too."""
    j = mt_jitter(norm, i)
    if arm == "finetune":
        return (25.0 if norm == "pre" else 24.5) + j
    if norm == "post" and not wf:
        return None if (init == "xavier" and i == 2) else 8.0 + j
    return 20.0 + j


def mt_against(arm, norm, init, wf, i):
    """Every translation claim reversed: Pre-LN needs warmup, Post-LN does
    not, and after pre-training Pre-LN falls further behind."""
    j = mt_jitter(norm, i)
    if arm == "finetune":
        return (5.0 if norm == "pre" else 25.0) + j
    if norm == "pre" and not wf:
        return 8.0 + j
    return 20.0 + j


def atlas_paper(variant, depth, i):
    """An atlas sweep run as the papers have it: (final val loss, time
    constant, residual growth at the end, step ms). Plain Post-LN stays on
    the plateau at depth 8 where DeepNorm trains; ReZero converges in fewer
    steps; Sandwich's stream grows less than Pre-LN's; RMSNorm matches
    LayerNorm's loss with shorter steps."""
    final = STUCK + jitter(i, 0.01) if variant == "post-ln" and depth >= 8 else 4.0 + jitter(i, 0.02)
    tau = 2 + 0.3 * i if variant == "rezero" else 8 + i
    growth = (1.2 if variant == "sandwich" else 1 + 0.5 * depth) + jitter(i, 0.05)
    ms = (9.0 if variant == "pre-rms" else 10.0) + jitter(i, 0.1)
    return final, tau, growth, ms


def atlas_against(variant, depth, i):
    """Every atlas claim reversed: DeepNorm stuck where Post-LN trains,
    ReZero slower, Sandwich's stream growing more, RMSNorm worse."""
    final = STUCK + jitter(i, 0.01) if variant == "deepnorm" and depth >= 8 else \
        (4.3 if variant == "pre-rms" else 4.0) + jitter(i, 0.02)
    tau = 16 + i if variant == "rezero" else 8 + i
    growth = (1 + depth if variant == "sandwich" else 1.2) + jitter(i, 0.05)
    return final, tau, growth, 10.0 + jitter(i, 0.1)


def jitter(i, size):
    """A seed's offset: -size, 0, +size for seed indices 0, 1, 2 (sd = size)."""
    return size * ((i % 3) - 1)


class World:
    """The numbers of a synthetic study. Callables get the seed index i."""

    def __init__(self, **kw):
        self.seeds = 3
        self.version = 2
        self.presets = list(PRESETS)
        self.embeddings = ["none", "sqrt"]
        # grad-at-init: per-layer growth of the FFN gradient norm (ratio
        # last/first = (1 + g)^(L-1)).
        self.gai_growth = lambda norm, emb, i: (0.3 if norm == "post" else -0.05) + jitter(i, 0.01)
        # lr-edge: index into GRID of the largest lr that trains (-1: none).
        self.edge_index = lambda norm, wf, clip, i: (4 if norm == "pre" else 1 + (2 if wf else 0)) + (i == 2) - (i == 0)
        # norm: (final val loss or None = diverges, time constant in steps).
        self.norm_run = lambda norm, wf, level, i: (
            (4.0 + (0.1 if level == "high" else 0) + jitter(i, 0.02), 6 + i) if norm == "pre" else
            ((STUCK + jitter(i, 0.01), 30) if wf < 0.25 else (4.3 + jitter(i, 0.02), 16 + i)))
        # init: final val loss per (norm, init label).
        self.init_final = lambda norm, label, i: {"zero": 5.0, "normal": 4.2, "gpt2": 3.9, "xavier": 4.3,
                                                  "xavier+scale": 4.1, "he": 4.4}[label] + jitter(i, 0.02)
        # depth: final val loss per (norm, residual scale, depth).
        self.depths = [2, 8]
        self.depth_final = lambda norm, scale, depth, i: 4.0 + (0.0 if scale else 0.05 * depth) + \
            jitter(i + (0 if scale else 1), 0.01)
        # lr-edge probes: None = ascending until the first lr that does not
        # train; else (norm, wf, clip, i, k) -> trains, every lr of the grid
        # probed (a non-monotone search).
        self.probe = None
        # Trainer spikes (outcome.spikes) per (preset, norm).
        self.spikes = lambda preset, norm: 1 if norm == "post" else 0
        # translation: test BLEU per (arm, norm, init, warmup fraction, i)
        # (None: the run diverges; chrF is 10 + 2·BLEU), and which
        # pre-training runs diverge (their fine-tunings are then skipped).
        self.mt_bleu = mt_paper
        self.mt_pretrain_diverges = lambda norm, i: False
        # atlas: (final, tau, residual growth, step ms) per (variant, depth,
        # i), and the index into GRID of each variant's stability edge.
        self.atlas_run = atlas_paper
        self.atlas_edge = lambda variant, i: (1 if variant == "post-ln" else 4) + (i == 2) - (i == 0)
        # fluency: a finished run's mean judge NLL per (preset, variables,
        # final val loss, i); None: no fluency records (a study before v3).
        self.judge = judge_paper
        self.judge_calibration = dict(JUDGE)
        for k, v in kw.items():
            setattr(self, k, v)

    @classmethod
    def paper(cls, **kw):
        return cls(**kw)

    @classmethod
    def against(cls, **kw):
        w = cls(
            gai_growth=lambda norm, emb, i: (-0.05 if norm == "post" else 0.3) + jitter(i, 0.01),
            edge_index=lambda norm, wf, clip, i: (1 if norm == "pre" else 4) + (i == 2) - (i == 0),
            norm_run=lambda norm, wf, level, i: (
                (4.0 + jitter(i, 0.02), 6 + i) if norm == "post" else
                ((STUCK + jitter(i, 0.01), 30) if wf < 0.25 else (4.3 + jitter(i, 0.02), 16 + i))),
            init_final=lambda norm, label, i: {"zero": 5.0, "normal": 3.9, "gpt2": 4.2, "xavier": 4.3,
                                               "xavier+scale": 4.1, "he": 4.4}[label] + jitter(i, 0.02),
            depth_final=lambda norm, scale, depth, i: 4.0 + (0.0 if scale else 0.05 * (10 - depth)) +
            jitter(i + (0 if scale else 1), 0.01),
            mt_bleu=mt_against, atlas_run=atlas_against, judge=judge_against,
            atlas_edge=lambda variant, i: (1 if variant == "deepnorm" else 4) + (i == 2) - (i == 0))
        for k, v in kw.items():
            setattr(w, k, v)
        return w

    @classmethod
    def noise(cls, **kw):
        w = cls(
            gai_growth=lambda norm, emb, i: 0.1 + (0.01 if norm == "post" else 0) + jitter(i, 0.05),
            edge_index=lambda norm, wf, clip, i: 3 + (i == 2) - (i == 0),
            norm_run=lambda norm, wf, level, i: (4.2 + (0.005 if norm == "post" else 0) + jitter(i, 0.05), 10 + 3 * i),
            init_final=lambda norm, label, i: (5.0 if label == "zero" else 4.1) + jitter(i, 0.05),
            depth_final=lambda norm, scale, depth, i: 4.0 + (0.0 if scale else 0.01) +
            jitter(i + (0 if scale else 1), 0.05),
            mt_bleu=lambda arm, norm, init, wf, i: 15.0 + (0.1 if norm == "post" else 0) + mt_jitter(norm, i),
            atlas_run=lambda variant, depth, i: (4.0 + jitter(i, 0.05), 8 + i, 2.0 + jitter(i, 0.2),
                                                 10.0 + jitter(i, 0.5)),
            atlas_edge=lambda variant, i: 3 + (i == 2) - (i == 0))
        for k, v in kw.items():
            setattr(w, k, v)
        return w


def write_metrics(path, final, tau, diverge_at=None, spike_at=None, steps=STEPS, ms=1.0):
    """A loss curve final + (ln V - final)·exp(-s/tau), validation every
    EVAL_EVERY steps ending exactly at `final`, diagnostics every
    DIAG_EVERY; or a run that blows up at diverge_at."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows = []
    for s in range(steps + 1):
        curve = final + (UNIFORM - final) * math.exp(-s / tau)
        if s % EVAL_EVERY == 0 or s == steps:
            rows.append({"kind": "eval", "step": s, "val_loss": final if s == steps else curve, "elapsed_s": s * 0.01})
        if s == steps:
            break
        if s % DIAG_EVERY == 0:
            rows.append({"kind": "diag", "step": s, "grad_norms": {
                "attn.c_attn": [1.0, 0.5 + s / 100], "attn.c_proj": [0.2, 0.1], "mlp.c_fc": [0.3, 0.2],
                "mlp.c_proj": [0.2, 0.1], "ln_1": [0.01, 0.01], "ln_2": [0.01, 0.01], "wte": 1.0, "wpe": 0.1,
                "ln_f": 0.1}, "residual_rms": [0.1, 0.2, 0.3], "update_ratio": [0.01, 0.01]})
        loss = curve
        if diverge_at is not None and s >= diverge_at - 3:
            loss = UNIFORM + 2.5 + (s - diverge_at)
        if spike_at is not None and s == spike_at:
            loss = UNIFORM + 2.5  # above the threshold for one step, then back
        if diverge_at is not None and s == diverge_at:
            rows.append({"kind": "diverged", "step": s, "diverged": True, "reason": "loss above --max-loss for 3 steps",
                         "loss": loss, "grad_norm": 50.0})
            break
        rows.append({"kind": "train", "step": s, "loss": loss, "lr": 1e-3, "grad_norm": 1.0 + 0.1 * (s % 3),
                     "ms": ms, "tokens_per_s": 1000.0, "tokens": (s + 1) * BATCH * SEQ, "elapsed_s": s * 0.01})
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def fluency_record(nll):
    """A run's "fluency" record: two samples whose judge NLLs average nll."""
    samples = [{"prompt": p, "text": f" sample {k} at {nll:.2f}", "tokens": 8, "words": 4, "distinct_1": 1.0,
                "distinct_2": 1.0, "repeated_4gram_rate": 0.1 * k, "judge_nll": nll + (0.1 if k else -0.1)}
               for k, p in enumerate(FLUENCY_PROMPTS)]
    return {"samples": samples, "tokens": 8, "rep4_mean": 0.05, "judge_nll_mean": nll}


def train_run(out, name, preset, variables, final, tau, diverge_at=None, spikes=0, clip=0.0, warmup=0, lr=1e-3,
              n_layer=2, symmetry=None, trains=None, ms=1.0, judge=None):
    # A spike after the run blew up is not in its metrics, so not counted.
    spike_steps = [STEPS // 2 + k for k in range(spikes) if diverge_at is None or STEPS // 2 + k < diverge_at - 3]
    write_metrics(os.path.join(out, "runs", name, "metrics.jsonl"), final, tau, diverge_at,
                  spike_steps[0] if spike_steps else None, ms=ms)
    status = "diverged" if diverge_at is not None else "completed"
    outcome = {"status": status, "steps": diverge_at or STEPS, "last_loss": final, "min_loss": final - 0.05,
               "spikes": len(spike_steps[:1]), "spike_steps": spike_steps[:1]}
    if diverge_at is None:
        outcome.update(val_loss=final, val_ppl=math.exp(final), val_step=STEPS)
    else:
        outcome.update(diverged_at=diverge_at, reason="loss above --max-loss for 3 steps")
    if trains is not None:
        outcome["trains"] = trains
    rec = {"name": name, "preset": preset, "kind": "train", "variables": variables,
           "config": {"model": {"n_layer": n_layer, "n_embd": 32, "n_head": 2}, "steps": STEPS, "batch_size": BATCH,
                      "seq_len": SEQ, "grad_clip": clip, "max_loss": UNIFORM + 2, "max_loss_window": 3, "lr": lr,
                      "warmup": warmup, "seed": variables.get("seed", 1337)},
           "dir": f"runs/{name}", "metrics": f"runs/{name}/metrics.jsonl", "status": status, "outcome": outcome,
           "seconds": 0.5}
    if diverge_at is None:
        rec["checkpoint_step"] = STEPS
        rec["sample"] = {"prompt": "The", "text": " the the the nation" if final > 4.5 else " a fine speech about law",
                         "tokens": 5, "words": 4, "distinct_1": 0.5 if final > 4.5 else 1.0,
                         "distinct_2": 0.6 if final > 4.5 else 1.0,
                         "repeated_4gram_rate": 0.3 if final > 4.5 else 0.0}
        rec["symmetry"] = [symmetry or {"layer": 0, "units": 128, "distinct_units": 128, "spread": 0.02,
                                        "weight_rms": 0.02, "relative_spread": 1.0}]
        if judge is not None:
            rec["fluency"] = fluency_record(judge(preset, variables, final, variables.get("seed_index", 0)))
    else:
        rec["sample"] = None
        rec["note"] = "no checkpoint (the run diverged before its first save)"
    return rec


def seed_vars(w, i):
    return {"seed": 1337 + i, "seed_index": i}


def mt_record(arm, norm, wf, i, bleu):
    """A completed run's "translation" record; its example hypotheses name
    the run, so that a test can find them side by side."""
    tag = f"{arm}-{norm}-w{int(wf * 100)}-s{i}"
    return {"bleu": bleu, "chrf": 10.0 + 2 * bleu, "bleu_precisions": [bleu + 20, bleu + 10, bleu, bleu / 2],
            "brevity_penalty": 1.0, "pairs": 10, "hit_length_cap": 1 if norm == "post" else 0, "seconds": 0.1,
            "hypotheses": "translation-test.json",
            "examples": [{"source": f"Open file {k}", "reference": f"Ouvrir le fichier {k}",
                          "hypothesis": f"hyp {tag} #{k}"} for k in range(MT_EXAMPLES)]}


def mt_run(out, w, arm, norm, init, wf, i):
    """One translation training run (scratch or fine-tune) with its scores;
    a diverged one has none."""
    bleu = w.mt_bleu(arm, norm, init, wf, i)
    warmup = round(wf * STEPS)
    tag = f"{norm}-{init}-w{int(wf * 100)}" if arm == "scratch" else f"{norm}-w{int(wf * 100)}"
    name = f"mt-{'scratch' if arm == 'scratch' else 'ft'}-{tag}-s{i + 1}"
    v = {"arm": arm, "norm": norm, "init": init, "warmup": warmup, "warmup_fraction": wf, **seed_vars(w, i)}
    if arm == "finetune" and w.mt_pretrain_diverges(norm, i):
        return {"name": name, "preset": "translation", "kind": "train", "variables": v,
                "config": {"model": {"n_layer": 2, "n_embd": 32, "n_head": 2}, "steps": STEPS},
                "dir": f"runs/{name}", "metrics": f"runs/{name}/metrics.jsonl", "status": "skipped",
                "note": f"its pre-training run mt-pretrain-{norm}-s{i + 1} is diverged"}
    final = 5.0 - (bleu or 0) / 20
    rec = train_run(out, name, "translation", v, final, 8, None if bleu is not None else 12, warmup=warmup)
    rec["sample"] = None
    if bleu is not None:
        rec["translation"] = mt_record(arm, norm, wf, i, bleu)
    return rec


def mt_runs(out, w):
    runs = []
    for norm in ("pre", "post"):
        for i in range(w.seeds):
            div = 12 if w.mt_pretrain_diverges(norm, i) else None
            rec = train_run(out, f"mt-pretrain-{norm}-s{i + 1}", "translation",
                            {"arm": "pretrain", "norm": norm, "init": "gpt2", **seed_vars(w, i)},
                            (4.0 if norm == "pre" else 4.1) + jitter(i, 0.02), 8, div, warmup=2)
            rec["sample"] = None
            runs.append(rec)
    for arm, inits in (("finetune", ["pretrained"]), ("scratch", MT_INITS)):
        for norm in ("pre", "post"):
            for wf in MT_WARMUPS:
                for init in inits:
                    runs += [mt_run(out, w, arm, norm, init, wf, i) for i in range(w.seeds)]
    return runs


MT_DATA = {"pairs": {"train": 900, "valid": 40, "test": 10}, "tokens": {"train": 30000, "val": 1200},
           "cleaning": {"entries": 1200, "header": 3, "obsolete": 20, "fuzzy": 30, "untranslated": 40,
                        "plural_pairs": 13, "whitespace_normalized": 50, "not_utf8": 0, "empty": 0,
                        "identical": 70, "extracted": 1050, "duplicates": 60, "too_long": 40,
                        "with_format_specifiers": 90, "kept": 950, "alternative_references_dropped": 0},
           "catalogs": 3, "packages": [{"package": "coreutils", "version": "9.1-1", "sha256": "0" * 64},
                                       {"package": "tar", "version": "1.34", "sha256": "1" * 64}],
           "translation": {"source_name": "English", "target_name": "French", "source_language": "en",
                           "target_language": "fr", "prompt": "<|endoftext|>English: {source}\nFrench:",
                           "completion": " {target}<|endoftext|>"},
           "tokenizer": "t sha256:1"}
MT_BUDGET = {"shape": {"n_layer": 2, "n_embd": 32, "steps": STEPS}, "lr": 1e-3, "long_warmup_fraction": 0.25,
             "pretrain_steps": STEPS, "pretrain_warmup_fraction": 0.05, "finetune_steps": STEPS, "finetune_lr": 5e-4,
             "valid_pairs": 40, "test_pairs": 10, "max_tokens": 48, "target": "fr"}


def atlas_runs(out, w):
    """The atlas's depth sweep (runs with their residual stream) and its
    stability-edge searches (edges, with their probe runs)."""
    runs, edges = [], []
    for depth in (2, 8):
        for variant in ATLAS_VARIANTS:
            for i in range(w.seeds):
                final, tau, growth, ms = w.atlas_run(variant, depth, i)
                v = {"arm": "depth", "variant": variant, "depth": depth, **seed_vars(w, i)}
                rec = train_run(out, f"atlas-{variant}-L{depth}-s{i + 1}", "atlas", v, final, tau, n_layer=depth,
                                ms=ms, judge=w.judge)
                init = [0.05] * (depth + 1)
                rec["residual_stream"] = {"init": {"rms": init, "token_norm": init, "tokens": 32},
                                          "final": {"rms": [0.05] + [0.1 * (1 + (growth - 1) * (j - 1) / (depth - 1))
                                                                     for j in range(1, depth + 1)],
                                                    "token_norm": init, "tokens": 32}}
                runs.append(rec)
    for variant in ATLAS_VARIANTS:
        for i in range(w.seeds):
            top = w.atlas_edge(variant, i)
            name = f"atlas-edge-{variant}-L2-s{i + 1}"
            probes = [{"lr": lr, "trains": k <= top, "run": f"{name}-lr{lr:g}"} for k, lr in enumerate(GRID)
                      if k <= top + 1]
            for p in probes:
                v = {"arm": "edge", "variant": variant, "depth": 2, "lr": p["lr"], **seed_vars(w, i)}
                rec = train_run(out, p["run"], "atlas", v, 4.2 if p["trains"] else 5.5, 8, None if p["trains"] else 9,
                                lr=p["lr"], trains=p["trains"])
                for k in ("sample", "symmetry", "checkpoint_step", "note"):  # probes are not analysed further
                    rec.pop(k, None)
                runs.append(rec)
            edges.append({"preset": "atlas", "setting": {"arm": "edge", "variant": variant, "depth": 2,
                                                         **seed_vars(w, i)},
                          "grid": GRID, "probes": probes, "edge": GRID[top] if top >= 0 else None,
                          "failed": GRID[top + 1] if top + 1 < len(GRID) else None, "complete": True})
    return runs, edges


def gai_runs(out, w):
    """The grad-at-init preset's run records."""
    runs = []
    seeds = range(w.seeds)
    for emb in w.embeddings:
        for depth in (4, 8):
            for norm in ("pre", "post"):
                for init in ("gpt2", "he"):
                    for i in seeds:
                        g = w.gai_growth(norm, emb, i)
                        ffn = [0.1 * (1 + g) ** j for j in range(depth)]
                        rms = [0.03 * (1 + j) if norm == "pre" else 1.0 for j in range(depth + 1)]
                        v = {"depth": depth, "norm": norm, "init": init, "embedding_scale": emb, **seed_vars(w, i)}
                        runs.append({"name": f"gai-{emb}-L{depth}-{norm}-{init}-s{i}", "preset": "grad-at-init",
                                     "kind": "grad-at-init", "status": "completed", "variables": v,
                                     "config": {"model": {"n_embd": 32}, "batch_size": 2, "seq_len": 16,
                                                "batches": 2, "seed": 1337 + i},
                                     # W¹ and W² as 0.6 and 0.8 of the FFN sum: √(0.6² + 0.8²) = 1
                                     "result": {"grad_norm": {"ffn": ffn, "attn": ffn,
                                                              "mlp.c_fc": [0.6 * x for x in ffn],
                                                              "mlp.c_proj": [0.8 * x for x in ffn]},
                                                "residual_rms": rms,
                                                "loss": 5.7, "batches": 2, "seconds": 0.1}})
    return runs


def norm_runs(out, w):
    """The norm preset's run records."""
    runs = []
    seeds = range(w.seeds)
    for norm in ("pre", "post"):
        for wf in NORM_WARMUPS:
            for level, lr in NORM_LRS.items():
                for i in seeds:
                    final, tau = w.norm_run(norm, wf, level, i)
                    warmup = round(wf * STEPS)
                    name = f"norm-{norm}-w{int(wf * 100)}-{level}-s{i}"
                    div = None if final is not None else 12
                    runs.append(train_run(out, name, "norm", {"norm": norm, "warmup": warmup, "warmup_fraction": wf,
                                                              "lr": lr, "lr_level": level, **seed_vars(w, i)},
                                          final if final is not None else 5.5, tau, div,
                                          spikes=w.spikes("norm", norm), warmup=warmup, lr=lr, judge=w.judge))
    return runs


def lr_edge_runs(out, w):
    """The lr-edge preset's run records and searches."""
    runs, edges = [], []
    seeds = range(w.seeds)
    for norm in ("pre", "post"):
        for wf in (0.0, 0.25):
            for clip in (0.0, 1.0):
                for i in seeds:
                    top = w.edge_index(norm, wf, clip, i)
                    probes = []
                    for k, lr in enumerate(GRID):
                        trains = k <= top if w.probe is None else w.probe(norm, wf, clip, i, k)
                        name = f"lredge-{norm}-w{int(wf * 100)}-c{clip:g}-s{i}-lr{lr:g}"
                        warmup = round(wf * STEPS)
                        v = {"norm": norm, "warmup": warmup, "warmup_fraction": wf, "clip": clip, "lr": lr,
                             **seed_vars(w, i)}
                        runs.append(train_run(out, name, "lr-edge", v, 4.2 if trains else 5.5, 8,
                                              None if trains else 9, clip=clip, warmup=warmup, lr=lr,
                                              trains=trains))
                        probes.append({"lr": lr, "trains": trains, "run": name})
                        if not trains and w.probe is None:
                            break
                    ok = [k for k, p in enumerate(probes) if p["trains"]]
                    top = max(ok) if ok else -1
                    edge = GRID[top] if top >= 0 else None
                    failed = GRID[top + 1] if top + 1 < len(GRID) else None
                    edges.append({"preset": "lr-edge", "setting": {"norm": norm, "warmup_fraction": wf,
                                                                   "clip": clip, **seed_vars(w, i)},
                                  "grid": GRID, "probes": probes, "edge": edge, "failed": failed,
                                  "complete": True})
    return runs, edges


def init_runs(out, w):
    """The init preset's run records."""
    runs = []
    seeds = range(w.seeds)
    for norm in ("pre", "post"):
        for init, scale in INITS:
            label = init + ("+scale" if scale and init != "gpt2" else "")
            for i in seeds:
                sym = None
                if init == "zero":
                    sym = {"layer": 0, "units": 128, "distinct_units": 1, "spread": 0.0, "weight_rms": 0.0,
                           "relative_spread": 0.0}
                name = f"init-{norm}-{label.replace('+', '-')}-s{i + 1}"
                runs.append(train_run(out, name, "init", {"norm": norm, "init": init, "residual_scale": scale,
                                                          "depth": 2, **seed_vars(w, i)},
                                      w.init_final(norm, label, i), 10, symmetry=sym,
                                      spikes=w.spikes("init", norm), judge=w.judge))
    return runs


def depth_runs(out, w):
    """The depth preset's run records."""
    runs = []
    seeds = range(w.seeds)
    for depth in w.depths:
        for norm in ("pre", "post"):
            for scale in (True, False):
                for i in seeds:
                    name = f"depth-L{depth}-{norm}-{'scale' if scale else 'noscale'}-s{i + 1}"
                    runs.append(train_run(out, name, "depth", {"depth": depth, "norm": norm,
                                                               "residual_scale": scale, **seed_vars(w, i)},
                                          w.depth_final(norm, scale, depth, i), 10, n_layer=depth,
                                          spikes=w.spikes("depth", norm), judge=w.judge))
    return runs


def make_study(out, w=None):
    """Writes OUT/study.json and OUT/runs/*/metrics.jsonl for World w."""
    w = w or World.paper()
    runs, edges = [], []
    seeds = range(w.seeds)
    if "grad-at-init" in w.presets:
        runs += gai_runs(out, w)
    if "norm" in w.presets:
        runs += norm_runs(out, w)
    if "lr-edge" in w.presets:
        more, more_edges = lr_edge_runs(out, w)
        runs += more
        edges += more_edges
    if "init" in w.presets:
        runs += init_runs(out, w)
    if "depth" in w.presets:
        runs += depth_runs(out, w)
    if "translation" in w.presets:
        runs += mt_runs(out, w)
    if "atlas" in w.presets:
        more, more_edges = atlas_runs(out, w)
        runs += more
        edges += more_edges
    seeds_list = [1337 + i for i in seeds]
    study = {"format": "gpt2lab study", "version": w.version, "created": "t0", "updated": "t1", "threads": 2,
             "presets": w.presets, "command": "gpt2lab study --preset all --budget tiny --out /somewhere/study",
             "budget": {"name": "tiny", "seed": 1337, "seeds": seeds_list,
                        "lr_edge": {"grid": GRID, "warmup_fraction": 0.25, "clips": [0, 1.0], "margin": 0.1},
                        "norm": {"warmups": NORM_WARMUPS, "lrs": list(NORM_LRS.values())},
                        "sample": {"tokens": 16, "temperature": 0.8, "top_k": 40}, "translation": MT_BUDGET,
                        "atlas": {"depths": [2, 8], "edge_depth": 2, "residual_batches": 2, "grid": GRID}},
             "data": {"dir": "data/dataset", "tokenizer": "t", "tokenizer_identity": "t sha256:0", "vocab_size": VOCAB},
             "baselines": {"uniform": UNIFORM, "unigram_val": UNIGRAM, "unigram_train": UNIGRAM},
             "runs": runs, "edges": edges}
    if "translation" in w.presets:
        study["translation_data"] = MT_DATA
    if w.judge is not None:
        study["budget"]["fluency"] = {"samples": len(FLUENCY_PROMPTS), "tokens": 8, "prompts": FLUENCY_PROMPTS}
        study["judge"] = w.judge_calibration
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(study, f)
    return study
