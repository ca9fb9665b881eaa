"""`gpt2lab study --preset atlas` end to end on the tiny budget (seconds,
meaningless numbers): every normalization variant's depth sweep and
stability-edge search runs, each sweep run records its residual stream at
init and at its end, the report draws the atlas section with its figures
and the four verdict rows, and a rerun redoes nothing."""
import json
import os

import pytest

import harness
from shards import study_corpus

REPORT = os.path.join(harness.SOURCE, "tools", "report")
# tiny: 6 variants x depths {1, 2} x 2 seeds; one search per variant and seed.
VARIANTS = ["pre-ln", "post-ln", "deepnorm", "sandwich", "rezero", "pre-rms", "post-rms", "t-fixup", "pre-small"]
DEPTHS, SEEDS = [1, 2], 2
SWEEP_RUNS = len(VARIANTS) * len(DEPTHS) * SEEDS
SEARCHES = len(VARIANTS) * SEEDS
FIGURES = ["atlas_final_loss.png", "atlas_edge.png", "atlas_residual.png", "atlas_grad_profile.png"]
CLAIMS = ["DeepNorm trains Post-LN where plain Post-LN does not", "ReZero converges faster than Pre-LN/Post-LN",
          "Sandwich/Peri-LN bounds the residual growth of Pre-LN", "RMSNorm matches LayerNorm at lower cost"]


def study(corpus, out, *extra):
    return harness.run("study", "--budget", "tiny", "--preset", "atlas", "--data", corpus, "--out", out,
                       "--threads", "1", "--quiet", *extra, env={"GPT2LAB_REPORT_SCRIPT": REPORT})


@pytest.fixture(scope="module")
def atlas(tmp_path_factory):
    """(the corpus, the study's folder, its study.json)."""
    tmp = str(tmp_path_factory.mktemp("atlas"))
    corpus = os.path.join(tmp, "corpus")
    study_corpus(corpus)
    a = os.path.join(tmp, "a")
    r = study(corpus, a)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        pytest.fail("atlas study failed")
    with open(os.path.join(a, "study.json")) as f:
        s = json.load(f)
    return corpus, a, s


def sweep_of(s):
    return [x for x in s["runs"] if x["variables"].get("arm") == "depth"]


def test_every_run_is_an_atlas_run(atlas):
    s = atlas[2]
    runs = s["runs"]
    assert s["presets"] == ["atlas"] and all(x["preset"] == "atlas" for x in runs), "every run is an atlas run"


def test_depth_sweep_covers_every_variant_depth_and_seed(atlas):
    sweep = sweep_of(atlas[2])
    assert (len(sweep) == SWEEP_RUNS and {x["variables"]["variant"] for x in sweep} == set(VARIANTS) and
            {x["variables"]["depth"] for x in sweep} == set(DEPTHS)), \
        f"the depth sweep has {SWEEP_RUNS} runs: every variant at every depth and seed"


def test_every_stability_edge_search_completes(atlas):
    s = atlas[2]
    probes = [x for x in s["runs"] if x["variables"].get("arm") == "edge"]
    assert (len(s["edges"]) == SEARCHES and all(e["complete"] and e["preset"] == "atlas" for e in s["edges"]) and
            sum(len(e["probes"]) for e in s["edges"]) == len(probes)), \
        f"{SEARCHES} complete stability-edge searches, every probe a recorded run"


def test_sweep_runs_at_the_fixed_lr_without_warmup(atlas):
    s = atlas[2]
    sweep = sweep_of(s)
    assert all(x["config"]["warmup"] == 0 and x["config"]["lr"] == s["budget"]["atlas"]["lr"] for x in sweep), \
        "the sweep runs at the fixed lr without warmup"


def test_each_variant_trains_its_own_placement(atlas):
    sweep = sweep_of(atlas[2])
    models = {x["variables"]["variant"]: x["config"]["model"] for x in sweep}
    assert (models["pre-rms"]["norm_type"] == "rmsnorm" and models["deepnorm"]["norm"] == "deepnorm" and
            models["rezero"]["norm"] == "rezero" and models["sandwich"]["norm"] == "sandwich" and
            models["post-rms"]["norm"] == "post" and models["post-rms"]["norm_type"] == "rmsnorm" and
            models["t-fixup"]["norm"] == "none" and models["t-fixup"]["init"] == "t-fixup" and
            models["pre-small"]["init"] == "small"), \
        "each variant trains its own placement and norm type"


def test_sweep_runs_record_their_residual_stream(atlas):
    out = atlas[1]
    sweep = sweep_of(atlas[2])
    ok = True
    for x in sweep:
        rs = x.get("residual_stream") or {}
        L = x["variables"]["depth"]
        for when in ("init", "final"):
            ok = ok and len((rs.get(when) or {}).get("rms", [])) == L + 1 and \
                len(rs[when]["token_norm"]) == L + 1 and all(v > 0 for v in rs[when]["rms"])
        ok = ok and os.path.exists(os.path.join(out, x["dir"], "residual_stream.json"))
    assert ok, "every sweep run records its residual stream after each block, at init and at its end"


def test_embedding_rms_differs_by_seed_and_init(atlas):
    sweep = sweep_of(atlas[2])
    first = {}
    for x in sweep:
        first.setdefault(x["variables"]["depth"], set()).add(x["residual_stream"]["init"]["rms"][0])
    assert all(len(v) >= 2 for v in first.values()), "the embeddings' RMS differs by seed and variant init"


def test_gradient_profile_is_recorded_from_step_0(atlas):
    out = atlas[1]
    sweep = sweep_of(atlas[2])
    with open(os.path.join(out, sweep[0]["metrics"])) as f:
        diag = [json.loads(line) for line in f if '"grad_norms"' in line]
    assert diag and diag[0]["step"] == 0, "the per-layer gradient profile is recorded from step 0"


@pytest.fixture(scope="module")
def md(atlas):
    return open(os.path.join(atlas[1], "report.md")).read()


def test_report_has_the_atlas_section(md):
    assert "## atlas: normalization variants over depth" in md, "the report has the atlas section"


@pytest.mark.parametrize("fig", FIGURES)
def test_report_shows_the_figure(atlas, md, fig):
    a = atlas[1]
    assert f"(figures/{fig})" in md and os.path.getsize(os.path.join(a, "figures", fig)) > 1000, \
        f"report.md shows figure {fig}"


def test_verdict_table_has_the_atlas_claims(md):
    top = md[:md.index("## Summary of findings")]
    assert all(f"| {c} | not tested |" in top for c in CLAIMS), \
        "the verdict table has the four atlas claims (not tested: the tiny budget has 2 seeds)"


def test_presets_not_run_are_named_once(md):
    assert "Not run in this study: grad-at-init, lr-edge, norm, init, depth, translation" in md, \
        "the presets not run are named once"


def test_rerun_redoes_nothing(atlas, md):
    corpus, a, _ = atlas
    r = study(corpus, a, "--no-report")
    with open(os.path.join(a, "study.json")) as f:
        probes = sum(len(e["probes"]) for e in json.load(f)["edges"])  # read back from their folders too
    assert (r.returncode == 0 and f"0 runs done now, {SWEEP_RUNS + probes} found done" in r.stderr and
            "training" not in r.stderr and "edited?" not in r.stderr), \
        "rerunning the atlas redoes no run and no probe"
