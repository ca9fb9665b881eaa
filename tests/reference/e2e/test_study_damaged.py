"""A finished study's folder edited by hand, then rerun: each damaged file
is refused naming the file and the field, with what to do, or measured
again; never an internal error, a 16 GB allocation, or a result taken on
trust (an adversarial hunt, stop 60, found each of these)."""
import copy
import gzip
import hashlib
import json
import os
import shutil
import sys

import pytest

import harness
from shards import study_corpus

REPORT = os.path.join(harness.SOURCE, "tools", "report")


def study(corpus, out, preset):
    return harness.run("study", "--budget", "tiny", "--preset", preset, "--data", corpus, "--out", out, "--threads",
                       "1", "--quiet", "--no-report")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A corpus and one finished tiny study of depth and grad-at-init."""
    tmp = str(tmp_path_factory.mktemp("damaged"))
    corpus = os.path.join(tmp, "corpus")
    study_corpus(corpus)
    base = os.path.join(tmp, "base")
    r = study(corpus, base, "depth,grad-at-init")
    assert r.returncode == 0, r.stderr
    return tmp, corpus, base


def copy_of(finished, name):
    tmp, corpus, base = finished
    out = os.path.join(tmp, name)
    shutil.copytree(base, out)
    return corpus, out


def edit_json(path, edit):
    with open(path) as f:
        j = json.load(f)
    edit(j)
    with open(path, "w") as f:
        json.dump(j, f)


META_EDITS = [
    ("vocab_size as a string", lambda m: m["tokenizer"].update(vocab_size="300"), "tokenizer.vocab_size"),
    ("vocab_size of 2e9", lambda m: m["tokenizer"].update(vocab_size=2000000000), "tokenizer.vocab_size"),
    ("tokenizer as an array", lambda m: m.update(tokenizer=[1]), "'tokenizer'"),
    ("identity as a number", lambda m: m["tokenizer"].update(identity=5), "tokenizer.identity"),
]


@pytest.mark.parametrize("what,edit,field", META_EDITS, ids=[m[0] for m in META_EDITS])
def test_an_edited_meta_json_is_refused_by_field(finished, what, edit, field):
    corpus, out = copy_of(finished, "meta-" + what.replace(" ", "-"))
    dataset = os.path.join(out, "data", "dataset")
    edit_json(os.path.join(dataset, "meta.json"), edit)
    # In the study's own cache, by its digest; passed as --data (a prepared
    # dataset, the user's, not hashed), by its field.
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and "meta.json' is not a file the study built (edited?)" in r.stderr, r.stderr[-300:]
    r = study(dataset, out + "-as-data", "depth")
    assert r.returncode == 1 and "internal error" not in r.stderr, f"{what}: {r.stderr[-300:]}"
    assert "meta.json: field " in r.stderr and field in r.stderr and "delete it and rerun" in r.stderr, \
        f"{what}: {r.stderr[-300:]}"


def test_a_deleted_val_split_is_refused(finished):
    corpus, out = copy_of(finished, "no-val")
    for f in os.listdir(os.path.join(out, "data", "dataset")):
        if f.startswith("val"):
            os.remove(os.path.join(out, "data", "dataset", f))
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and "has no val shards" in r.stderr and "the study rebuilds it" in r.stderr, r.stderr


def test_an_unreadable_source_json_says_to_rebuild(finished):
    corpus, out = copy_of(finished, "source")
    with open(os.path.join(out, "data", "source.json"), "w"):
        pass
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and "is unreadable" in r.stderr and "the study rebuilds it" in r.stderr, r.stderr


def test_an_edited_grad_at_init_result_is_measured_again(finished):
    # An empty object counted as a finished measurement and replaced the
    # good one in study.json; the report then could not draw the section.
    corpus, out = copy_of(finished, "gai")
    with open(os.path.join(out, "study.json")) as f:
        before = {r["name"]: r for r in json.load(f)["runs"] if r["kind"] == "grad-at-init"}
    name = sorted(before)[0]
    path = os.path.join(out, "runs", name, "grad_at_init.json")
    for bad in ({}, {"grad_norm": {"ffn": ["NaN", "x"]}}):
        with open(path, "w") as f:
            json.dump(bad, f)
        r = study(corpus, out, "grad-at-init")
        assert r.returncode == 0 and "measured again" in r.stderr, r.stderr
        with open(os.path.join(out, "study.json")) as f:
            after = {x["name"]: x for x in json.load(f)["runs"]}
        assert after[name]["result"]["grad_norm"] == before[name]["result"]["grad_norm"], \
            f"{bad}: the measurement again gives the same numbers"


REPORT_EDITS = [
    ("data", lambda s: s.update(data=[1]), "field 'data' must be an object"),
    ("budget", lambda s: s.update(budget="x"), "field 'budget' must be an object"),
    ("presets", lambda s: s.update(presets=["depth", "bogus", 5]), "field 'presets'"),
    ("vocab", lambda s: s["data"].update(vocab_size=-1), "field 'data.vocab_size'"),
    ("metrics", lambda s: s["runs"][0].update(metrics=5), ".metrics' must be a path"),
    ("val_loss", lambda s: next(r for r in s["runs"] if r.get("kind") == "train")["outcome"].update(val_loss="abc"),
     ".outcome.val_loss' must be a number"),
    # Well-typed but not what the run's metrics say: the verdicts moved.
    ("val_loss-moved", lambda s: completed_run(s)["outcome"].update(val_loss=1.0),
     ".outcome.val_loss' is 1.0 but its metrics"),
    ("trains-flipped", lambda s: completed_run(s)["outcome"].update(trains=not completed_run(s)["outcome"]["trains"]),
     ".outcome.trains' is"),
    ("status-diverged", lambda s: completed_run(s).update(status="diverged"),
     ".status' is \"diverged\" but runs/"),
    ("gradient-doubled", lambda s: double_first_ffn_gradient(s), ".result' differs from runs/"),
    ("variables-depth", lambda s: completed_run(s)["variables"].update(depth=99), ".variables.depth' is 99 but"),
    ("baseline", lambda s: s["baselines"].update(unigram_val=1.0),
     "'baselines.unigram_val' is 1.0 but the study's data"),
    # Measures of the trained model, kept beside the run since stop 62:
    # an edited judge score moved the fluency verdict unseen.
    ("fluency", lambda s: completed_run(s)["fluency"].update(judge_nll_mean=0.5), ".fluency' differs from runs/"),
    ("sample", lambda s: completed_run(s)["sample"].update(text="edited"), ".sample' differs from runs/"),
    ("symmetry", lambda s: completed_run(s)["symmetry"].pop(), ".symmetry' differs from runs/"),
    ("judge", lambda s: s["judge"].update(val_text_nll=0.1), "field 'judge' differs from judge.json"),
    ("spikes", lambda s: completed_run(s)["outcome"].update(spikes=3), ".outcome.spikes' is 3 but its metrics"),
    ("spike_steps", lambda s: completed_run(s)["outcome"].update(spike_steps=[7]),
     ".outcome.spike_steps' is [7] but its metrics"),
    # A fourth hunt (a helper, stop 62): each of these was drawn as edited.
    ("metrics-path", lambda s: completed_run(s).update(metrics="runs/x/metrics.jsonl"),
     ".metrics' is \"runs/x/metrics.jsonl\", not runs/"),
    ("dir", lambda s: completed_run(s).update(dir="runs/x"), ".dir' is \"runs/x\", not runs/"),
    ("status-failed", lambda s: completed_run(s).update(status="failed"),
     ".status' is \"failed\" but runs/"),
    ("val_curve", lambda s: completed_run(s)["outcome"]["val_curve"][0].__setitem__(1, 3.0),
     ".outcome.val_curve' is \"[...]\" but its metrics"),
    ("seed_index", lambda s: completed_run(s)["variables"].update(seed_index=1), ".variables.seed_index' is 1 but"),
    ("config-and-variables", lambda s: swap_norm(completed_run(s)), ".variables.norm' is"),
    ("margin-removed", lambda s: [s["budget"].pop("trains_margin"), completed_run(s)["outcome"].update(
        trains=not completed_run(s)["outcome"]["trains"])], ".outcome.trains' is"),
    ("data-dir", lambda s: [s["data"].update(dir="elsewhere"), s["baselines"].update(unigram_val=1.0)],
     "'baselines.unigram_val' is 1.0 but the study's data"),
    ("embedding_scale", lambda s: gai_run(s)["variables"].update(embedding_scale="unit"),
     ".variables.embedding_scale' is \"unit\" but"),
    ("config-type", lambda s: completed_run(s).update(config=5), ".config' must be an object"),
    ("preset-type", lambda s: completed_run(s).update(preset=5), ".preset' must be a preset name"),
    # A fifth hunt (a helper, stop 62).
    ("status-removed", lambda s: completed_run(s).pop("status"), ".status' is null but runs/"),
    ("kind-removed", lambda s: completed_run(s).pop("kind"), ".kind' is null but runs/"),
    ("duplicate", lambda s: s["runs"].append(copy.deepcopy(completed_run(s))), "' must be records of runs each named"),
    ("spikes-removed", lambda s: [completed_run(s)["outcome"].pop("spikes"), completed_run(s)["outcome"].update(
        spike_steps=[3])], ".outcome.spikes' is null but its metrics"),
    ("judge-removed", lambda s: s.pop("judge"), "field 'judge' is missing, but judge.json"),
    # A sixth hunt (a helper, stop 63).
    ("unigram-train", lambda s: s["baselines"].update(unigram_train=1.0),
     "'baselines.unigram_train' is 1.0 but the study's data"),
    ("rules-removed", lambda s: s.pop("rules"), "field 'rules' is missing"),
    ("gai-status", lambda s: gai_run(s).update(status="interrupted"),
     ".status' is \"interrupted\" but runs/"),
    ("gai-norm", lambda s: post_norm(gai_run(s)), ".variables.norm' is \"post\""),
]


def post_norm(r):
    """A grad-at-init run's norm made post in its variables and config (its
    folder keeps no config)."""
    r["variables"]["norm"] = r["config"]["model"]["norm"] = "post"


def swap_norm(r):
    norm = {"pre": "post", "post": "pre"}[r["variables"]["norm"]]
    r["variables"]["norm"] = r["config"]["model"]["norm"] = norm


def gai_run(s):
    return next(r for r in s["runs"] if r.get("kind") == "grad-at-init" and
                r["variables"].get("embedding_scale") == "none")


def double_first_ffn_gradient(s):
    r = next(r for r in s["runs"] if r.get("kind") == "grad-at-init")
    r["result"]["grad_norm"]["ffn"][0] *= 2


def completed_run(s):
    return next(r for r in s["runs"] if r.get("kind") == "train" and r["status"] == "completed")


@pytest.mark.parametrize("what,edit,says", REPORT_EDITS, ids=[e[0] for e in REPORT_EDITS])
def test_the_report_refuses_an_edited_study_json_by_field(finished, what, edit, says):
    # Each was a traceback (data, budget, presets, metrics) or a report
    # whose verdicts and sections silently dropped (val_loss).
    corpus, out = copy_of(finished, "report-" + what)
    edit_json(os.path.join(out, "study.json"), edit)
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, f"{what}: {r.stderr[-400:]}"


def test_the_report_does_not_block_on_a_fifo_shard(finished):
    corpus, out = copy_of(finished, "report-fifo")
    edit_json(os.path.join(out, "study.json"), lambda s: s.pop("baselines", None))
    val = next(f for f in os.listdir(os.path.join(out, "data", "dataset")) if f.startswith("val"))
    os.remove(os.path.join(out, "data", "dataset", val))
    os.mkfifo(os.path.join(out, "data", "dataset", val))
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])  # a hang: ctest's timeout
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-400:]


def test_a_metrics_row_rewritten_to_the_same_length_is_refused(finished):
    # Only the metrics' length was recorded: a train loss rewritten digit
    # for digit (not the last, which outcome checks) was read by the rerun
    # and drawn by the report. The final checkpoint records their sha256.
    corpus, out = copy_of(finished, "same-length")
    with open(os.path.join(out, "study.json")) as f:
        name = next(r["name"] for r in json.load(f)["runs"] if r["kind"] == "train" and r["status"] == "completed")
    harness.same_length_edit(os.path.join(out, "runs", name, "metrics.jsonl"))
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    assert r.returncode == 2 and f"runs/{name}/metrics.jsonl: its first" in r.stderr, r.stderr[-600:]
    r = study(corpus, out, "depth,grad-at-init")
    assert r.returncode != 0 and "not the ones its checkpoint recorded" in r.stderr, r.stderr[-600:]


@pytest.mark.parametrize("status,says", [("bogus", "field 'status' is \"bogus\", not one gpt2lab writes"),
                                         (5, "field 'status' is 5, not one gpt2lab writes"),
                                         ("diverged", "field 'status' is \"diverged\" but")])
def test_an_edited_result_status_is_refused(finished, status, says):
    # "bogus" retrained the run from scratch (its checkpoint lost), and a
    # "completed" edited to "diverged" was kept and counted as a divergence.
    corpus, out = copy_of(finished, f"status-{status}")
    with open(os.path.join(out, "study.json")) as f:
        name = next(r["name"] for r in json.load(f)["runs"] if r["kind"] == "train" and r["status"] == "completed")
    edit_json(os.path.join(out, "runs", name, "result.json"), lambda j: j.update(status=status))
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and says in r.stderr and "remove result.json and rerun" in r.stderr, r.stderr[-400:]


def test_a_rule_registered_for_another_claim_is_refused(finished):
    # "faster" registered as "better-final/1" had the report judge one claim
    # by another's rule, labelled as registered.
    corpus, out = copy_of(finished, "rules")
    edit_json(os.path.join(out, "study.json"), lambda s: s["rules"]["faster"].update(id="better-final/1"))
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    assert r.returncode == 2 and "field 'rules.faster.id' is 'better-final/1'" in r.stderr, r.stderr[-400:]


def test_a_trainer_error_is_said_of_the_study_run(finished):
    # A checkpoint's state.json edited to a step past the run's length once
    # said "--steps 12 is below step 1000000": study has no --steps.
    corpus, out = copy_of(finished, "state")
    with open(os.path.join(out, "study.json")) as f:
        name = next(r["name"] for r in json.load(f)["runs"] if r["kind"] == "train" and r["status"] == "completed")
    os.remove(os.path.join(out, "runs", name, "result.json"))
    edit_json(os.path.join(out, "runs", name, "checkpoint", "state.json"), lambda j: j.update(step=1000000))
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and f"study run '{name}'" in r.stderr and "remove it and rerun" in r.stderr, \
        r.stderr[-400:]


def records(out):
    with open(os.path.join(out, "study.json")) as f:
        s = json.load(f)
    return s, {r["name"]: r for r in s["runs"]}


def test_an_edited_outcome_is_taken_from_the_metrics(finished):
    # A finished run's outcome was read from study.json alone: an edited
    # val_loss or trains moved verdicts and selections.
    corpus, out = copy_of(finished, "outcome")
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    edit_json(os.path.join(out, "study.json"),
              lambda s: next(r for r in s["runs"] if r["name"] == name)["outcome"].update(val_loss=1.0, trains=True))
    r = study(corpus, out, "depth")
    assert r.returncode == 0 and "edited?: taken from the metrics" in r.stderr, r.stderr[-400:]
    assert records(out)[1][name]["outcome"] == before[name]["outcome"]


def edit_metrics(out, name, edit):
    """Applies edit(rows) to a run's metrics.jsonl, rewritten in place."""
    path = os.path.join(out, "runs", name, "metrics.jsonl")
    with open(path) as f:
        rows = [json.loads(x) for x in f if x.strip()]
    edit(rows)
    with open(path, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in rows)


def as_if_trained(out, name):
    """The run's final checkpoint records its metrics as they are now (their
    length and sha256), as a run that wrote them would have."""
    path = os.path.join(out, "runs", name, "metrics.jsonl")
    with open(path, "rb") as f:
        data = f.read()
    edit_json(os.path.join(out, "runs", name, "checkpoint", "state.json"),
              lambda st: st.update(metrics_bytes=len(data), metrics_sha256=hashlib.sha256(data).hexdigest()))


def test_an_infinite_perplexity_is_not_taken_for_an_edit(finished):
    # exp(800) is inf, which study.json holds as null: the outcome read back
    # from the metrics never equalled the recorded one, and every rerun of
    # v3 (7 such runs) would have said "edited?".
    corpus, out = copy_of(finished, "inf-ppl")
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    edit_metrics(out, name, lambda rows: next(r for r in reversed(rows) if "val_loss" in r).update(val_loss=800.0))
    edit_json(os.path.join(out, "runs", name, "result.json"), lambda j: j.update(val_loss=800.0))  # a run that did
    as_if_trained(out, name)
    first, second = study(corpus, out, "depth"), study(corpus, out, "depth")
    assert first.returncode == 0 and "edited?" in first.stderr, first.stderr[-400:]
    assert second.returncode == 0 and "edited?" not in second.stderr, second.stderr[-400:]
    assert records(out)[1][name]["outcome"]["val_ppl"] is None


def test_an_edited_checkpoint_config_is_refused(finished):
    # A checkpoint config edited to another placement loaded, and its text
    # samples were recorded as the planned model's, when study.json lacked
    # the run's outcome (a crash between the run and study.json).
    corpus, out = copy_of(finished, "ckpt-config")
    _, before = records(out)
    name = next(n for n, r in before.items()
                if r["kind"] == "train" and r["status"] == "completed" and r["variables"].get("norm") == "pre")
    edit_json(os.path.join(out, "runs", name, "checkpoint", "config.json"), lambda c: c.update(norm="post"))
    edit_json(os.path.join(out, "study.json"), lambda s: next(r for r in s["runs"] if r["name"] == name).pop("outcome"))
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and f"study run '{name}'" in r.stderr and "field 'norm' is \"post\"" in r.stderr \
        and "the study planned \"pre\"" in r.stderr, r.stderr[-400:]


@pytest.fixture(scope="module")
def edge_study(finished):
    tmp, corpus, _ = finished
    base = os.path.join(tmp, "edge-base")
    r = study(corpus, base, "lr-edge")
    assert r.returncode == 0, r.stderr
    return base


def test_an_lr_edge_search_reads_its_probes_back(finished, edge_study):
    # The search replayed its probes from study.json: an edited outcome
    # moved the edge, a deleted probe folder went unnoticed, and a rerun
    # said "0 found done".
    tmp, corpus, _ = finished
    out = os.path.join(tmp, "edge-edited")
    shutil.copytree(edge_study, out)
    study_before, runs_before = records(out)
    edges = study_before["edges"]
    edited, deleted = edges[0]["probes"][-1]["run"], edges[1]["probes"][0]["run"]
    flipped = not runs_before[edited]["outcome"]["trains"]
    edit_json(os.path.join(out, "study.json"),
              lambda s: next(r for r in s["runs"] if r["name"] == edited)["outcome"].update(trains=flipped))
    shutil.rmtree(os.path.join(out, "runs", deleted))
    r = study(corpus, out, "lr-edge")
    probes = sum(len(e["probes"]) for e in edges)
    assert r.returncode == 0 and "edited?: taken from the metrics" in r.stderr and "it runs again" in r.stderr \
        and f"1 runs done now, {probes - 1} found done" in r.stderr, r.stderr[-600:]
    study_after, runs_after = records(out)
    assert study_after["edges"] == edges
    assert runs_after[edited]["outcome"] == runs_before[edited]["outcome"]
    assert runs_after[deleted]["outcome"] == runs_before[deleted]["outcome"]


DAMAGED_FOLDERS = [
    # A folder copied from another run was taken as this one's, its losses
    # reported under this run's settings.
    ("swapped", lambda run, other: (shutil.rmtree(run), shutil.copytree(other, run)),
     "config.json: field '", "the folder holds another run"),
    # A truncated, emptied or deleted metrics.jsonl was believed over
    # result.json (or a deleted one, with an edited study.json, silently).
    ("truncated", lambda run, other: keep_lines(os.path.join(run, "metrics.jsonl"), 5),
     "metrics.jsonl gives steps", "result.json says"),
    ("emptied", lambda run, other: keep_lines(os.path.join(run, "metrics.jsonl"), 0), "metrics.jsonl gives", "says"),
    ("deleted", lambda run, other: os.remove(os.path.join(run, "metrics.jsonl")), "metrics.jsonl gives", "says"),
]


def keep_lines(path, n):
    with open(path) as f:
        lines = f.readlines()
    with open(path, "w") as f:
        f.writelines(lines[:n])


@pytest.mark.parametrize("what,damage,says,then", DAMAGED_FOLDERS, ids=[d[0] for d in DAMAGED_FOLDERS])
def test_a_damaged_run_folder_is_refused(finished, what, damage, says, then):
    corpus, out = copy_of(finished, "folder-" + what)
    _, before = records(out)
    trained = sorted(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    damage(os.path.join(out, "runs", trained[0]), os.path.join(out, "runs", trained[-1]))
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and says in r.stderr and then in r.stderr and "folder and rerun" in r.stderr, \
        f"{what}: {r.stderr[-400:]}"


def test_a_deleted_grad_at_init_file_is_measured_again(finished):
    # With its folder kept, a missing grad_at_init.json left study.json's
    # result (edited here) standing; only a committed study, which has no
    # folder for the run, keeps the result in study.json alone.
    corpus, out = copy_of(finished, "gai-deleted")
    _, before = records(out)
    name = sorted(n for n, r in before.items() if r["kind"] == "grad-at-init")[0]
    os.remove(os.path.join(out, "runs", name, "grad_at_init.json"))
    edit_json(os.path.join(out, "study.json"), double_first_ffn_gradient)
    r = study(corpus, out, "grad-at-init")
    assert r.returncode == 0 and "1 runs done now" in r.stderr, r.stderr[-400:]
    assert records(out)[1][name]["result"]["grad_norm"] == before[name]["result"]["grad_norm"]


def test_a_linked_temp_file_is_not_removed(finished, tmp_path):
    # Temp files of a killed study are removed on the next run: a link of
    # that name (not ours) was removed too.
    corpus, out = copy_of(finished, "temp-link")
    target = tmp_path / "precious.txt"
    target.write_text("x")
    os.symlink(target, os.path.join(out, "study.json.tmp-1"))
    with open(os.path.join(out, "study.json.tmp-2"), "w") as f:
        f.write("left by a killed study")
    r = study(corpus, out, "depth")
    assert r.returncode == 0, r.stderr[-400:]
    assert os.path.islink(os.path.join(out, "study.json.tmp-1")) and target.read_text() == "x"
    assert not os.path.exists(os.path.join(out, "study.json.tmp-2"))


EDGE_EDITS = [
    ("edge", lambda e: e.update(edge=e["probes"][-1]["lr"]), ".edge' is"),
    ("probe-lr", lambda e: e["probes"][-1].update(lr=e["probes"][-1]["lr"] * 2), "which no run is"),
    ("probe-dropped", lambda e: e["probes"].pop(), ".complete' is true but its probes give false by gpt2lab's"),
    ("incomplete", lambda e: e.update(complete=False), ".complete' is false but its probes give true"),
    ("probe-type", lambda e: e["probes"].__setitem__(0, 5), ".probes' must be a list of objects"),
    ("grid-cut", lambda e: [e.update(grid=e["grid"][:2]), e.update(probes=e["probes"][:2])],
     ".grid' is [0.001, 0.002] but budget.lr_edge.grid is"),
    ("setting-removed", lambda e: e.pop("setting"), ".setting' is missing"),
    ("setting-type", lambda e: e.update(setting=5), ".setting' must be an object"),
    ("setting", lambda e: e["setting"].update(norm="post" if e["setting"]["norm"] == "pre" else "pre"),
     ".setting.norm"),
]


@pytest.mark.parametrize("what,edit,says", EDGE_EDITS, ids=[e[0] for e in EDGE_EDITS])
def test_the_report_refuses_an_edited_edge(finished, edge_study, what, edit, says):
    # The report drew an lr-edge search's record as it stood: an edited
    # edge, probe or setting moved the edge table and its verdict.
    tmp, _, _ = finished
    out = os.path.join(tmp, "edge-report-" + what)
    shutil.copytree(edge_study, out)
    edit_json(os.path.join(out, "study.json"), lambda s: edit(s["edges"][0]))
    r = harness.command([sys.executable, REPORT, out, "--no-figures"])
    assert r.returncode == 2 and "field 'edges[0]" in r.stderr and says in r.stderr, f"{what}: {r.stderr[-400:]}"


@pytest.mark.parametrize("damage", ["study.json", "measures.json"])
def test_an_edited_measure_is_measured_again(finished, damage):
    # A finished run's sample, fluency and symmetry were study.json's alone:
    # an edited judge score was kept at every rerun.
    corpus, out = copy_of(finished, "measures-" + damage)
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    if damage == "study.json":
        edit_json(os.path.join(out, "study.json"), lambda s: next(r for r in s["runs"] if r["name"] == name)[
            "fluency"].update(judge_nll_mean=0.5))
    else:
        with open(os.path.join(out, "runs", name, "measures.json"), "w") as f:
            f.write("{not json")
    r = study(corpus, out, "depth")
    assert r.returncode == 0 and "edited?: measured again" in r.stderr, r.stderr[-400:]
    after = records(out)[1][name]
    assert all(after[k] == before[name][k] for k in ("fluency", "sample", "symmetry", "outcome"))
    with open(os.path.join(out, "runs", name, "measures.json")) as f:
        assert json.load(f)["fluency"] == before[name]["fluency"]
    again = study(corpus, out, "depth")
    assert again.returncode == 0 and "edited?" not in again.stderr, again.stderr[-400:]


V3 = os.path.join(harness.SOURCE, "docs", "study", "v3")


@pytest.fixture(scope="module")
def v3():
    """The committed v3 study as the report loads it (its checks pass)."""
    harness.report_package()
    from report import checks, load
    return checks, load.Study(V3)


def bisection(s):
    return next(e for e in s.edges if not e.get("exhaustive") and len(e["probes"]) > 2)


def swap_probes(e):
    e["probes"][1], e["probes"][2] = e["probes"][2], e["probes"][1]


def named(s, prefix):
    return next(r for r in s.runs if r["name"].startswith(prefix))


def first_sweep(s, variant):
    return next(r for r in s.runs if r["variables"].get("arm") == "depth" and r["variables"].get("variant") == variant)


V3_EDITS = [
    ("selected-lr", lambda s: s.s["selections"]["init-post"].update(lr=0.001),
     "'selections.init-post.lr' is 0.001, but its candidates pick 0.002"),
    ("candidate-loss", lambda s: s.s["selections"]["atlas-deepnorm"]["candidates"][2].update(mean_val_loss=6.0),
     "'selections.atlas-deepnorm.candidates[2]' says 2/3 seeds trained, mean loss 6.0, but its runs give 2/3"),
    ("candidate-trained", lambda s: s.s["selections"]["atlas-post-ln"]["candidates"][0].update(trained=3),
     "'selections.atlas-post-ln.candidates[0]' says 3/3"),
    ("selection-trains", lambda s: s.s["selections"]["atlas-post-ln"].update(trains=True),
     "'selections.atlas-post-ln.trains' is true, but its candidates say False"),
    ("second-stage", lambda s: [first_sweep(s, "pre-ln")[k].update(lr=0.002) for k in ("variables", "config")],
     "'selections.atlas-pre-ln.lr' is 0.001, but its second stage ran at 0.002"),
    ("probe-order", lambda s: swap_probes(bisection(s)), ".probes' is ["),
    ("refine-edge", lambda s: bisection(s).update(edge=bisection(s)["grid"][0]), ".edge' is"),
    ("margin", lambda s: s.s["budget"].update(trains_margin=0.5),
     "'budget.trains_margin' is 0.5, but gpt2lab's plateau rule is 0.1"),
    # A run's arm picks its cell of a verdict (a fine-tuned run recorded
    # as from scratch joined the scratch runs).
    ("arm-finetune", lambda s: named(s, "mt-ft-")["variables"].update(arm="scratch"),
     ".variables.arm' is \"scratch\" but a run named mt-ft-"),
    ("arm-removed", lambda s: named(s, "init-postsel-")["variables"].pop("arm"),
     "is of the arm \"select\""),
    ("arm-added", lambda s: named(s, "depth-")["variables"].update(arm="select"), "has no arm"),
    ("arm-atlas", lambda s: named(s, "atlas-sel-")["variables"].update(arm="depth"), "is of the arm \"select\""),
    # A sixth hunt (stop 63): a run moved to another preset's cells (the
    # depth claim became "contradicted"), a grad-at-init run regrouped by
    # its norm, the baselines "tokens to" and a diverged run count with,
    # a perplexity, the precision.
    ("preset", lambda s: named(s, "depth-L2-pre-scale-").update(preset="init"), "is a depth run"),
    ("gai-norm", lambda s: post_norm(named(s, "gai-L6-pre-gpt2-")),
     ".variables.norm' is \"post\" but a run named gai-L6-pre-gpt2-"),
    ("seed-index", lambda s: named(s, "depth-L2-pre-scale-s2")["variables"].update(seed_index=0), "has 1"),
    ("warmup-removed", lambda s: [named(s, "norm-post-w25-")["variables"].pop(k)
                                  for k in ("warmup", "warmup_fraction")],
     ".variables.warmup_fraction' is missing but a run named norm-post-w25-"),
    ("uniform", lambda s: s.s["baselines"].update(uniform=3.0), "'baselines.uniform' is 3.0 but ln 4096"),
    ("val-ppl", lambda s: named(s, "norm-pre-")["outcome"].update(val_ppl=12.0), ".outcome.val_ppl' is 12.0"),
    ("bf16", lambda s: s.s["budget"].update(bf16=True), "'budget.bf16' is true but run"),
    ("bf16-type", lambda s: s.s["budget"].update(bf16="yes"), "'budget.bf16' is \"yes\", not true or false"),
    ("edge-preset", lambda s: bisection(s).update(preset="norm"), ".preset' is \"norm\" but a run named"),
    # A variable no name gives, removed or changed in one seed's run (with
    # its config): the run made a cell of its own (stop 64).
    ("lr-removed", lambda s: named(s, "norm-post-w25-")["variables"].pop("lr"),
     ".variables.lr' is missing but the other seeds of its setting (norm-post-w25-lr"),
    ("clip-removed", lambda s: named(s, "edge-pre-w0-clip0-s2-lr2.5e-5")["variables"].pop("clip"),
     "edge-pre-w0-clip0-s2-lr2.5e-5).variables.clip' is missing but the other seeds"),
    ("clip-changed", lambda s: [named(s, "edge-pre-w0-clip0-s2-lr5e-5")["variables"].update(clip=1.0),
                                named(s, "edge-pre-w0-clip0-s2-lr5e-5")["config"].update(grad_clip=1.0)],
     "variables.clip' is 1.0 but the other seeds of its setting (edge-pre-w0-clip0-lr5e-5) have 0.0"),
]


@pytest.mark.parametrize("what,edit,says", V3_EDITS, ids=[e[0] for e in V3_EDITS])
def test_the_report_refuses_an_edited_selection_of_v3(v3, what, edit, says):
    # The lr a second stage ran at and the candidates the report shows
    # were study.json's alone; v3's own pass (the fixture).
    checks, study = v3
    s = copy.copy(study)
    s.s = copy.deepcopy(study.s)
    s.runs = copy.deepcopy(study.runs)
    s.edges = s.s["edges"] = copy.deepcopy(study.edges)
    edit(s)
    with pytest.raises(ValueError) as e:
        checks.check_outcomes(s)
    assert says in str(e.value) and "(edited?)" in str(e.value), f"{what}: {e.value}"


def report(out):
    return harness.command([sys.executable, REPORT, out, "--no-figures"])


def test_a_deleted_copy_is_refused_then_measured_again(finished):
    # With measures.json gone, an edited score stood in both tools.
    corpus, out = copy_of(finished, "copy-deleted")
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    os.remove(os.path.join(out, "runs", name, "measures.json"))
    edit_json(os.path.join(out, "study.json"), lambda s: next(r for r in s["runs"] if r["name"] == name)[
        "fluency"].update(judge_nll_mean=0.5))
    r = report(out)
    assert r.returncode == 2 and f"has no copy in runs/{name}/measures.json" in r.stderr, r.stderr[-400:]
    r = study(corpus, out, "depth")
    assert r.returncode == 0 and "edited?: measured again" in r.stderr, r.stderr[-400:]
    assert records(out)[1][name]["fluency"] == before[name]["fluency"]
    assert os.path.isfile(os.path.join(out, "runs", name, "measures.json"))


def test_a_deleted_judge_copy_is_refused(finished):
    corpus, out = copy_of(finished, "judge-deleted")
    os.remove(os.path.join(out, "judge.json"))
    edit_json(os.path.join(out, "study.json"), lambda s: s["judge"].update(val_text_nll=9.0))
    r = report(out)
    assert r.returncode == 2 and "field 'judge' has no copy in judge.json" in r.stderr, r.stderr[-400:]


def test_unreadable_metrics_of_a_finished_run_are_refused(finished):
    # Garbage in metrics.jsonl.gz (metrics.jsonl gone) left an edited
    # outcome unchecked: the report read no rows and checked nothing.
    corpus, out = copy_of(finished, "metrics-garbage")
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    os.remove(os.path.join(out, "runs", name, "metrics.jsonl"))
    with open(os.path.join(out, "runs", name, "metrics.jsonl.gz"), "wb") as f:
        f.write(b"not gzip")
    r = report(out)
    assert r.returncode == 2 and f"({name}).metrics' of a finished run" in r.stderr and "unreadable" in r.stderr, \
        r.stderr[-400:]


def test_a_packed_runs_edited_outcome_is_refused_by_its_result(finished):
    # A run whose metrics are packed (a committed study) had its outcome
    # taken from study.json with nothing to check it against.
    corpus, out = copy_of(finished, "packed-outcome")
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    plain = os.path.join(out, "runs", name, "metrics.jsonl")
    with open(plain, "rb") as f, gzip.open(plain + ".gz", "wb") as g:
        g.write(f.read())
    os.remove(plain)
    edit_json(os.path.join(out, "study.json"),
              lambda s: next(r for r in s["runs"] if r["name"] == name)["outcome"].update(val_loss=1.0))
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and f"field 'outcome.val_loss' of run '{name}' is 1.0 but" in r.stderr and \
        "result.json says" in r.stderr, r.stderr[-400:]


def edit_val_shard(out):
    """Rewrites tokens of a val shard in place (its header kept); its path
    and bytes before."""
    d = os.path.join(out, "data", "dataset")
    val = os.path.join(d, next(f for f in sorted(os.listdir(d)) if f.startswith("val")))
    with open(val, "rb") as f:
        before = f.read()
    with open(val, "r+b") as f:
        f.seek(1024)
        f.write(b"\x29\x01" * 8)
    return val, before


def test_an_edited_data_shard_is_refused(finished):
    # Every val token rewritten (the header kept): a rerun measured a new
    # unigram baseline from it and took six probes for trained.
    corpus, out = copy_of(finished, "shard-token")
    edit_val_shard(out)
    r = study(corpus, out, "depth")
    assert r.returncode == 1 and "is not a file the study built (edited?)" in r.stderr and \
        "the study rebuilds it" in r.stderr, r.stderr[-400:]


def test_a_cache_without_its_digests_is_built_again(finished):
    # An older cache (or the digests deleted beside an edited shard): built
    # again, deterministically, so the edit is undone and no run is redone.
    corpus, out = copy_of(finished, "shard-digests")
    val, before = edit_val_shard(out)
    os.remove(os.path.join(out, "data", "files.json"))
    r = study(corpus, out, "depth")
    assert r.returncode == 0 and "preparing shards in" in r.stderr and "0 runs done now" in r.stderr, \
        r.stderr[-400:]
    with open(val, "rb") as f:
        assert f.read() == before, "the rebuilt shard is the one the study trained on"


def test_a_search_record_removed_is_refused(finished, edge_study):
    tmp, _, _ = finished
    out = os.path.join(tmp, "edge-removed")
    shutil.copytree(edge_study, out)
    edit_json(os.path.join(out, "study.json"), lambda s: s["edges"].pop(0))
    r = report(out)
    assert r.returncode == 2 and "is a probe of no lr-edge record in study.json (removed?)" in r.stderr, \
        r.stderr[-400:]


def test_a_run_killed_before_its_analysis_was_saved_is_drawn(finished):
    # Killed between result.json (and measures.json) and study.json's
    # save: the record says interrupted, or has no status yet. Refused as
    # an edit before; a rerun completes it.
    corpus, out = copy_of(finished, "killed")
    s, before = records(out)
    names = [n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed"][:2]

    def unsaved(s):
        a, b = (next(r for r in s["runs"] if r["name"] == n) for n in names)
        for k in ("sample", "fluency", "symmetry", "checkpoint_step", "note"):
            a.pop(k, None)
            b.pop(k, None)
        a.update(status="interrupted", outcome={"status": "interrupted", "steps": 3})
        b.pop("status")
        b.pop("outcome")
    edit_json(os.path.join(out, "study.json"), unsaved)
    r = report(out)
    assert r.returncode == 0, r.stderr[-400:]
    r = study(corpus, out, "depth")
    assert r.returncode == 0 and all(records(out)[1][n]["fluency"] == before[n]["fluency"] for n in names), \
        r.stderr[-400:]
    assert "edited?" not in r.stderr, f"a kill is not an edit: {r.stderr[-400:]}"


@pytest.mark.parametrize("edit,says", [
    (lambda rec: rec.update(status="diverged"), "study.json said diverged where its result.json says completed"),
    (lambda rec: rec.pop("outcome"), "its record in study.json had no outcome"),
], ids=["status", "outcome"])
def test_a_rerun_says_it_restored_an_edited_status(finished, edit, says):
    # No kill leaves a finished status other than the run's, or one without
    # its outcome: the rerun analysed the run again and said nothing of it.
    corpus, out = copy_of(finished, "status-" + says.split()[-1])
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    edit_json(os.path.join(out, "study.json"), lambda s: edit(next(r for r in s["runs"] if r["name"] == name)))
    r = study(corpus, out, "depth")
    assert r.returncode == 0 and says in r.stderr and "edited?: analysed again" in r.stderr, r.stderr[-400:]
    after = records(out)[1][name]
    assert (after["status"], after["outcome"]) == (before[name]["status"], before[name]["outcome"])


@pytest.mark.parametrize("edit,says", [
    (lambda s: completed_run(s).update(preset="init"), "study.json said preset \"init\""),
    (lambda s: gai_run(s).update(status="interrupted"), "study.json said status \"interrupted\""),
    (lambda s: post_norm(gai_run(s)), "study.json said variables.norm \"post\""),
], ids=["preset", "gai-status", "gai-norm"])
def test_a_rerun_says_it_restored_an_edited_plan(finished, edit, says):
    # A rerun rewrote a found run's preset and variables from its plan (and
    # a grad-at-init run's status) and said nothing of the edit.
    corpus, out = copy_of(finished, "plan-" + says.split()[3].split(".")[-1])
    _, before = records(out)
    edit_json(os.path.join(out, "study.json"), edit)
    r = study(corpus, out, "depth,grad-at-init")
    assert r.returncode == 0 and says in r.stderr and "edited?: restored" in r.stderr, r.stderr[-400:]
    after = records(out)[1]
    assert all((after[n]["preset"], after[n]["variables"], after[n]["status"]) ==
               (b["preset"], b["variables"], b["status"]) for n, b in before.items())


def test_a_study_killed_before_its_first_save_is_rerun(finished):
    # study.json is first saved after the first run; a kill before then left
    # data/files.json and judge.json, and the rerun refused the folder as
    # "not a study folder". The state a kill leaves is written, not killed.
    corpus, out = copy_of(finished, "first-save")
    _, before = records(out)
    os.remove(os.path.join(out, "study.json"))
    for name in sorted(os.listdir(os.path.join(out, "runs")))[1:]:
        shutil.rmtree(os.path.join(out, "runs", name))
    assert os.path.exists(os.path.join(out, "data", "files.json")) and os.path.exists(os.path.join(out, "judge.json"))
    r = study(corpus, out, "depth,grad-at-init")
    assert r.returncode == 0 and "edited?" not in r.stderr, r.stderr[-400:]
    after = records(out)[1]
    assert {n: r.get("outcome") for n, r in after.items()} == {n: r.get("outcome") for n, r in before.items()}


def test_copies_kept_unset_still_needs_the_copies(finished):
    corpus, out = copy_of(finished, "copies-unset")
    _, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    os.remove(os.path.join(out, "runs", name, "measures.json"))

    def edit(s):
        s["copies_kept"] = False
        next(r for r in s["runs"] if r["name"] == name)["fluency"].update(judge_nll_mean=0.5)
    edit_json(os.path.join(out, "study.json"), edit)
    r = report(out)
    assert r.returncode == 2 and f"has no copy in runs/{name}/measures.json" in r.stderr, r.stderr[-400:]


def test_a_loss_at_the_limit_does_not_turn_the_spike_check_off(finished):
    # Skipped for every run with a loss within rounding of max_loss, which
    # only packed metrics need.
    corpus, out = copy_of(finished, "spike-limit")
    s, before = records(out)
    name = next(n for n, r in before.items() if r["kind"] == "train" and r["status"] == "completed")
    edit_metrics(out, name, lambda rows: next(x for x in rows if "loss" in x and "val_loss" not in x).update(
        loss=before[name]["config"]["max_loss"]))
    edit_json(os.path.join(out, "study.json"), lambda s: next(r for r in s["runs"] if r["name"] == name)[
        "outcome"].update(spikes=2, spike_steps=[3, 7]))
    r = report(out)
    assert r.returncode == 2 and ".outcome.spikes' is 2 but its metrics" in r.stderr, r.stderr[-400:]
