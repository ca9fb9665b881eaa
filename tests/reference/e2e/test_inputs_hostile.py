"""Hostile input files: every file a command reads goes through one set
of checks (core/file.h, core/json.h). A FIFO, directory or oversized
--config is refused; TOML arrays, duplicate keys and a BOM are handled; a
run's config.json with model fields gpt2lab cannot represent is refused;
plot escapes run names and reports a hostile metrics line; procfs files
(size 0 reported) are read; messages show ids as written and carry no
nlohmann tag.
"""
import json
import os
import subprocess
import sys

import pytest

import harness

# gpt2's tokenizer, so that text commands run on a tiny model.
GPT2_TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64", "--vocab-size", "50257"]


def run(*args, timeout=120, **kw):
    """gpt2lab ARGS; the timeout is a hang guard (a FIFO read blocks forever)."""
    try:
        return harness.run(*args, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"hung: still running after {timeout} s")


def train_config(tmp, path, timeout=120):
    return run("train", "--config", path, "--data", os.path.join(tmp, "no-data"), "--out", os.path.join(tmp, "o"),
               timeout=timeout)


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def test_fifo_config_is_refused_without_blocking(tmp):
    fifo = os.path.join(tmp, "fifo.toml")
    os.mkfifo(fifo)
    r = train_config(tmp, fifo, timeout=60)
    assert r.returncode == 1 and "not a regular file (a FIFO" in r.stderr, \
        f"train --config FIFO is refused without blocking: {r.stderr.strip()[-160:]}"


def test_directory_config_is_refused(tmp):
    d = os.path.join(tmp, "dir.toml")
    os.mkdir(d)
    r = train_config(tmp, d)
    assert r.returncode == 1 and "is a directory" in r.stderr and "internal error" not in r.stderr, \
        f"train --config DIR is refused: {r.stderr.strip()[-160:]}"


def test_oversized_config_is_refused_by_its_size(tmp):
    big = os.path.join(tmp, "big.toml")
    with open(big, "w") as f:
        f.truncate(200 << 20)  # sparse: 200 MB reported, nothing written
    r = train_config(tmp, big)
    assert r.returncode == 1 and f"is {200 << 20} bytes, more than the {16 << 20}" in r.stderr, \
        f"a 200 MB --config is refused by its size: {r.stderr.strip()[-160:]}"


def test_toml_array_is_refused(tmp):
    r = train_config(tmp, write(os.path.join(tmp, "array.toml"), "lr = 0.001\nsteps = [2, 3]\n"))
    assert r.returncode == 1 and "line 2: 'steps' is an array" in r.stderr, \
        f"steps = [2, 3] is refused, naming key and line: {r.stderr.strip()[-160:]}"


def test_toml_inline_table_is_refused(tmp):
    r = train_config(tmp, write(os.path.join(tmp, "table.toml"), "steps = {a = 1}\n"))
    assert r.returncode == 1 and "line 1: 'steps' is an inline table" in r.stderr, \
        f"an inline table is refused: {r.stderr.strip()[-160:]}"


def test_toml_duplicate_key_is_refused(tmp):
    r = train_config(tmp, write(os.path.join(tmp, "dup.toml"), "steps = 2\n# again\nsteps = 3\n"))
    assert r.returncode == 1 and "'steps' is set twice (lines 1 and 3)" in r.stderr, \
        f"a duplicate key is refused, naming both lines: {r.stderr.strip()[-160:]}"


def test_toml_bom_is_skipped(tmp):
    # With a BOM the file is read as without: the error is the missing data,
    # not the key.
    r = train_config(tmp, write(os.path.join(tmp, "bom.toml"), "\ufeffsteps = 2\n"))
    assert (r.returncode == 1 and "is not an option" not in r.stderr and "\ufeff" not in r.stderr
           and "no-data" in r.stderr), f"a UTF-8 BOM is skipped: {r.stderr.strip()[-160:]}"


RUN_CONFIG = {"steps": 2, "model": {"n_layer": 1, "n_head": 2, "n_embd": 32, "n_positions": 64, "n_ctx": 64,
                                    "vocab_size": 97, "activation_function": "gelu_new", "tie_word_embeddings": True,
                                    "model_type": "gpt2"}}


def test_run_config_json_is_accepted(tmp):
    cfg = RUN_CONFIG
    r = train_config(tmp, write(os.path.join(tmp, "ok.json"), json.dumps(cfg)))
    assert r.returncode == 1 and "no-data" in r.stderr, f"a run's config.json is accepted: {r.stderr.strip()[-160:]}"


@pytest.mark.parametrize("key,value", [("activation_function", "relu"), ("tie_word_embeddings", False),
                                       ("model_type", "llama"), ("n_ctx", 128), ("n_inner", 7),
                                       ("scale_attn_by_inverse_layer_idx", True)])
def test_unrepresentable_model_field_is_refused(tmp, key, value):
    bad = json.loads(json.dumps(RUN_CONFIG))
    bad["model"][key] = value
    r = train_config(tmp, write(os.path.join(tmp, f"{key}.json"), json.dumps(bad)))
    assert r.returncode == 1 and f"{key} is {json.dumps(value)}" in r.stderr, \
        f"config.json model field {key} = {json.dumps(value)} is refused: {r.stderr.strip()[-160:]}"


@pytest.fixture
def plot_env(tmp):
    """(the environment of a stand-in matplotlib, a runs folder with one
    good run named like HTML)."""
    # A stand-in matplotlib: the test is about the text plot writes, and it
    # runs where matplotlib is not installed.
    stub = os.path.join(tmp, "stub", "matplotlib")
    os.makedirs(stub)
    write(os.path.join(stub, "__init__.py"), "def use(name):\n    pass\n")
    write(os.path.join(stub, "pyplot.py"),
          "class Ax:\n    def __getattr__(self, n):\n        return lambda *a, **k: []\n"
          "class Fig:\n    def tight_layout(self):\n        pass\n"
          "    def savefig(self, out, **k):\n        out.write(b'png')\n"
          "def subplots(*a, **k):\n    return Fig(), type('Axes', (), {'flat': [Ax(), Ax(), Ax(), Ax()]})\n")
    env = {"PYTHONPATH": os.path.join(tmp, "stub")}
    runs = os.path.join(tmp, "runs")
    os.makedirs(os.path.join(runs, HTML_NAME))
    write(os.path.join(runs, HTML_NAME, "metrics.jsonl"), ROW)
    return env, runs


HTML_NAME = "<img src=x onerror=alert(1)>"
ROW = json.dumps({"step": 0, "loss": 2.5, "lr": 0.001}) + "\n"


def test_plot_escapes_a_run_name(tmp, plot_env):
    env, runs = plot_env
    out = os.path.join(tmp, "plot.html")
    r = run("plot", os.path.join(runs, HTML_NAME), "--out", out, env=env)
    page = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
    assert r.returncode == 0 and "<h1>&lt;img src=x onerror=alert(1)&gt;</h1>" in page and "<img src=x" not in page, \
        f"plot escapes a run's name in the page: {r.stderr.strip()[-160:]} {page[:160]}"


@pytest.mark.parametrize("label,line,needle", [
    ("deep", "[" * 1_000_000, "metrics.jsonl:2: JSON nested more than 64 levels deep"),
    ("nonnum", json.dumps({"step": 1, "val_loss": "x"}), "metrics.jsonl:2: field 'val_loss' is \"x\", not a number")],
    ids=["deep", "nonnum"])
def test_plot_reports_a_bad_metrics_line(tmp, plot_env, label, line, needle):
    env, runs = plot_env
    os.makedirs(os.path.join(runs, label))
    write(os.path.join(runs, label, "metrics.jsonl"), ROW + line + "\n")
    r = run("plot", os.path.join(runs, label), "--out", os.path.join(tmp, f"{label}.html"), env=env)
    assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr, \
        f"plot reports a {label} metrics line by file and line: {r.stderr.strip()[-200:]}"


def test_plot_replaces_its_output_atomically(tmp, plot_env):
    env, runs = plot_env
    run_dir = os.path.join(runs, HTML_NAME)
    # The page is written whole or not at all (a temp file renamed over it),
    # and an output that cannot be written is an error, not a traceback.
    out = os.path.join(tmp, "again.html")
    write(out, "old page")
    os.chmod(out, 0o644)
    r = run("plot", run_dir, "--out", out, env=env)
    left = [f for f in os.listdir(tmp) if ".tmp-" in f]
    assert (r.returncode == 0 and open(out).read().startswith("<!doctype html>") and not left
           and os.stat(out).st_mode & 0o777 == 0o644), \
        f"plot replaces its output atomically, leaving no temp file: {r.stderr.strip()[-160:]} {left}"


@pytest.mark.parametrize("bad,needle", [("folder.html", "exists and is not a regular file"),
                                        ("no/such/x.html", "cannot write")])
def test_plot_output_that_cannot_be_written_is_an_error(tmp, plot_env, bad, needle):
    env, runs = plot_env
    os.makedirs(os.path.join(tmp, "folder.html"))
    bad = os.path.join(tmp, bad)
    r = run("plot", os.path.join(runs, HTML_NAME), "--out", bad, env=env)
    assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr, \
        f"plot --out {os.path.basename(bad)}: {needle}: {r.stderr.strip()[-160:]}"


def test_score_reads_proc_files_whole():
    r = run("score", "--hyp", "/proc/self/status", "--ref", "/proc/self/status", "--json")
    # (Two reads of the process's status may differ in a value, never in lines.)
    assert r.returncode == 0 and json.loads(r.stdout or "{}").get("lines", 0) >= 20, \
        f"score reads /proc files (size 0 reported) whole: {r.stderr.strip()[-160:]} {r.stdout[:120]}"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny model over GPT-2's tokens."""
    path = str(tmp_path_factory.mktemp("model") / "gpt2tiny")
    run("init", *GPT2_TINY, "--out", path, check=True)
    return path


def test_sample_prompt_file_from_proc(model):
    r = run("sample", "--model", model, "--prompt-file", "/proc/self/cmdline", "--max-new-tokens", "1",
            "--context", "slide", "--format", "ids")
    assert r.returncode == 0 and r.stdout.strip().isdigit(), \
        f"sample --prompt-file /proc/self/cmdline has a prompt: {r.stderr.strip()[-160:]} {r.stdout[:120]}"


def test_eval_text_from_proc(model):
    r = run("eval", "--model", model, "--text", "/proc/self/status", "-B", "1", "-T", "32", "--json")
    assert r.returncode == 0, f"eval --text /proc/self/status is scored: {r.stderr.strip()[-160:]}"


def test_decode_names_a_huge_id_as_written():
    r = run("tokenize", "--decode", input="9223372036854775813\n")
    assert r.returncode == 1 and "9223372036854775813" in r.stderr, \
        f"decode of 2^63 + 5 names the id as written: {r.stderr.strip()[-160:]}"


@pytest.fixture
def translation(tmp):
    data = os.path.join(tmp, "translation")
    os.makedirs(data)
    write(os.path.join(data, "meta.json"),
          json.dumps({"kind": "translation", "translation": {"source_name": "English", "target_name": "French"}}))
    return data


def test_bad_test_jsonl_line_is_named_without_nlohmanns_tag(tmp, model, translation):
    data = translation
    write(os.path.join(data, "test.jsonl"), json.dumps({"source": "a", "target": "b"}) + "\n{\"source\": \n")
    r = run("eval-translation", "--model", model, "--data", data, "--out", os.path.join(tmp, "hyp.json"))
    assert r.returncode == 1 and "test.jsonl:2: not valid JSON" in r.stderr and "[json.exception" not in r.stderr, \
        f"eval-translation names the bad line without nlohmann's tag: {r.stderr.strip()[-160:]}"


def test_deeply_nested_test_jsonl_line_is_refused_before_parsing(tmp, model, translation):
    data = translation
    write(os.path.join(data, "test.jsonl"), "[" * 3_000_000 + "\n")
    r = run("eval-translation", "--model", model, "--data", data, "--out", os.path.join(tmp, "hyp.json"))
    assert r.returncode == 1 and "test.jsonl:1: JSON nested more than 64 levels deep" in r.stderr, \
        f"a 3M-deep test.jsonl line is refused before parsing: {r.stderr.strip()[-160:]}"


def test_python_module_names_integers_past_int64(tmp):
    """The module's integer arguments past int64: named by value, no wrap."""
    where = os.environ.get("GPT2LAB_PY_MODULE_DIR")
    if not where:
        pytest.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")
    code = ("import gpt2lab\n"
            "for v in (2**64 + 1, 2**63 + 5):\n"
            "    try:\n"
            f"        gpt2lab.train(data={os.path.join(tmp, 'none')!r}, out={os.path.join(tmp, 'py')!r}, steps=v)\n"
            "    except gpt2lab.Error as e:\n"
            "        print(e)\n"
            "try:\n"
            "    import numpy\n"
            "except ImportError:\n"
            "    raise SystemExit(0)\n"
            "try:\n"
            "    gpt2lab.Tokenizer.load('gpt2').decode([2**63 + 5])\n"
            "except gpt2lab.Error as e:\n"
            "    print(e)\n")
    r = harness.command([sys.executable, "-c", code], env={"PYTHONPATH": where}, timeout=120)
    assert (r.returncode == 0 and "18446744073709551617 is out of range" in r.stdout
           and "9223372036854775813 is out of range" in r.stdout and "-92233" not in r.stdout), \
        f"gpt2lab.train(steps=2**64 + 1 / 2**63 + 5) names the value: {(r.stdout + r.stderr).strip()[-200:]}"
