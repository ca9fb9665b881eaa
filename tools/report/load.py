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
         "diverged": None, "error": None, "packed": False}
    if not rec.get("metrics"):
        return m
    m["packed"] = not os.path.isfile(os.path.join(out, rec["metrics"]))
    try:
        rows = metrics_file.by_kind(metrics_file.read_rows(os.path.join(out, rec["metrics"])))
    except (OSError, EOFError, zlib.error, ValueError) as e:
        m["error"] = "missing" if isinstance(e, FileNotFoundError) else "unreadable"
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
    names = [r.get("name") for r in s.get("runs", []) if isinstance(r, dict)]
    dup = next((n for n in names if names.count(n) > 1), None)
    need(dup is None, f"runs ({dup})", "records of runs each named once (a run is counted once)")
    for i, r in enumerate(x for x in s.get("runs", []) if isinstance(x, dict)):
        f = f"runs[{i}] ({r.get('name', '?')})"
        need("metrics" not in r or isinstance(r["metrics"], str), f + ".metrics", "a path")
        for key, kind, what in (("config", dict, "an object"), ("variables", dict, "an object"),
                                ("preset", str, "a preset name"), ("dir", str, "a path")):
            need(key not in r or isinstance(r[key], kind), f"{f}.{key}", what)
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
    check_edge_fields(s.get("edges", []), need)


def check_edge_fields(edges, need):
    """check_fields of the lr-edge records."""
    need(isinstance(edges, list) and all(isinstance(e, dict) for e in edges), "edges", "a list of objects")
    for i, e in enumerate(edges):
        f = f"edges[{i}]"
        need(isinstance(e.get("probes", []), list) and all(isinstance(p, dict) for p in e.get("probes", [])),
             f + ".probes", "a list of objects")
        need(isinstance(e.get("setting", {}), dict), f + ".setting", "an object")
        grid = e.get("grid", [])
        need(isinstance(grid, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0
                                            for x in grid), f + ".grid", "a list of learning rates")


def number(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


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
        from .checks import check_outcomes  # it reads the study: imported here, not at the top
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
