"""`gpt2lab study --preset atlas` end to end on the tiny budget (seconds,
meaningless numbers): every normalization variant's depth sweep and
stability-edge search runs, each sweep run records its residual stream at
init and at its end, the report draws the atlas section with its figures
and the four verdict rows, and a rerun redoes nothing."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from shards import study_corpus  # noqa: E402
from harness import expect  # noqa: E402

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


def check_runs(out, s):
    runs = s["runs"]
    sweep = [x for x in runs if x["variables"].get("arm") == "depth"]
    probes = [x for x in runs if x["variables"].get("arm") == "edge"]
    expect(s["presets"] == ["atlas"] and all(x["preset"] == "atlas" for x in runs), "every run is an atlas run")
    expect(len(sweep) == SWEEP_RUNS and {x["variables"]["variant"] for x in sweep} == set(VARIANTS) and
           {x["variables"]["depth"] for x in sweep} == set(DEPTHS),
           f"the depth sweep has {SWEEP_RUNS} runs: every variant at every depth and seed")
    expect(len(s["edges"]) == SEARCHES and all(e["complete"] and e["preset"] == "atlas" for e in s["edges"]) and
           sum(len(e["probes"]) for e in s["edges"]) == len(probes),
           f"{SEARCHES} complete stability-edge searches, every probe a recorded run")
    expect(all(x["config"]["warmup"] == 0 and x["config"]["lr"] == s["budget"]["atlas"]["lr"] for x in sweep),
           "the sweep runs at the fixed lr without warmup")
    models = {x["variables"]["variant"]: x["config"]["model"] for x in sweep}
    expect(models["pre-rms"]["norm_type"] == "rmsnorm" and models["deepnorm"]["norm"] == "deepnorm" and
           models["rezero"]["norm"] == "rezero" and models["sandwich"]["norm"] == "sandwich" and
           models["post-rms"]["norm"] == "post" and models["post-rms"]["norm_type"] == "rmsnorm" and
           models["t-fixup"]["norm"] == "none" and models["t-fixup"]["init"] == "t-fixup" and
           models["pre-small"]["init"] == "small",
           "each variant trains its own placement and norm type")
    ok = True
    for x in sweep:
        rs = x.get("residual_stream") or {}
        L = x["variables"]["depth"]
        for when in ("init", "final"):
            ok = ok and len((rs.get(when) or {}).get("rms", [])) == L + 1 and \
                len(rs[when]["token_norm"]) == L + 1 and all(v > 0 for v in rs[when]["rms"])
        ok = ok and os.path.exists(os.path.join(out, x["dir"], "residual_stream.json"))
    expect(ok, "every sweep run records its residual stream after each block, at init and at its end")
    first = {}
    for x in sweep:
        first.setdefault(x["variables"]["depth"], set()).add(x["residual_stream"]["init"]["rms"][0])
    expect(all(len(v) >= 2 for v in first.values()), "the embeddings' RMS differs by seed and variant init")
    with open(os.path.join(out, sweep[0]["metrics"])) as f:
        diag = [json.loads(line) for line in f if '"grad_norms"' in line]
    expect(diag and diag[0]["step"] == 0, "the per-layer gradient profile is recorded from step 0")


with harness.scratch() as tmp:
    corpus = os.path.join(tmp, "corpus")
    study_corpus(corpus)
    a = os.path.join(tmp, "a")
    r = study(corpus, a)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit("atlas study failed")
    with open(os.path.join(a, "study.json")) as f:
        s = json.load(f)
    check_runs(a, s)

    md = open(os.path.join(a, "report.md")).read()
    expect("## atlas: normalization variants over depth" in md, "the report has the atlas section")
    for fig in FIGURES:
        expect(f"(figures/{fig})" in md and os.path.getsize(os.path.join(a, "figures", fig)) > 1000,
               f"report.md shows figure {fig}")
    top = md[:md.index("## Summary of findings")]
    expect(all(f"| {c} | not tested |" in top for c in CLAIMS),
           "the verdict table has the four atlas claims (not tested: the tiny budget has 2 seeds)")
    expect("Not run in this study: grad-at-init, lr-edge, norm, init, depth, translation" in md,
           "the presets not run are named once")

    r = study(corpus, a, "--no-report")
    expect(r.returncode == 0 and f"0 runs done now, {SWEEP_RUNS} found done" in r.stderr and
           "training" not in r.stderr, "rerunning the atlas redoes no run and no probe")

harness.finish("study_atlas")
