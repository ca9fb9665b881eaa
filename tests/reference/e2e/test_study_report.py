"""tools/report (python3 tools/report OUT) on synthetic studies: the
findings are computed from the data, so changing the data changes them
(divergence counts, the Xiong et al. verdict, the zero-init symmetry,
rankings, seed noise), a "study v2" with seeds gets mean ± sd tables, seed
bands, the lr-edge section and the translation section (BLEU/chrF per
setting, examples side by side, its three verdicts; a diverged seed counts
as BLEU 0, a skipped fine-tuning is counted)
(tests/reference/e2e/synthetic_study.py writes it), a study written before seeds (version 1, one run per setting)
still renders with every comparison "not tested", and a study that ran
only some presets names the others once."""
import json
import math
import os
import re
import statistics
import sys

import pytest

import harness
import synthetic_study as syn

REPORT = os.path.join(harness.SOURCE, "tools", "report")  # a folder: python3 tools/report OUT
# The report package, imported as `report` the way its entry point does.
harness.report_package()
from report import verdicts as V  # noqa: E402

CLAIMS = len(V.CLAIMS)  # rows of the verdict table
ATLAS = {k for k, _, sections in V.CLAIMS if sections == ("atlas",)}
ATLAS_CLAIMS = len(ATLAS)  # of them, the atlas preset's (not run in these synthetic studies)
# Claims whose rule changed since version 1: a study.json without registered
# rules (version 1) shows them twice, under the registered and the current rule.
CHANGED = [k for k, _, _ in V.CLAIMS if V.RULES[k]["id"] != f"{k}/1"]


# ---------------------------------------------------------------- a version 1 study (no seeds)

def write_metrics(path, steps, final, diverge_at=None, spike_at=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for s in range(steps):
            if diverge_at is not None and s == diverge_at:
                f.write(json.dumps({"step": s, "diverged": True, "reason": "loss is not finite", "loss": None}) + "\n")
                return
            if s % 10 == 0:
                f.write(json.dumps({"step": s, "val_loss": final + 5 * math.exp(-s / 20) + 0.05}) + "\n")
                f.write(json.dumps({"step": s, "grad_norms": {
                    "attn.c_attn": [1.0, 0.5], "attn.c_proj": [0.2, 0.1], "mlp.c_fc": [0.3, 0.2],
                    "mlp.c_proj": [0.2, 0.1], "ln_1": [0.01, 0.01], "ln_2": [0.01, 0.01],
                    "wte": 1.0, "wpe": 0.1, "ln_f": 0.1}, "residual_rms": [0.1, 0.2, 0.3],
                    "update_ratio": [0.01, 0.01]}) + "\n")
            loss = final + 5 * math.exp(-s / 20)
            if spike_at is not None and s == spike_at:
                loss *= 1.5
            f.write(json.dumps({"step": s, "loss": loss, "lr": 1e-3, "grad_norm": 1.0, "ms": 1, "tokens_per_s": 1})
                    + "\n")
        f.write(json.dumps({"step": steps, "val_loss": final + 0.05}) + "\n")


def train_run(out, name, preset, variables, final, diverge_at=None, symmetry=None, spike_at=None, steps=100):
    write_metrics(os.path.join(out, "runs", name, "metrics.jsonl"), steps, final, diverge_at, spike_at)
    status = "diverged" if diverge_at is not None else "completed"
    outcome = {"status": status, "steps": diverge_at or steps}
    if diverge_at is None:
        outcome.update(val_loss=final + 0.05, val_ppl=math.exp(final + 0.05))
    else:
        outcome.update(diverged_at=diverge_at, reason="loss is not finite")
    model = {"n_layer": variables.get("depth", 2), "n_embd": 32}
    rec = {"name": name, "preset": preset, "kind": "train", "variables": variables,
           "config": {"model": model, "steps": steps, "batch_size": 2, "seq_len": 16, "grad_clip": 0.0,
                      "max_loss": 10.0, "lr": variables.get("lr", 1e-3), "warmup": variables.get("warmup", 5)},
           "dir": f"runs/{name}", "metrics": f"runs/{name}/metrics.jsonl", "status": status, "outcome": outcome,
           "checkpoint_step": steps, "seconds": 1.0,
           "sample": {"prompt": "The", "text": " the the the nation" if final > 4 else " a fine speech about law",
                      "tokens": 5, "words": 4, "distinct_1": 0.5 if final > 4 else 1.0,
                      "distinct_2": 0.6 if final > 4 else 1.0, "repeated_4gram_rate": 0.3 if final > 4 else 0.0}}
    rec["symmetry"] = [symmetry or {"layer": 0, "units": 128, "distinct_units": 128, "spread": 0.02,
                                    "weight_rms": 0.02, "relative_spread": 1.0}]
    return rec


def make_v1_study(out, post_grows, post_nowarmup_diverges, zero_distinct, gpt2_better, presets):
    runs = []
    if "grad-at-init" in presets:
        for depth in (4, 8):
            for norm in ("pre", "post"):
                for init in ("gpt2", "he"):
                    if norm == "post" and post_grows:
                        ffn = [0.1 * (1 + 0.5 * i) for i in range(depth)]
                    elif norm == "post":
                        ffn = [0.1] * depth
                    else:
                        ffn = [0.5 * (1 - 0.05 * i) / math.sqrt(depth) for i in range(depth)]
                    rms = [0.03 * (1 + i) if norm == "pre" else 1.0 for i in range(depth + 1)]
                    runs.append({"name": f"gai-L{depth}-{norm}-{init}", "preset": "grad-at-init",
                                 "kind": "grad-at-init", "status": "completed",
                                 "variables": {"depth": depth, "norm": norm, "init": init},
                                 "config": {"model": {"n_embd": 32}, "batch_size": 2, "seq_len": 16, "batches": 2,
                                            "seed": 1},
                                 "result": {"grad_norm": {"ffn": ffn, "total": ffn}, "residual_rms": rms,
                                            "loss": 5.0, "batches": 2, "seconds": 0.1}})
    if "norm" in presets:
        for norm in ("pre", "post"):
            for w in (0, 5):
                for lr in (1e-3, 3e-3):
                    div = 30 + int(lr * 1e4) if (norm == "post" and w == 0 and post_nowarmup_diverges) else None
                    final = 3.0 + (0.3 if norm == "post" else 0) + (0.2 if lr > 2e-3 else 0) - (0.1 if w else 0)
                    name = f"norm-{norm}-{'warmup' if w else 'nowarmup'}-lr{lr:g}"
                    runs.append(train_run(out, name, "norm", {"norm": norm, "warmup": w, "lr": lr}, final, div,
                                          spike_at=50 if norm == "post" else None))
    if "init" in presets:
        for init, scale in (("zero", False), ("normal", False), ("gpt2", True)):
            final = {"zero": 5.0, "normal": 3.2 if gpt2_better else 3.0, "gpt2": 3.0 if gpt2_better else 3.2}[init]
            sym = None
            if init == "zero":
                sym = {"layer": 0, "units": 128, "distinct_units": zero_distinct,
                       "spread": 0.0 if zero_distinct == 1 else 0.01, "weight_rms": 0.0 if zero_distinct == 1 else 0.01,
                       "relative_spread": 0.0 if zero_distinct == 1 else 1.0}
            runs.append(train_run(out, f"init-pre-{init}", "init", {"norm": "pre", "init": init,
                                                                    "residual_scale": scale}, final, None, sym))
    if "depth" in presets:
        for depth in (2, 8):
            for norm in ("pre", "post"):
                for scale in (True, False):
                    div = 20 if (norm == "post" and not scale and depth == 8) else None
                    final = 3.0 + (0.2 if norm == "post" else 0) - 0.05 * depth
                    runs.append(train_run(out, f"depth-L{depth}-{norm}-{'scale' if scale else 'noscale'}", "depth",
                                          {"depth": depth, "norm": norm, "residual_scale": scale}, final, div))
    study = {"format": "gpt2lab study", "version": 1, "created": "t0", "updated": "t1", "threads": 2,
             "presets": presets, "command": "gpt2lab study --preset all --budget tiny",
             "budget": {"name": "tiny", "sample": {"tokens": 16, "temperature": 0.8, "top_k": 40}},
             "data": {"dir": "d", "tokenizer": "t", "tokenizer_identity": "t sha256:0", "vocab_size": 300},
             "runs": runs}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(study, f)


def report(out, env=None, figures=False):
    """tools/report OUT, by default with --no-figures: drawing the PNGs was
    most of this test's time, and only the study of every preset (the
    "paper" one) checks them."""
    r = harness.command([sys.executable, REPORT, out, *([] if figures else ["--no-figures"])], env=env)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        pytest.fail("tools/report failed")
    with open(os.path.join(out, "report.md")) as f:
        return f.read()


def section(md, title):
    """The text of the section headed '## TITLE...' up to the next '## '."""
    at = md.index("## " + title)
    end = md.find("\n## ", at + 3)
    return md[at:end if end >= 0 else len(md)]


ALL = ["grad-at-init", "norm", "init", "depth"]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    """One scratch folder for the module's studies."""
    return str(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def v1(tmp):
    """The reports of two version 1 studies whose data differ in every finding."""
    # 1. Version 1 studies (each run its setting's only seed): still drawn,
    #    their findings follow the data, and no verdict is stated.
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    make_v1_study(a, post_grows=True, post_nowarmup_diverges=True, zero_distinct=1, gpt2_better=True, presets=ALL)
    make_v1_study(b, post_grows=False, post_nowarmup_diverges=False, zero_distinct=128, gpt2_better=False, presets=ALL)
    ma, mb = report(a), report(b)
    return ma, mb


def test_v1_findings_follow_the_data(v1):
    ma, mb = v1
    assert "Post-LN, no warmup: diverged in 2 of 2 runs (at lr 1e-3, 3e-3)." in ma, \
        "v1 A: Post-LN without warmup diverged in 2 of 2 runs"
    assert "Post-LN, no warmup: diverged in 0 of 2 runs." in mb, "v1 B: Post-LN without warmup diverged in 0 of 2"
    assert ("Pre-LN, no warmup: diverged in 0 of 2 runs." in ma
            and "Pre-LN, no warmup: diverged in 0 of 2 runs." in mb), \
        "v1: Pre-LN never diverged in either"
    # Post-LN's FFN norms 0.1·(1, 1.5, 2, 2.5) in A: slope of ln over layers 0..3 = Σ(i − 1.5)·ln(1 + 0.5i) / 5;
    # flat in B. One seed: shown, nothing judged; no per-matrix norms in these runs: W¹, W² '–'.
    a_slope = sum((i - 1.5) * math.log(1 + 0.5 * i) for i in range(4)) / 5
    assert (f"| 4 | Post-LN | 1 | – | – | {a_slope:+.4f} (1 seed) (few seeds) |" in ma and
            "| 4 | Post-LN | 1 | – | – | 0.0000 (1 seed) (few seeds) |" in mb), \
        f"v1: the grad-at-init slope is computed from the data (A: {a_slope:+.4f} per layer, B: flat)"
    assert "fewer than 3 seeds per setting, so no pattern is stated" in ma, \
        "v1: one seed per setting -> no Xiong et al. pattern stated"
    assert ("first layer's MLP has 1 distinct hidden unit out of 128" in ma and
            "The symmetry is never broken" in ma), \
        "v1 A: zero init's single distinct unit is reported"
    assert "first layer's MLP has 128 distinct hidden units out of 128" in mb and "never broken" not in mb, \
        "v1 B: the symmetry sentence follows the measured count"
    assert ("pre-LN ranking by final validation loss (mean ± sd over seeds; a diverged seed counts as ln V): "
            "gpt2 3.050 (1 seed), normal 3.250 (1 seed)" in ma
            and "normal 3.050 (1 seed), gpt2 3.250 (1 seed)" in mb), \
        "v1: the init ranking follows the data"
    assert "gpt2 vs normal: 3.050 vs 3.250 (1 vs 1 seeds; 3 needed to state a difference)" in ma, \
        "v1: a single-run comparison states no difference"
    assert "post-LN, no scale: a seed diverged at 1 depth (8 layers)" in ma, \
        "v1 depth: divergence per variant and depth"
    assert "norm: 0 of 8 runs diverged; 4 relative-jump spikes." in mb, \
        "v1: relative-jump spikes are counted from the metrics"
    verdicts = section(ma, "Verdicts")
    # (a study.json without rules is registered under every claim's v1,
    # shown beside the current rule where that changed)
    assert verdicts.count("| not tested |") == CLAIMS + len(CHANGED) and "fewer than 3 seeds per setting" in verdicts, \
        "v1: every verdict is 'not tested' (fewer than 3 seeds)"
    assert "One seed per setting" in ma, "v1: Method says there is one seed per setting"
    assert ma != mb, "different data, different report"


def test_v1_one_preset_names_the_others(tmp):
    # Only one preset: the other sections say they were not run.
    c = os.path.join(tmp, "c")
    make_v1_study(c, post_grows=True, post_nowarmup_diverges=True, zero_distinct=1, gpt2_better=True, presets=["norm"])
    mc = report(c)
    assert (mc.count("Not run in this study: grad-at-init, lr-edge, init, depth, translation") == 1 and "## init:" not
            in mc and "## norm:" in mc and "## Text samples" in mc and "init (not run)" in mc and
            "## translation:" not in mc and "| translation not run | translation (not run) |" in mc), \
        "a partial study draws its own sections and names the others once, with no empty sections"


@pytest.fixture(scope="module")
def paper(tmp):
    """A study v2 with seeds (the paper's world), reported with figures."""
    # 2. A study v2 with seeds.
    p = os.path.join(tmp, "paper")
    syn.make_study(p, syn.World.paper())
    mp = report(p, figures=True)
    return p, mp


def test_v2_sections_and_figures(paper):
    p, mp = paper
    for title in ("grad-at-init: gradient norms at initialization", "norm: Pre-LN vs Post-LN, warmup and learning rate",
                  "lr-edge: learning-rate stability edge", "init: initialization schemes and the residual scale",
                  "depth: Pre-LN vs Post-LN as depth grows", "translation: Pre-LN vs Post-LN on machine translation",
                  "Text samples", "Divergence and loss spikes", "Method"):
        assert f"\n## {title}\n" in mp, f"v2: section '{title}'"
    figures = ["grad_at_init_profiles.png", "grad_at_init_residual.png", "norm_loss.png", "norm_grad_norm.png",
               "lr_edge.png", "lr_edge_probes.png", "init_loss.png", "init_layer_grad_norms.png", "init_symmetry.png",
               "depth_final_loss.png", "depth_loss.png", "samples_quality.png", "translation_val_loss.png",
               "translation_scores.png"]
    assert all(f"(figures/{f})" in mp and os.path.getsize(os.path.join(p, "figures", f)) > 1000 for f in figures), \
        "v2: every figure, the two lr-edge ones included"
    assert "/somewhere" not in mp and "--out ." in mp, "v2: no absolute path (the command's --out is shown as .)"


def test_no_figures_leaves_out_the_figure_blocks(paper, tmp):
    mp = paper[1]
    # --no-figures: the same text, each figure block (image, caption) left
    # out, and no figure written.
    plain_dir = os.path.join(tmp, "paper-text")
    syn.make_study(plain_dir, syn.World.paper())
    plain = report(plain_dir)
    with open(os.path.join(plain_dir, "report.html")) as f:
        plain_html = f.read()
    assert (re.sub(r"!\[[^\]\n]*\]\(figures/[^)\n]*\)\n\n\*[^\n]*\*\n\n", "", mp) == plain and "figures/" not in plain
            and "<img" not in plain_html and not os.path.exists(os.path.join(plain_dir, "figures"))), \
        "--no-figures: the same report.md without the figure blocks, no <img> in report.html, no figures folder"


def test_v2_verdicts_come_first(paper):
    mp = paper[1]
    assert mp.index("## Verdicts") < mp.index("## Summary of findings") < mp.index("## grad-at-init"), \
        "v2: the verdict table is at the top"


def test_v2_norm_section(paper):
    mp = paper[1]
    norm = section(mp, "norm:")
    assert "| Post-LN, no warmup, lr 1e-3 | 3 | 0/3 | 1, 1, 1 | 1, 1, 1 | 5.050 ± 0.010 | 0/3 |" in norm, \
        "v2 norm: one row per setting, diverged and spike counts per seed, final loss mean ± sd, plateau seeds"
    assert "Post-LN, warmup 25%, lr 1e-3 3/3" in norm and "Post-LN, no warmup, lr 4e-3 0/3" in norm, \
        "v2 norm: per setting, how many seeds left the unigram plateau"
    assert "warmup 0%, 5%, 25% of the steps" in norm, "v2 norm: the three warmup lengths"
    assert "Post-LN, no warmup: diverged in 0 of 6 runs; 6 loss spikes that recovered (the trainer's count)." in norm, \
        "v2 norm: divergence and the trainer's spikes per placement and warmup"


def test_v2_lr_edge_section(paper):
    mp = paper[1]
    edge = section(mp, "lr-edge:")
    assert ("| Pre-LN | no | off | 3 | no mean (1 at its top) | – | 8e-3, 1.6e-2, ≥ 3.2e-2 | 3/3 |" in edge and
            "| Post-LN | 25% | 1 | 3 | 8e-3 | 1.00 | 4e-3, 8e-3, 1.6e-2 | 3/3 |" in edge), \
        "v2 lr-edge: geometric mean, sd in octaves and the per-seed edges per placement × warmup × clipping"
    assert "0 of 24 searches are non-monotone" in edge, "v2 lr-edge: monotone searches are counted"
    assert ("Max stable lr, Pre-LN vs Post-LN, warmup 25%, no clipping" in edge and
            "[8e-3, 1.6e-2, ≥ 3.2e-2] vs 8e-3 ± 1.00 oct (censored: not resolved, the bound does not decide it)"
            in edge and "Δ +1.00 oct" not in edge), \
        "v2 lr-edge: a seed at the grid's top is a bound, not averaged; overlapping seeds -> not resolved"


def test_v2_grad_at_init_section(paper):
    mp = paper[1]
    gai = section(mp, "grad-at-init:")
    # Post-LN grows by 1.3 ± 0.01 per layer over 3 seeds: slopes ln 1.29, ln 1.30, ln 1.31, mean ± t(2 dof)·sd/√3
    # (t = 4.302653); W¹, W² and the FFN sum have the same slopes (fixed fractions of each other).
    post = [math.log(1.3 + d) for d in (-0.01, 0.0, 0.01)]
    ci = f"{statistics.mean(post):+.4f} ± {4.302653 * statistics.stdev(post) / math.sqrt(3):.4f} (grows)"
    at = gai.index("#### Embedding sqrt, init he")
    assert (f"| 8 | Post-LN | 3 | {ci} | {ci} | {ci} | 6.28 ± 0.34 | W¹ yes; W² yes |" in gai[at:] and
            "| 8 | Pre-LN | 3 |" in gai[at:] and "(shrinks) | 0.70 ± 0.05 |  |" in gai[at:]), \
        f"v2 grad-at-init: slope mean ± 95% CI per placement and depth, the ratio beside ({ci})"
    assert "Embedding settings compared over 8 (depth, init, matrix) settings" in gai, \
        "v2 grad-at-init: embeddings compared"


def test_v2_init_and_depth_sections(paper):
    mp = paper[1]
    init = section(mp, "init:")
    assert ("zero init: after 40 steps the first layer's MLP has 1 distinct hidden unit out of 128 in every seed"
            in init), \
        "v2 init: the zero-init symmetry over seeds"
    depth = section(mp, "depth:")
    assert ("pre-LN, final validation loss without the residual scale minus with it (per seed, mean ± sd): "
            "2L +0.100 ± 0.017, 8L +0.400 ± 0.017" in depth), \
        "v2 depth: Δ(off − on) per depth, mean ± sd"


def test_v2_divergence_and_method(paper):
    mp = paper[1]
    div = section(mp, "Divergence")
    assert "| lr-edge | 116 | 20 | 0 in 0 runs | 0 |" in div and "| norm | 36 | 0 | 18 in 18 runs | 18 |" in div, \
        "v2: diverged runs, the trainer's spikes and the relative-jump spikes per preset"
    assert "3 seeds per setting (1337, 1338, 1339)" in mp, "v2 Method: the seeds"


def test_v2_translation_section(paper):
    mp = paper[1]
    # The translation section, from the same synthetic study.
    mt = section(mp, "translation:")
    assert ("900 train, 40 valid and 10 test pairs" in mt and "3 gettext catalogs of 2 Debian packages" in mt
            and "Packages: coreutils 9.1-1, tar 1.34." in mt and "Tokenizer: t sha256:1" in mt), \
        "translation: pair counts per split, catalogs, packages and tokenizer"
    assert "```\n<|endoftext|>English: {source}\nFrench: {target}<|endoftext|>\n```" in mt, \
        "translation: the prompt format"
    assert ("| too_long | 40 | dropped: a side over the length cap |" in mt and "| kept | 950 |" in mt
            and "The counts reconcile" in mt), \
        "translation: every cleaning rule with its count, reconciled"
    post_xavier = [syn.mt_paper("scratch", "post", "xavier", 0.0, i) for i in range(3)]
    done = [x for x in post_xavier if x is not None]
    assert (f"| from scratch, Post-LN, init xavier, no warmup | 3 | 2/3 | 1/3 | 0 | "
            f"{statistics.mean(done):.2f} ± {statistics.stdev(done):.2f} [2 seeds] | "
            f"{statistics.mean(10 + 2 * x for x in done):.2f} ± {statistics.stdev([10 + 2 * x for x in done]):.2f} "
            f"[2 seeds] |" in mt and
            "| from scratch, Post-LN, init gpt2, no warmup | 3 | 3/3 | 0/3 | 0 | 8.00 ± 1.00 | 26.00 ± 2.00 | "
            "4.600 ± 0.050 | 3/30 |" in mt and
            "| pre-training, Pre-LN | 3 | 3/3 | 0/3 | 0 | – | – | 4.000 ± 0.020 |" in mt), \
        "translation: BLEU, chrF, val loss mean ± sd per setting over the seeds that completed"
    as_zero = [x or 0.0 for x in post_xavier]
    assert (f"init xavier, test Pre-LN vs Post-LN: BLEU 20.00 ± 1.00 vs {statistics.mean(as_zero):.2f} ± "
            f"{statistics.stdev(as_zero):.2f} (Δ +{20 - statistics.mean(as_zero):.2f}" in mt), \
        "translation: comparisons count a diverged seed as BLEU 0"
    assert ("| from scratch, init gpt2, no warmup | Open file 0 | Ouvrir le fichier 0 | hyp scratch-pre-w0-s0 #0 | "
            "hyp scratch-post-w0-s0 #0 |" in mt and "| fine-tuned, warmup 25% | Open file 2 | Ouvrir le fichier 2 | "
            "hyp finetune-pre-w25-s0 #2 | hyp finetune-post-w25-s0 #2 |" in mt and "Open file 3" not in mt), \
        "translation: the first seed's examples side by side, Pre-LN and Post-LN, without and with warmup"
    assert ("BLEU 12.00 ± 1.73 vs 1.17 ± 1.15 (Δ +10.83, 2·pooled sd 2.94): the placement matters more from "
            "scratch" in mt), \
        "translation: the placement gap |Pre − Post| from scratch vs after pre-training, per seed"
    assert ("Post-LN 8.00 ± 1.00 → 20.00 ± 1.00; Pre-LN 20.00 ± 1.00 → 20.00 ± 1.00; this matches Xiong et "
            "al.'s pattern (confirmed)" in mt and "[translation] Xiong et al. (2020)" in section(mp, "Summary")), \
        "translation: the comparison with Xiong et al., in the section and the summary"
    top = section(mp, "Verdicts")
    assert (all(f"| {claim} (registered rule {rule}/1) | confirmed |" in top for claim, rule in (
        ("Pre-LN translates better than Post-LN without warmup (Xiong et al.)", "mt-no-warmup"),
        ("Warmup is needed by Post-LN, not by Pre-LN (translation)", "mt-warmup"),
        ("Pre-training narrows the placement gap (translation)", "mt-pretrain-gap"))) and
            "[translation](#translation-pre-ln-vs-post-ln-on-machine-translation)" in top), \
        "translation: its three verdict rows, linked to the section"
    assert all(f"(figures/{f})" in mt for f in ("translation_val_loss.png", "translation_scores.png")), \
        "translation: the loss curves and the score bars are in its section"


def test_reversed_translation_data_disagrees_with_xiong(tmp):
    syn.make_study(os.path.join(tmp, "against"), syn.World.against())
    ma_ = report(os.path.join(tmp, "against"))
    assert ("this disagrees with (or does not show) Xiong et al. (2020)'s result (contradicted)" in ma_ and
            "BLEU Pre-LN higher in 0, lower in 2 of 2 inits [contradicted]" in ma_), \
        "translation, reversed data: the comparison with Xiong et al. says it disagrees"


def test_pretraining_diverged_skips_fine_tunings(tmp):
    # A pre-training that diverged: its fine-tunings are skipped, counted and named.
    sk = os.path.join(tmp, "skipped")
    syn.make_study(sk, syn.World.paper(presets=["translation"], mt_pretrain_diverges=lambda norm, i: norm == "post"
                                       and i == 0))
    ms = report(sk)
    mts = section(ms, "translation:")
    left = [syn.mt_paper("finetune", "post", "pretrained", 0.0, i) for i in (1, 2)]
    assert (f"| fine-tuned, Post-LN, no warmup | 3 | 2/3 | 0/3 | 1 (skipped) | {statistics.mean(left):.2f} ± "
            f"{statistics.stdev(left):.2f} [2 seeds] |" in mts and
            "| pre-training, Post-LN | 3 | 2/3 | 1/3 | 0 |" in mts and
            "Skipped: mt-ft-post-w0-s1 (its pre-training run mt-pretrain-post-s1 is diverged); mt-ft-post-w25-s1"
            in mts), \
        "translation: skipped fine-tunings are counted and named, the rest still drawn"
    assert ("| Pre-training narrows the placement gap (translation) (registered rule mt-pretrain-gap/1) | not tested |"
            in ms and "| Pre-LN translates better than Post-LN without warmup (Xiong et al.) (registered rule "
            "mt-no-warmup/1) | confirmed |" in ms and
            "Not run in this study: grad-at-init, lr-edge, norm, init, depth, atlas (" in ms), \
        "translation alone: two seeds left after a skip are too few for the gap claim; other presets not run"


def test_seed_noise(tmp):
    # Seed noise: equal settings are said to be equal.
    n = os.path.join(tmp, "noise")
    syn.make_study(n, syn.World.noise())
    mn = report(n)
    assert ("within seed noise" in section(mn, "norm:") and "within seed noise" in section(mn, "init:")
            and "within seed noise" in section(mn, "depth:")), \
        "noise: the comparisons say 'within seed noise'"
    assert (section(mn, "Verdicts").count("| not observed at this scale |") ==
            CLAIMS - ATLAS_CLAIMS + len([k for k in CHANGED if k not in ATLAS])), \
        "noise: no verdict is stated"
    assert ("BLEU no resolved placement gap [not observed at this scale]" in section(mn, "Verdicts") and
            "no placement gap in either" in section(mn, "translation:")), \
        "noise: no placement gap from scratch or after pre-training, so nothing narrows"


def test_non_monotone_search(tmp):
    # A non-monotone search (an lr trains above one that did not) is shown.
    nm = os.path.join(tmp, "nonmonotone")
    syn.make_study(nm, syn.World.paper(presets=["lr-edge"], probe=lambda norm, wf, clip, i, k: k in (0, 2)))
    mm = report(nm)
    assert "24 of 24 searches are non-monotone" in mm and "1e-3 ✓ 2e-3 ✗ 4e-3 ✓ 8e-3 ✗" in mm, \
        "lr-edge: non-monotone searches are counted and every probe listed"


@pytest.fixture(scope="module")
def with_width(paper, tmp):
    """The paper's study.json with a preset this report does not know, and its report."""
    p = paper[0]
    # A preset this report does not know: skipped with a note.
    with open(os.path.join(p, "study.json")) as f:
        s = json.load(f)
    s["presets"].append("width")
    s["runs"].append(dict(s["runs"][-1], name="width-1", preset="width", dir="runs/width-1",
                          metrics="runs/width-1/metrics.jsonl"))
    u = os.path.join(tmp, "unknown")
    os.makedirs(u)
    with open(os.path.join(u, "study.json"), "w") as f:
        json.dump(s, f)
    r = harness.command([sys.executable, REPORT, u, "--no-figures"])
    return s, r, u


def test_unknown_preset_is_skipped_with_a_note(with_width):
    s, r, u = with_width
    assert (r.returncode == 0 and "preset 'width', which this report does not know" in r.stderr and
            "## width: not drawn" in open(os.path.join(u, "report.md")).read()), \
        "an unknown preset is skipped with a note"


def test_incomplete_section_becomes_a_note(with_width, tmp):
    s = json.loads(json.dumps(with_width[0]))
    # A run record without the fields a section reads: that section becomes
    # a note, the rest of the report is still written.
    for rec in s["runs"]:
        if rec["preset"] == "depth":
            rec.pop("config", None)
    o = os.path.join(tmp, "odd")
    os.makedirs(o)
    with open(os.path.join(o, "study.json"), "w") as f:
        json.dump(s, f)
    r = harness.command([sys.executable, REPORT, o, "--no-figures"])
    mo = open(os.path.join(o, "report.md")).read() if r.returncode == 0 else ""
    assert (r.returncode == 0 and "section depth could not be drawn (KeyError: 'config')" in r.stderr and
            "This section could not be drawn from this study's data (KeyError: 'config')." in section(mo, "depth:")
            and "## Method" in mo
            and "| The residual scale matters more as depth grows (registered rule scale-depth/1) |" in mo), \
        "a section whose data is incomplete is replaced by a note; the report is still written"


def test_missing_study_json_exits_2(tmp):
    # Missing study.json: exit 2 with a message; no matplotlib: exit 3.
    r = harness.command([sys.executable, REPORT, os.path.join(tmp, "none")])
    assert r.returncode == 2 and "cannot read" in r.stderr, "no study.json -> exit 2 and a clear message"


def test_unknown_option_exits_2(paper):
    p = paper[0]
    r = harness.command([sys.executable, REPORT, p, "--figures"])
    assert r.returncode == 2 and "usage: report OUT [--no-figures]" in r.stderr, "an unknown option -> exit 2, usage"


def test_missing_matplotlib_exits_3(paper, tmp):
    p = paper[0]
    fake = os.path.join(tmp, "no_matplotlib")
    os.makedirs(fake)
    with open(os.path.join(fake, "matplotlib.py"), "w") as f:
        f.write("raise ImportError('hidden by the test')\n")
    r = harness.command([sys.executable, REPORT, p], env={"PYTHONPATH": fake})
    assert r.returncode == 3 and "matplotlib is missing" in r.stderr, "no matplotlib -> exit 3"


def test_atlas_before_its_depth_sweep(tmp):
    # A study committed while the atlas is still selecting lrs has atlas
    # runs but no depth sweep yet: the section says so instead of failing
    # (it once ended in "could not be drawn (IndexError ...)").
    out = os.path.join(tmp, "atlas-early")
    syn.make_study(out, syn.World.paper(presets=["atlas"]))
    with open(os.path.join(out, "study.json")) as f:
        s = json.load(f)
    s["runs"] = [r for r in s["runs"] if r.get("variables", {}).get("arm") != "depth"]
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(s, f)
    md = report(out)
    atlas = section(md, "atlas")
    assert "could not be drawn" not in md and "No depth-sweep run has finished yet" in atlas, atlas[:400]
