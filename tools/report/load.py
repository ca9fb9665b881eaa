"""Reading a study: OUT/study.json, each run's metrics.jsonl, and the token
shards of its data (for the unigram baseline)."""
import glob
import json
import math
import os
import stat
import sys
import zlib

from .stats import smooth

# The one metrics reader of the tools (tools/metrics_file.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import metrics_file  # noqa: E402
import study_pack  # noqa: E402

# The C++ reader's cap (kMaxStudyFileBytes, src/study/study_file.h).
MAX_STUDY_BYTES = study_pack.MAX_STUDY_BYTES


def read_text(path, max_bytes=None):
    """The text of a regular file (a FIFO would block, a device never end),
    of at most max_bytes; OSError or ValueError otherwise."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise ValueError(f"{path} is {st.st_size} bytes, more than the {max_bytes} expected")
        return f.read().decode("utf-8", errors="replace")


def study_text(out):
    """OUT/study.json, or its packed copy study.json.gz or that file's parts
    (a committed study keeps only those: tools/study_pack.py)."""
    plain = os.path.join(out, "study.json")
    if not os.path.exists(plain) and study_pack.packed_parts(out):
        return study_pack.read_packed(out, MAX_STUDY_BYTES).decode("utf-8", errors="replace")
    return read_text(plain, MAX_STUDY_BYTES)


def load_metrics(out, rec):
    """Rows of a run's metrics.jsonl (or its packed copy), split by kind."""
    m = {"steps": [], "loss": [], "grad_norm": [], "tokens": [], "ms": [], "val_steps": [], "val": [], "diag": [],
         "diverged": None}
    if not rec.get("metrics"):
        return m
    try:
        rows = metrics_file.by_kind(metrics_file.read_rows(os.path.join(out, rec["metrics"])))
    except (OSError, EOFError, zlib.error):
        return m
    m["diverged"] = rows["diverged"][-1] if rows["diverged"] else None
    m["diag"] = rows["diag"]
    for r in (r for r in rows["eval"] if "val_loss" in r):
        m["val_steps"].append(r.get("step"))
        m["val"].append(r["val_loss"])
    for r in (r for r in rows["train"] if "loss" in r):
        m["steps"].append(r.get("step"))
        m["loss"].append(r["loss"])
        m["grad_norm"].append(r.get("grad_norm", float("nan")))
        m["tokens"].append(r.get("tokens"))
        m["ms"].append(r.get("ms"))
    return m


def read_shards(directory, split):
    """Token ids of a split's llm.c shards (256 int32 header, then uint16)."""
    import numpy as np
    files = sorted(glob.glob(os.path.join(directory, f"{split}.bin")) +
                   glob.glob(os.path.join(directory, f"{split}_*.bin")))
    parts = []
    for path in files:
        if not os.path.isfile(path):  # a FIFO would block np.fromfile for ever
            raise ValueError(f"{path} is not a regular file")
        header = np.fromfile(path, dtype="<i4", count=256)
        parts.append(np.fromfile(path, dtype="<u2", offset=1024)[: int(header[2])])
    return np.concatenate(parts) if parts else None


def unigram_baseline(directory, vocab):
    """Cross-entropy (nats) of the train split's token frequencies (add-one
    smoothed) on the (val, train) splits: the loss of a model that learned
    which tokens are common and nothing about context. (None, None) when the
    shards are not there."""
    try:
        import numpy as np
        train, val = read_shards(directory, "train"), read_shards(directory, "val")
    except (ImportError, OSError, ValueError):
        return None, None
    if train is None or val is None or not vocab or len(val) == 0:
        return None, None
    counts = np.bincount(train, minlength=vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[val].mean()), float(-logp[train].mean())


def listed_presets(s):
    """The presets a study lists: study.json's "presets" (gpt2lab writes it in
    its canonical order, every preset ever run into the folder), then any
    preset a run names that the list lacks (a hand-made or older file), each
    once."""
    listed = s.get("presets")
    names = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []
    names += [r.get("preset") for r in s.get("runs", []) if isinstance(r, dict) and isinstance(r.get("preset"), str)]
    return list(dict.fromkeys(names))


def check_fields(s):
    """ValueError naming the first field of study.json that is not of the
    type gpt2lab writes, where the report reads it: an edited file is
    refused (exit 2), not a traceback or a section that silently drops."""
    def need(ok, field, what):
        if not ok:
            raise ValueError(f"field '{field}' must be {what} (edited or damaged?)")

    def num(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    for key in ("data", "budget", "baselines", "selections", "judge", "translation_data"):
        need(key not in s or isinstance(s[key], dict) or (key == "baselines" and s[key] is None), key, "an object")
    need("presets" not in s or (isinstance(s["presets"], list) and all(isinstance(p, str) for p in s["presets"])),
         "presets", "a list of preset names")
    vocab = s.get("data", {}).get("vocab_size", 0)
    need(isinstance(vocab, int) and not isinstance(vocab, bool) and 0 <= vocab <= 1 << 24, "data.vocab_size",
         "a vocabulary size")
    need(isinstance(s.get("runs", []), list), "runs", "a list")
    for i, r in enumerate(x for x in s.get("runs", []) if isinstance(x, dict)):
        f = f"runs[{i}] ({r.get('name', '?')})"
        need("metrics" not in r or isinstance(r["metrics"], str), f + ".metrics", "a path")
        for key in ("outcome", "result", "sample", "translation", "fluency"):
            need(key not in r or r[key] is None or isinstance(r[key], dict), f"{f}.{key}", "an object")
        need("symmetry" not in r or isinstance(r["symmetry"], list), f + ".symmetry", "a list")
        o = r.get("outcome") or {}
        for key in ("val_loss", "val_ppl", "tau", "steps"):
            need(key not in o or o[key] is None or num(o[key]), f"{f}.outcome.{key}", "a number")
        need("trains" not in o or isinstance(o["trains"], bool), f + ".outcome.trains", "true or false")
        t = r.get("translation") or {}
        for key in ("bleu", "chrf"):
            need(key not in t or t[key] is None or num(t[key]), f"{f}.translation.{key}", "a number")


def number(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def plateau_limit(s):
    """The val loss at or above which gpt2lab says a run did not train
    (FinishedRunAnalysis::plateau_limit): the unigram baseline gpt2lab
    recorded (the uniform loss without one) less budget.trains_margin;
    None where study.json does not say both."""
    base, margin = s.get("baselines"), number(s.get("budget", {}).get("trains_margin"))
    if not isinstance(base, dict) or margin is None:
        return None
    ref = number(base.get("unigram_val")) or number(base.get("uniform"))
    return None if ref is None else ref - margin


def outcome_problem(r, m, plateau):
    """(field, its value, what the run's metrics record instead) where a
    finished run's outcome is not what its metrics say (gpt2lab computes
    the one from the other), else None. Packed metrics keep 6 significant
    digits."""
    if r.get("status") not in ("completed", "diverged") or not (m["steps"] or m["val"]):
        return None
    o = r.get("outcome") or {}
    if (m["diverged"] is not None) != (r["status"] == "diverged"):
        return "status", r["status"], "a divergence" if m["diverged"] is not None else "no divergence"
    if r["status"] == "diverged":  # its val loss is not read: a diverged run counts as ln V
        return ("outcome.trains", True, "a divergence") if o.get("trains") is True else None
    last = number(m["val"][-1]) if m["val"] else None
    val = number(o.get("val_loss"))
    if (val is None) != (last is None) or (last is not None and abs(val - last) > 1e-5 * max(1.0, abs(last))):
        return "outcome.val_loss", o.get("val_loss"), f"a last val loss of {last}"
    if "trains" in o and plateau is not None:
        trains = val is not None and (r.get("preset") == "translation" or val < plateau)
        if o["trains"] != trains:
            return "outcome.trains", o["trains"], f"a val loss of {val} against the plateau limit {plateau:.6g}"
    return None


def translation_problem(out, r):
    """(field, how) where a translation run's BLEU or chrF in study.json
    differs from its translation-test.json, written with them (where the
    run folder keeps it), else None."""
    t = r.get("translation")
    if not isinstance(t, dict) or not isinstance(t.get("hypotheses"), str) or not isinstance(r.get("dir"), str):
        return None
    name = f"{r['dir']}/{os.path.basename(t['hypotheses'])}"
    try:
        path = os.path.join(out, name)
        scores = json.loads(read_text(path, 256 << 20)) if os.path.isfile(path) else None
    except (OSError, ValueError):
        return "translation", f"was scored, but {name} is unreadable"
    for key in ("bleu", "chrf"):
        if isinstance(scores, dict) and number(scores.get(key)) is not None and t.get(key) != scores[key]:
            return f"translation.{key}", f"is {json.dumps(t.get(key))} but {name} records {scores[key]}"
    return None


# Records study.json holds beside a copy in the run's folder, written with
# it: (field, file).
FILE_BACKED = (("result", "grad_at_init.json"), ("residual_stream", "residual_stream.json"))


def file_backed_problem(out, r):
    """(field, how) where a record study.json holds differs from its copy
    in the run's folder (where kept), else None."""
    if not isinstance(r.get("dir"), str):
        return None
    for field, file in FILE_BACKED:
        path = os.path.join(out, r["dir"], file)
        if field not in r or not os.path.isfile(path):
            continue
        try:
            kept = json.loads(read_text(path, 256 << 20))
        except (OSError, ValueError):
            kept = None
        if kept != r[field]:
            return field, f"differs from {r['dir']}/{file}, written with it"
    return None


# A run's variables (what the report groups it by) and where its config
# says the same: (variable, config path).
VARIABLE_IN_CONFIG = (("lr", ("lr",)), ("seed", ("seed",)), ("warmup", ("warmup",)), ("clip", ("grad_clip",)),
                      ("depth", ("model", "n_layer")), ("residual_scale", ("model", "residual_scale")),
                      ("norm", ("model", "norm")), ("norm_type", ("model", "norm_type")), ("init", ("model", "init")))


def variables_problem(r):
    """(field, how) where a run's variables say other settings than its
    config (the report would group it with other runs), else None."""
    v, c = r.get("variables") or {}, r.get("config")
    for key, path in VARIABLE_IN_CONFIG:
        x = c
        for step in path:
            x = x.get(step) if isinstance(x, dict) else None
        if key in v and x is not None and v[key] != x and not (key == "init" and v[key] == "pretrained"):
            return f"variables.{key}", f"is {json.dumps(v[key])} but its config has {json.dumps(x)}"
    return None


def edge_problem(e, runs):
    """(field, how) where an lr-edge search's record is not what its probes'
    runs say (the probe's lr and outcome; the edge the largest lr that
    trained, `failed` the smallest above it that did not), else None."""
    probes = e.get("probes") if isinstance(e.get("probes"), list) else []
    for j, pr in enumerate(probes):
        r = runs.get(pr.get("run"))
        if r is None or (r.get("config") or {}).get("lr", pr.get("lr")) != pr.get("lr"):
            return f"probes[{j}]", f"names {json.dumps(pr.get('run'))} at lr {pr.get('lr')}, which no run is"
        if r.get("status") in ("completed", "diverged") and bool((r.get("outcome") or {}).get("trains")) != \
                pr.get("trains"):
            return f"probes[{j}].trains", f"is {json.dumps(pr.get('trains'))} but its run's outcome is not"
        for key, value in (e.get("setting") or {}).items():
            if key in r.get("variables", {}) and r["variables"][key] != value:
                return f"setting.{key}", \
                    f"is {json.dumps(value)} but its probe {r['name']} has {json.dumps(r['variables'][key])}"
    if not e.get("complete"):
        return None
    if e.get("exhaustive") and [pr.get("lr") for pr in probes] != e.get("grid"):
        return "probes", "are not its grid's points, each once"
    ok = [pr["lr"] for pr in probes if pr.get("trains") and number(pr.get("lr")) is not None]
    edge = max(ok) if ok else None
    above = [pr["lr"] for pr in probes if not pr.get("trains") and number(pr.get("lr")) is not None
             and (edge is None or pr["lr"] > edge)]
    failed = min(above) if above and not (e.get("exhaustive") and edge is None) else None  # edge_search.cpp
    for key, want in (("edge", edge), ("failed", failed)):
        if e.get(key) != want:
            return key, f"is {json.dumps(e.get(key))} but its probes give {json.dumps(want)}"
    return None


def baseline_problem(study):
    """Where study.json's unigram baseline (which sets the plateau limit:
    which runs trained) is not the one its data's shards give, else None."""
    base = study.s.get("baselines")
    data_dir = study.s.get("data", {}).get("dir", "")
    if not isinstance(base, dict) or number(base.get("unigram_val")) is None or not isinstance(data_dir, str):
        return None
    val, _ = unigram_baseline(data_dir if os.path.isabs(data_dir) else os.path.join(study.out, data_dir), study.vocab)
    if val is not None and abs(val - base["unigram_val"]) > 1e-6 * abs(val):
        return f"field 'baselines.unigram_val' is {base['unigram_val']} but the study's data give {val}"
    return None


def check_outcomes(study):
    """ValueError naming the first run whose outcome in study.json is not
    what its metrics (or the files written with its scores, gradients at
    init and residual stream) say: an edited val_loss, trains, status,
    BLEU or gradient moves the verdicts, so the report refuses it (exit 2)
    rather than draw them."""
    if problem := baseline_problem(study):
        raise ValueError(f"{problem} (edited?): restore study.json, or rerun the study on its folder")
    plateau = plateau_limit(study.s)
    for i, r in enumerate(study.runs):
        m = study.metrics.get(r["name"])
        if m and (problem := outcome_problem(r, m, plateau)):
            field, had, says = problem
            raise ValueError(f"field 'runs[{i}] ({r['name']}).{field}' is {json.dumps(had)} but its metrics "
                             f"({r.get('metrics')}) record {says} (edited?): restore study.json, or rerun "
                             f"the study on its folder, which takes each outcome from the run's metrics.jsonl")
        if problem := translation_problem(study.out, r) or file_backed_problem(study.out, r) or variables_problem(r):
            field, how = problem
            raise ValueError(f"field 'runs[{i}] ({r['name']}).{field}' {how} (edited?): restore study.json")
    runs = {r["name"]: r for r in study.runs}
    for i, e in enumerate(study.edges):
        if problem := edge_problem(e, runs):
            field, how = problem
            raise ValueError(f"field 'edges[{i}] ({e.get('name')}).{field}' {how} (edited?): restore study.json, "
                             f"or rerun the study on its folder, which replays each search from its probes")


class Study:
    def __init__(self, out):
        self.out = out
        try:
            self.s = json.loads(study_text(out))
        except RecursionError:
            raise ValueError("JSON nested too deep") from None
        if not isinstance(self.s, dict):
            raise ValueError("not a JSON object")
        check_fields(self.s)
        self.version = self.s.get("version", 1)
        self.runs = [r for r in self.s.get("runs", []) if isinstance(r, dict) and isinstance(r.get("name"), str)]
        for r in self.runs:
            if not isinstance(r.get("variables"), dict):
                r["variables"] = {}
        self.budget = self.s.get("budget", {})
        self.vocab = self.s.get("data", {}).get("vocab_size", 0)
        # Baselines: study.json's (v2, computed by gpt2lab) where present,
        # else from the shards.
        base = self.s.get("baselines") if isinstance(self.s.get("baselines"), dict) else {}
        self.uniform = number(base.get("uniform")) or (math.log(self.vocab) if self.vocab else None)
        self.unigram = number(base.get("unigram_val"))
        self.unigram_train = number(base.get("unigram_train"))
        self.unigram_train_from = "study.json" if self.unigram_train is not None else None
        if self.unigram is None or self.unigram_train is None:
            # gpt2lab records it relative to the study folder (a committed study is read elsewhere).
            data_dir = self.s.get("data", {}).get("dir", "")
            if isinstance(data_dir, str) and data_dir and not os.path.isabs(data_dir):
                data_dir = os.path.join(out, data_dir)
            val, train = unigram_baseline(data_dir, self.vocab)
            self.unigram = self.unigram if self.unigram is not None else val
            if self.unigram_train is None and train is not None:
                self.unigram_train, self.unigram_train_from = train, "shards"
        self.presets = listed_presets(self.s)  # the entry point puts them in report order
        self.metrics = {}
        for r in self.runs:
            if r.get("kind") == "train":
                self.metrics[r["name"]] = load_metrics(out, r)
        self.edges = [e for e in self.s.get("edges", []) if isinstance(e, dict)] \
            if isinstance(self.s.get("edges"), list) else []
        check_outcomes(self)
        self.verdicts = None  # the entry point computes them (verdicts.evaluate) before the sections draw

    def seeds(self):
        """The seeds the study names (budget.seeds, v2), else its one seed."""
        seeds = self.budget.get("seeds")
        if isinstance(seeds, list) and seeds:
            return seeds
        return [self.budget["seed"]] if "seed" in self.budget else []

    @staticmethod
    def seed_index(r):
        """A run's seed index (v2: variables.seed_index; a v1 run is seed 0)."""
        v = r.get("variables", {})
        for k in ("seed_index", "seed"):
            if isinstance(v.get(k), int) and not isinstance(v.get(k), bool):
                return v[k]
        return 0

    def final_value(self, r):
        """A run's final validation loss for comparisons over seeds: a
        diverged run counts as the uniform prediction's loss (ln V); None
        for a run that did not finish or has no validation loss."""
        if r.get("status") == "diverged":
            return self.uniform
        return self.val_loss(r)

    def spikes(self, r):
        """The trainer's spike count (v2 outcome.spikes: the loss went above
        the divergence threshold and came back), or None."""
        x = r.get("outcome", {}).get("spikes")
        return x if isinstance(x, int) and not isinstance(x, bool) else None

    def total_tokens(self, r):
        """Tokens a run trains on when it runs to the end."""
        c = r.get("config", {})
        try:
            return int(c["steps"]) * int(c["batch_size"]) * int(c["seq_len"]) * int(c.get("accum", 1) or 1)
        except (KeyError, TypeError, ValueError):
            return None

    def tokens_at(self, r, step):
        """Tokens seen after training step `step` (the metrics' own count
        where they have one)."""
        m = self.metrics.get(r["name"], {})
        if m.get("steps") and m["tokens"] and step in m["steps"]:
            t = m["tokens"][m["steps"].index(step)]
            if isinstance(t, (int, float)):
                return t
        c = r.get("config", {})
        try:
            return (step + 1) * int(c["batch_size"]) * int(c["seq_len"]) * int(c.get("accum", 1) or 1)
        except (KeyError, TypeError, ValueError):
            return None

    def preset_runs(self, preset):
        return [r for r in self.runs if r.get("preset") == preset]

    def has(self, preset):
        return any(r.get("status") in ("completed", "diverged") for r in self.preset_runs(preset))

    def val_loss(self, r):
        o = r.get("outcome", {})
        return o.get("val_loss") if r.get("status") == "completed" else None

    def diverged(self, r):
        return r.get("status") == "diverged"

    def diverged_at(self, r):
        return r.get("outcome", {}).get("diverged_at")

    def smoothed(self, r):
        m = self.metrics.get(r["name"])
        if not m or not m["loss"]:
            return [], []
        k = max(1, len(m["loss"]) // 40)
        return m["steps"], smooth(m["loss"], k)
