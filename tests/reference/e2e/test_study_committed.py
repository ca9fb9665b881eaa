"""A study committed as it runs (docs/study/v3) carries on elsewhere. A
study stopped by a signal, committed with the project's .gitignore and
cloned to another path, keeps only study.json and each run's result.json
and packed metrics (tools/study_pack.py), never data, checkpoints or full
metrics; the clone resumes to the same results as a study that was never
stopped; its study.json names no path of the machine it ran
on; the report reads the packed metrics; and a run recorded under other
settings is refused instead of being kept."""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

import harness

BIN = harness.BIN
PACK = os.path.join(harness.SOURCE, "tools", "study_pack.py")
REPORT = os.path.join(harness.SOURCE, "tools", "report")
GITIGNORE = os.path.join(harness.SOURCE, "docs", "study", "v3", ".gitignore")
corpus = os.path.join(harness.SOURCE, "data", "sotu")


def study_cmd(out, *extra):
    return [BIN, "study", "--budget", "tiny", "--data", corpus, "--out", out, "--threads", "1", "--quiet",
            "--preset", "grad-at-init,lr-edge,init", "--no-report", *extra]


def git(*args, cwd):
    r = harness.command(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd)
    if r.returncode != 0:
        pytest.fail(f"git {' '.join(args)}: {r.stderr}")
    return r.stdout


def commit_and_clone(study, tmp):
    """The study folder committed as docs/study/v3 of a repository with the
    project's .gitignore, then cloned elsewhere: returns the clone's study
    folder and the files git took."""
    repo = os.path.join(tmp, "repo")
    shutil.copytree(study, os.path.join(repo, "docs", "study", "v3"))
    shutil.copy(GITIGNORE, os.path.join(repo, "docs", "study", "v3", ".gitignore"))
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "study progress", cwd=repo)
    taken = [f.removeprefix("docs/study/v3/") for f in git("ls-files", cwd=repo).split()]
    clone = os.path.join(tmp, "elsewhere", "clone")
    git("clone", "-q", repo, clone, cwd=tmp)
    return os.path.join(clone, "docs", "study", "v3"), [t for t in taken if t != ".gitignore"]


def outcomes(out):
    s = json.load(open(os.path.join(out, "study.json")))
    keep = ("status", "outcome", "fluency", "config", "variables", "result")

    def timeless(v):
        return {k: x for k, x in v.items() if k != "seconds"} if isinstance(v, dict) else v
    return {r["name"]: {k: timeless(r.get(k)) for k in keep} for r in s["runs"]}, s.get("edges"), s.get("judge")


# The steps below follow one study: stopped, packed, committed, cloned,
# resumed elsewhere; each fixture is one step, each test checks one.

@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    if not os.path.isdir(corpus):
        pytest.skip("the default corpus (data/sotu) is not there: scripts/setup.sh fetches it")
    return str(tmp_path_factory.mktemp("committed"))


@pytest.fixture(scope="module")
def uninterrupted(tmp):
    """(the folder of a study never stopped, its exit)."""
    a = os.path.join(tmp, "a")
    return a, harness.command(study_cmd(a))


def test_uninterrupted_study_finishes(uninterrupted):
    r = uninterrupted[1]
    assert r.returncode == 0, "the uninterrupted study finishes" + ("" if r.returncode == 0 else r.stderr[-1500:])


@pytest.fixture(scope="module")
def stopped(tmp):
    """(the folder of a study stopped by a signal after some runs, then packed; study_pack's exit)."""
    b = os.path.join(tmp, "b")
    p = subprocess.Popen(study_cmd(b), stderr=subprocess.PIPE, text=True)
    started = 0
    for line in p.stderr:
        started += line.startswith("[") and ": training (" in line
        if started == 5:
            p.send_signal(signal.SIGTERM)
            break
    p.stderr.read()
    p.wait()
    return b, harness.command([sys.executable, PACK, b])


def test_study_pack_packs_the_finished_runs(stopped):
    r = stopped[1]
    assert r.returncode == 0 and "runs packed" in r.stdout, "tools/study_pack.py packs the finished runs"


def test_study_json_names_no_path_of_this_machine(stopped, tmp):
    b = stopped[0]
    text = open(os.path.join(b, "study.json")).read()
    assert tmp not in text.replace(" --out " + b, ""), "study.json names no path of this machine (but the command)"


@pytest.fixture(scope="module")
def cloned(stopped, tmp):
    """(the clone's study folder, the files git took)."""
    return commit_and_clone(stopped[0], tmp)


def test_clone_with_only_study_json_gz_says_to_unpack(cloned):
    c = cloned[0]
    r = harness.command(study_cmd(c))
    assert r.returncode != 0 and "study_pack.py --unpack" in r.stderr, \
        "a clone holding study.json.gz only: the study says to unpack it first"


def test_report_reads_study_json_gz(cloned):
    c = cloned[0]
    r = harness.command([sys.executable, REPORT, c, "--no-figures"])
    assert (r.returncode == 0 and os.path.exists(os.path.join(c, "report.md")) and
            not os.path.exists(os.path.join(c, "study.json"))), \
        "the report reads a committed study straight from study.json.gz"


@pytest.fixture(scope="module")
def unpacked(cloned):
    """study_pack --unpack's exit on the clone."""
    return harness.command([sys.executable, PACK, "--unpack", cloned[0]])


def test_unpack_restores_study_json(cloned, unpacked):
    c = cloned[0]
    r = unpacked
    assert r.returncode == 0 and os.path.exists(os.path.join(c, "study.json")), \
        "tools/study_pack.py --unpack restores study.json from study.json.gz"


def test_git_keeps_packed_study_results_and_metrics(cloned):
    taken = cloned[1]
    assert (taken and "study.json" not in taken and "study.json.gz" in taken and
            all(t in ("study.json.gz", "judge.json") or t.endswith(("result.json", "metrics.jsonl.gz")) for t in taken)
            and not any("checkpoint" in t or t.startswith("data") for t in taken)), \
        f"what git keeps: study.json packed, the judge's calibration, results and packed metrics ({len(taken)} files)"


@pytest.fixture(scope="module")
def resumed(uninterrupted, cloned, unpacked):
    """(the resumed study's exit, runs finished before the signal, runs it cut short)."""
    c, taken = cloned
    finished_before = sum(t.endswith("result.json") and json.load(open(os.path.join(c, t)))["status"] in
                          ("completed", "diverged") for t in taken)
    interrupted = sum(t.endswith("result.json") for t in taken) - finished_before
    return harness.command(study_cmd(c)), finished_before, interrupted


def test_copy_resumes_elsewhere(resumed):
    r = resumed[0]
    assert r.returncode == 0, \
        ("the copy resumes in a fresh folder elsewhere" +
         ("" if r.returncode == 0 else r.stderr[-1500:]))


def test_grad_at_init_models_are_not_measured_again(uninterrupted, resumed):
    a = uninterrupted[0]
    r = resumed[0]
    gai = sum(x["kind"] == "grad-at-init" for x in json.load(open(os.path.join(a, "study.json")))["runs"])
    assert gai > 0 and r.stderr.count(": done before, kept") == gai, \
        f"the {gai} grad-at-init models are not measured again: their results are in study.json"


def test_runs_finished_before_the_signal_are_kept(uninterrupted, resumed):
    a = uninterrupted[0]
    r, finished_before, _ = resumed
    total = sum(x["kind"] == "train" for x in json.load(open(os.path.join(a, "study.json")))["runs"])
    trained = sum(line.startswith("[") and ": training (" in line for line in r.stderr.splitlines())
    assert finished_before >= 2 and trained == total - finished_before, \
        f"the {finished_before} runs finished before the signal are kept: {trained} of {total} trained now"


def test_run_cut_short_starts_again(resumed):
    r, _, interrupted = resumed
    assert interrupted == 1 and ": resuming" not in r.stderr, \
        "the run the signal cut short (result.json without its checkpoint) starts again"


def test_resumed_outcomes_equal_the_uninterrupted_study(uninterrupted, cloned, resumed):
    ra, ea, ja = outcomes(uninterrupted[0])
    rc, ec, jc = outcomes(cloned[0])
    diff = sorted({k for n in set(ra) | set(rc) for k in ("status", "outcome", "fluency", "config", "variables",
                                                          "result")
                   if (ra.get(n) or {}).get(k) != (rc.get(n) or {}).get(k)})
    assert ra == rc, f"every run's outcome, samples and judge scores equal the uninterrupted study's (differ: {diff})"

    def strip(es):
        return [{k: v for k, v in e.items() if k != "complete"} for e in es or []]
    assert strip(ea) == strip(ec) and ja == jc, "the lr-edge scans and the judge's calibration are the same"


def test_report_draws_the_resumed_copy(cloned, resumed):
    c = cloned[0]
    r = harness.command([sys.executable, REPORT, c, "--no-figures"])
    md = open(os.path.join(c, "report.md")).read() if r.returncode == 0 else ""
    assert r.returncode == 0 and "## lr-edge" in md and "stability edge" in md, \
        "the report draws the resumed copy, reading the packed metrics"


def test_run_recorded_under_other_settings_is_refused(cloned, resumed):
    # Last: it edits the clone's study.json.
    c = cloned[0]
    s = json.load(open(os.path.join(c, "study.json")))
    s["runs"][-1]["config"]["steps"] += 1
    json.dump(s, open(os.path.join(c, "study.json"), "w"))
    r = harness.command(study_cmd(c))
    assert r.returncode != 0 and "was recorded with other settings (steps)" in r.stderr, \
        "a run recorded with other settings than the budget plans is refused, naming the field"


def test_a_large_study_json_is_committed_in_parts(tmp):
    # study.json.gz past 1.5 MiB (v3's reached 2.2 MB) is cut into
    # study.json.gz.1, .2, ...: no committed file over 2 MiB. Unpacking and
    # the report join them; packing a smaller one again leaves one file.
    out = os.path.join(tmp, "large")
    os.makedirs(os.path.join(out, "runs"))
    rng = __import__("random").Random(7)
    runs = [{"name": f"r{i}", "note": "".join(rng.choice("abcdefghij") for _ in range(900))} for i in range(8000)]
    big = json.dumps({"format": "gpt2lab study", "version": 2, "runs": runs})
    with open(os.path.join(out, "study.json"), "w") as f:
        f.write(big)
    subprocess.run([sys.executable, PACK, out], check=True, capture_output=True)
    names = sorted(n for n in os.listdir(out) if n.startswith("study.json.gz"))
    sizes = [os.path.getsize(os.path.join(out, n)) for n in names]
    assert names[0] == "study.json.gz.1" and len(names) >= 2 and max(sizes) <= 3 << 19, (names, sizes)
    os.remove(os.path.join(out, "study.json"))
    sys.path.insert(0, os.path.join(harness.SOURCE, "tools"))
    from report.load import study_text
    assert study_text(out) == big, "the report reads the joined parts"
    r = subprocess.run([sys.executable, PACK, "--unpack", out], capture_output=True, text=True)
    assert r.returncode == 0 and open(os.path.join(out, "study.json")).read() == big, r.stderr
    with open(os.path.join(out, "study.json"), "w") as f:
        f.write(json.dumps({"format": "gpt2lab study", "version": 2, "runs": []}))
    subprocess.run([sys.executable, PACK, out], check=True, capture_output=True)
    assert sorted(n for n in os.listdir(out) if n.startswith("study.json.gz")) == ["study.json.gz"], \
        "a study.json small again is one file, the parts removed"
