"""`gpt2lab study` end to end on a miniature study (budget `tiny`: small
models, a few steps, a corpus made here): every preset runs, study.json
records every run, the report has every section and figure, a rerun redoes
nothing, runs side by side (--jobs 2 --threads 2, one thread each) give the
runs of --jobs 1 --threads 1 bit for bit, and a study interrupted mid-way
(with --jobs 2) resumes without redoing finished runs and ends with the same
metrics as an uninterrupted one."""
import json
import re
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from shards import study_corpus  # noqa: E402
from harness import BIN, expect, read_metrics, stable  # noqa: E402

# The report script is a folder (python3 tools/report OUT); named here so
# that the test does not depend on the default gpt2lab was built with.
REPORT = os.path.join(harness.SOURCE, "tools", "report")

SECTIONS = ["# gpt2lab study report", "## Verdicts", "## Summary of findings",
            "## lr-edge: learning-rate stability edge", "## grad-at-init: gradient norms at initialization",
            "## norm: Pre-LN vs Post-LN, warmup and learning rate", "## init: initialization schemes and the residual scale",
            "## depth: Pre-LN vs Post-LN as depth grows", "## Text samples", "## Fluency",
            "## Divergence and loss spikes", "## Method"]
FIGURES = ["grad_at_init_profiles.png", "grad_at_init_residual.png", "norm_loss.png", "norm_grad_norm.png",
           "init_loss.png", "init_layer_grad_norms.png", "init_symmetry.png", "depth_final_loss.png",
           "depth_loss.png", "samples_quality.png", "fluency_judge.png", "lr_edge.png", "lr_edge_probes.png"]
# tiny budget, 2 seeds: 2 depths x 2 norms x 4 inits x 3 embedding scales;
# 2 norms x 2 warmups x 2 lrs; 8 init runs; 2 depths x 4 variants. lr-edge:
# 2 norms x 2 warmups x 1 clip searches, each a few probes.
SEEDS = 2
FIXED_RUNS = (48 + 8 + 8 + 8) * SEEDS
EDGE_SEARCHES = 4 * SEEDS


def study(corpus, out, *extra):
    return harness.run("study", "--budget", "tiny", "--data", corpus, "--out", out, "--threads", "1", "--quiet", *extra,
                       env={"GPT2LAB_REPORT_SCRIPT": REPORT})


with harness.scratch() as tmp:
    corpus = os.path.join(tmp, "corpus")
    study_corpus(corpus)

    # 1. The whole miniature study.
    a = os.path.join(tmp, "a")
    r = study(corpus, a, "--preset", "all")
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        raise SystemExit("study failed")
    with open(os.path.join(a, "study.json")) as f:
        s = json.load(f)
    runs = s["runs"]
    edge_runs = [x for x in runs if x["preset"] == "lr-edge"]
    expect(len(runs) - len(edge_runs) == FIXED_RUNS, f"study.json records {len(runs) - len(edge_runs)} fixed runs "
           f"(expected {FIXED_RUNS})")
    expect(len(s["edges"]) == EDGE_SEARCHES and all(e["complete"] for e in s["edges"]),
           f"study.json records {EDGE_SEARCHES} complete lr-edge searches")
    probes = sum(len(e["probes"]) for e in s["edges"])
    expect(probes == len(edge_runs) and all(p["run"] in {x["name"] for x in edge_runs}
                                            for e in s["edges"] for p in e["probes"]),
           f"every probe of a search is a recorded run ({probes} probes, {len(edge_runs)} runs)")
    expect(all(isinstance(x["outcome"].get("trains"), bool) and "spikes" in x["outcome"]
               for x in runs if x["kind"] == "train"), "every training run records trains and spikes")
    seeds = {}
    for x in runs:
        key = json.dumps({k: v for k, v in x["variables"].items() if k not in ("seed", "seed_index")}, sort_keys=True)
        seeds.setdefault((x["preset"], key), set()).add(x["variables"]["seed"])
    expect(all(len(v) == SEEDS for (preset, _), v in seeds.items() if preset != "lr-edge"),
           f"every fixed setting runs at {SEEDS} seeds")
    expect(s["version"] == 2 and "unigram_val" in s["baselines"], "study.json is version 2 with its baselines")
    rules = json.loads(harness.command([sys.executable, REPORT, "--rules"]).stdout)
    expect(s.get("rules") == rules and rules["sandwich-growth"]["id"] == "sandwich-growth/2",
           "study.json records the report's verdict rules, registered when the study was created")
    expect("Each claim's rule was registered in study.json when the study was created" in
           open(os.path.join(a, "report.md")).read(), "the report says the rules were registered")
    expect(re.search(r"study: about \S+ left for the study", r.stderr) is not None, "the study logs an overall ETA")
    report = open(os.path.join(a, "report.md")).read()
    expect(tmp not in report and "{\"" not in report,
           "the report names no absolute path of this machine and dumps no raw JSON")
    expect(all(x["status"] in ("completed", "diverged") for x in runs), "every run finished")
    expect(s["presets"] == ["grad-at-init", "lr-edge", "norm", "init", "depth"] and s["budget"]["name"] == "tiny",
           "study.json names the presets and budget")
    train_runs = [x for x in runs if x["kind"] == "train"]
    expect(all("config" in x and "outcome" in x and "variables" in x for x in train_runs),
           "every training run has config, variables and outcome")
    expect(all(os.path.exists(os.path.join(a, x["metrics"])) for x in train_runs), "every run has metrics.jsonl")
    expect(all(x.get("sample") and "distinct_2" in x["sample"] and "repeated_4gram_rate" in x["sample"]
               for x in train_runs if x["status"] == "completed" and x["preset"] != "lr-edge"),
           "every completed run has a text sample with measures")
    expect(all("val_ppl" in x["outcome"] for x in train_runs if x["status"] == "completed"),
           "every completed run has a validation perplexity")
    gai = [x for x in runs if x["kind"] == "grad-at-init"]
    expect(all(len(x["result"]["grad_norm"]["ffn"]) == x["variables"]["depth"] and
               len(x["result"]["residual_rms"]) == x["variables"]["depth"] + 1 for x in gai),
           "grad-at-init records per-layer gradient norms and residual RMS")
    zero = [x for x in runs if x["name"] == "init-pre-zero-s1"][0]
    normal = [x for x in runs if x["name"] == "init-pre-normal-s1"][0]
    expect(zero["symmetry"][0]["distinct_units"] == 1 and zero["symmetry"][0]["spread"] == 0.0,
           "zero init: the MLP hidden units stay identical (1 distinct unit, spread 0)")
    expect(normal["symmetry"][0]["distinct_units"] == normal["symmetry"][0]["units"],
           "normal init: every hidden unit distinct")

    with open(os.path.join(a, "report.md")) as f:
        md = f.read()
    with open(os.path.join(a, "report.html")) as f:
        page = f.read()
    for sec in SECTIONS:
        expect(sec in md, f"report.md has section '{sec}'")
    for fig in FIGURES:
        expect(f"(figures/{fig})" in md and os.path.getsize(os.path.join(a, "figures", fig)) > 1000,
               f"report.md shows figure {fig}")
    expect(page.count("src='data:image/png;base64,") == len(FIGURES), "report.html inlines every figure")
    # `all` is every preset but translation, which needs the gettext catalogs.
    expect(md.count("Not run in this study") == 1 and "Not run in this study: translation" in md,
           "no preset section of `all` is empty; translation is listed as not run")
    expect("zero init: after 12 steps the first layer's MLP has 1 distinct hidden unit" in md,
           "the findings state the zero-init symmetry with its measured number")

    # 1b. Two runs at a time, one thread each: every run, search and
    #     measurement as in the sequential study on one thread, in the same
    #     order in study.json.
    j = os.path.join(tmp, "j")
    r = study(corpus, j, "--preset", "all", "--jobs", "2", "--threads", "2", "--no-report")
    expect(r.returncode == 0, "the study with --jobs 2 finishes" + ("" if r.returncode == 0 else r.stderr[-2000:]))
    with open(os.path.join(j, "study.json")) as f:
        sj = json.load(f)
    expect(sj["jobs"] == 2 and sj["threads_per_run"] == 1 and "--jobs 2" in sj["command"] and
           all(x["threads"] == 1 for x in sj["runs"]), "study.json records 2 jobs of 1 thread, per run too")
    expect([x["name"] for x in sj["runs"]] == [x["name"] for x in runs] and
           [x["name"] for x in sj["edges"]] == [x["name"] for x in s["edges"]],
           "study.json lists the runs and searches in the sequential study's order")
    without_seconds = lambda d: {k: v for k, v in d.items() if k != "seconds"}
    outcome = lambda x: (x["status"], x.get("outcome"), x.get("symmetry"), x.get("sample"),
                         x.get("checkpoint_step"), without_seconds(x.get("result", {})))
    differ = [x["name"] for x, y in zip(runs, sj["runs"]) if outcome(x) != outcome(y) or
              (x["kind"] == "train" and stable(read_metrics(os.path.join(a, x["dir"]))) !=
               stable(read_metrics(os.path.join(j, y["dir"]))))]
    expect(not differ, f"every run's metrics, outcome, sample and gradients are bit-identical to --jobs 1 "
           f"(differ: {differ[:5]})")
    expect(sj["edges"] == s["edges"], "the lr-edge searches probe the same rates and find the same edges")

    # 2. A rerun redoes nothing.
    mtimes = {x["name"]: os.path.getmtime(os.path.join(a, x["metrics"])) for x in train_runs}
    r = study(corpus, a, "--preset", "all", "--no-report")
    expect(r.returncode == 0 and f"0 runs done now, {FIXED_RUNS} found done" in r.stderr and "training" not in r.stderr,
           "rerunning a finished study redoes no run")
    expect(all(os.path.getmtime(os.path.join(a, x["metrics"])) == mtimes[x["name"]] for x in train_runs),
           "no run's metrics were rewritten")

    # Without matplotlib the runs stand and the message says what to install.
    fake = os.path.join(tmp, "no_matplotlib")
    os.makedirs(fake)
    with open(os.path.join(fake, "matplotlib.py"), "w") as f:
        f.write("raise ImportError('hidden by the test')\n")
    r = harness.run("study", "--budget", "tiny", "--data", corpus, "--out", a, "--threads", "1", "--quiet",
                    "--preset", "all",
                    env={"PYTHONPATH": fake, "GPT2LAB_PYTHON": "/usr/bin/python3", "GPT2LAB_REPORT_SCRIPT": REPORT})
    expect(r.returncode != 0 and "matplotlib is missing" in r.stderr and "apt-get install python3-matplotlib"
           in r.stderr, "without matplotlib the study says what to install")

    # 3. Interrupt a study in the middle of its runs, then resume it; two
    #    runs at a time, so the signal stops both.
    b = os.path.join(tmp, "b")
    cmd = [BIN, "study", "--budget", "tiny", "--data", corpus, "--out", b, "--threads", "2", "--jobs", "2",
           "--quiet", "--preset", "norm", "--no-report"]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if line.startswith("[4/16]") and "training" in line:
            p.send_signal(signal.SIGTERM)
            break
    p.stderr.read()
    p.wait()
    done_before = {}
    for name in os.listdir(os.path.join(b, "runs")):
        res = os.path.join(b, "runs", name, "result.json")
        if os.path.exists(res):
            with open(res) as f:
                if json.load(f)["status"] in ("completed", "diverged"):
                    done_before[name] = os.path.getmtime(os.path.join(b, "runs", name, "metrics.jsonl"))
    # Item 4 starts once two have ended. How many more end before the signal
    # arrives depends on scheduling (on a busy machine this test may run late).
    expect(2 <= len(done_before) < 16,
           f"the signal stopped the study after 2 or more of its 16 runs (found {len(done_before)} finished)")
    r = harness.command(cmd)
    expect(r.returncode == 0, "the resumed study finishes")
    kept = r.stderr.count("before, kept")
    expect(kept == len(done_before), f"the rerun keeps the {len(done_before)} finished runs (kept {kept})")
    expect(all(os.path.getmtime(os.path.join(b, "runs", n, "metrics.jsonl")) == t for n, t in done_before.items()),
           "finished runs were not redone")
    with open(os.path.join(b, "study.json")) as f:
        sb = json.load(f)
    expect(len(sb["runs"]) == 16 and all(x["status"] in ("completed", "diverged") for x in sb["runs"]),
           "after the resume all 16 norm runs (8 settings x 2 seeds) are finished")
    same = all(stable(read_metrics(os.path.join(b, x["dir"]))) == stable(read_metrics(os.path.join(a, x["dir"])))
               for x in sb["runs"])
    expect(same, "the interrupted-then-resumed study has the same metrics as the uninterrupted one")

    # 3b. The same for lr-edge searches, whose runs are chosen as they go:
    #     stopped inside a search, the rerun replays the recorded outcomes,
    #     trains only the probes still missing, and ends with the same edges.
    e = os.path.join(tmp, "e")
    cmd = [BIN, "study", "--budget", "tiny", "--data", corpus, "--out", e, "--threads", "1", "--quiet",
           "--preset", "lr-edge", "--no-report"]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    trained_before = 0
    for line in p.stderr:
        trained_before += ": training" in line
        if line.startswith("[3/8]") and "training" in line:
            p.send_signal(signal.SIGTERM)
            break
    p.stderr.read()
    p.wait()
    done_before = {n: os.path.getmtime(os.path.join(e, "runs", n, "metrics.jsonl"))
                   for n in os.listdir(os.path.join(e, "runs"))
                   if os.path.exists(os.path.join(e, "runs", n, "result.json"))
                   and json.load(open(os.path.join(e, "runs", n, "result.json")))["status"] in ("completed", "diverged")}
    r = harness.command(cmd)
    with open(os.path.join(e, "study.json")) as f:
        se = json.load(f)
    total = sum(len(x["probes"]) for x in se["edges"])
    again = r.stderr.count(": training") + r.stderr.count(": resuming")
    expect(r.returncode == 0 and len(done_before) >= 2 and again == total - len(done_before),
           f"the resumed lr-edge study trains only the {total - len(done_before)} missing probes of {total} "
           f"(trained {again})")
    expect(all(os.path.getmtime(os.path.join(e, "runs", n, "metrics.jsonl")) == t for n, t in done_before.items()),
           "finished probes were not redone")
    edges = lambda st: {x["name"]: (x["edge"], x["failed"], [p["lr"] for p in x["probes"]]) for x in st["edges"]}
    expect(edges(se) == edges(s), "the interrupted-then-resumed searches probe and find the same edges")

    # 4. Clear errors.
    r = study(corpus, a, "--preset", "nonsense")
    expect(r.returncode != 0 and "unknown preset 'nonsense'" in r.stderr, "an unknown preset is refused by name")
    r = study(os.path.join(tmp, "missing"), os.path.join(tmp, "c"), "--preset", "norm")
    expect(r.returncode != 0 and "does not exist" in r.stderr, "a missing --data is refused")
    r = harness.run("study", "--budget", "quick", "--data", corpus, "--out", a, "--preset", "norm")
    expect(r.returncode != 0 and "budget 'tiny'" in r.stderr, "a study folder refuses runs of another budget")

    # Without the report tool the rules are recorded as not registered, with a
    # note; the study itself still runs.
    nr = os.path.join(tmp, "no-rules")
    harness.run("study", "--budget", "tiny", "--data", corpus, "--out", nr, "--threads", "1", "--quiet",
                "--preset", "grad-at-init", env={"GPT2LAB_REPORT_SCRIPT": os.path.join(tmp, "no-such-tool")})
    with open(os.path.join(nr, "study.json")) as f:
        snr = json.load(f)
    expect("rules" in snr and snr["rules"] is None and "could not run" in snr.get("rules_note", "") and
           snr["runs"] and not [n for n in os.listdir(nr) if n.startswith("study.json.tmp")],
           "no report tool: study.json records rules null with a note, and the runs still run")

    # 5. An edited or damaged study.json is refused with the field named,
    #    before any data work, and the file is left as it was.
    with open(os.path.join(a, "study.json")) as f:
        good = json.load(f)
    bad_seconds = json.loads(json.dumps(good))
    bad_seconds["runs"][2]["seconds"] = "ten"
    cases = [({"runs": 5}, "field 'runs' must be an array"),
             ({"runs": [{"name": 3}]}, "field 'runs[0].name' must be a string"),
             ({"runs": [], "budget": 5}, "field 'budget' must be an object"),
             ({"runs": [], "presets": ["norm", 1]}, "field 'presets' must be an array of strings"),
             (bad_seconds, "field 'runs[2].seconds' must be a number"),
             ([1, 2], "not a JSON object"),
             ({"runs": [], "version": 1}, "holds a study of format version 1"),
             ({"runs": [], "version": "2"}, "field 'version' must be an integer"),
             ({"runs": [], "edges": {}}, "field 'edges' must be an array")]
    for i, (doc, message) in enumerate(cases):
        d = os.path.join(tmp, f"damaged{i}")
        os.makedirs(d)
        text = json.dumps(doc)
        with open(os.path.join(d, "study.json"), "w") as f:
            f.write(text)
        r = study(corpus, d, "--preset", "norm")
        with open(os.path.join(d, "study.json")) as f:
            kept = f.read() == text
        expect(r.returncode == 1 and message in r.stderr and "use another --out" in r.stderr and kept,
               f"a damaged study.json is refused: {message}" + ("" if r.returncode == 1 else f" (exit {r.returncode}: {r.stderr[-300:]})"))

harness.finish("study")
