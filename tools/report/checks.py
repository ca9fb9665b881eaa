"""Checks of a study.json against the folder it describes: a finished
run's outcome against its metrics and result.json, the records kept beside
a run against their copies, its variables against its config, lr-edge
searches replayed from their probes, selections counted from their runs,
baselines against the data. An edited number moves the verdicts, so the
report refuses it (exit 2, by field) rather than draw them."""
import hashlib
import json
import math
import os
import re

from .evidence import PLATEAU_MARGIN
from .load import number, read_text, unigram_baseline

FINISHED = ("completed", "diverged")
STUDY_DATA = "data/dataset"  # where gpt2lab builds a study's data (src/study/dataset.cpp)


def plateau_limit(study):
    """The val loss at or above which gpt2lab says a run did not train
    (FinishedRunAnalysis::plateau_limit): the unigram baseline (study.json's,
    else the shards'; the uniform loss where study.json says it stood in)
    less the plateau margin; None where neither says."""
    base = study.s.get("baselines") if isinstance(study.s.get("baselines"), dict) else {}
    ref = number(base.get("unigram_val")) or number(base.get("uniform")) or study.unigram
    return None if ref is None else ref - PLATEAU_MARGIN


def run_file(out, r, name):
    return os.path.join(out, r["dir"], name)


def live_run(out, r):
    """The run's folder as gpt2lab left it, not packed for a commit (which
    keeps result.json and packed metrics only): its config.json is there."""
    return os.path.isfile(run_file(out, r, "config.json"))


def path_problem(r, copies):
    """(field, how) where a run's folder or metrics path is not the one
    gpt2lab gives it (another would be read, or none), else None. A
    grad-at-init record without a folder is an older study's (`copies`:
    this one keeps its files)."""
    if r.get("kind") not in ("train", "grad-at-init") or ("dir" not in r and r["kind"] != "train" and not copies):
        return None
    want = f"runs/{r['name']}"
    if r.get("dir") != want:
        return "dir", f"is {json.dumps(r.get('dir'))}, not {want}"
    if r.get("kind") == "train" and r.get("metrics", f"{want}/metrics.jsonl") != f"{want}/metrics.jsonl":
        return "metrics", f"is {json.dumps(r.get('metrics'))}, not {want}/metrics.jsonl"
    return None


def kind_problem(out, r):
    """(field, how) where a run's kind is not what its folder holds (a
    training run's metrics were then never read), else None."""
    folder = os.path.join(out, "runs", r["name"])
    trained = any(os.path.isfile(os.path.join(folder, f)) for f in ("config.json", "metrics.jsonl", "metrics.jsonl.gz"))
    want = "train" if trained else "grad-at-init" if os.path.isfile(os.path.join(folder, "grad_at_init.json")) else None
    if want and r.get("kind") != want:
        return "kind", f"is {json.dumps(r.get('kind'))} but runs/{r['name']} holds a {want} run"
    return None


def metrics_digest_problem(out, r):
    """Where a live run's metrics.jsonl is not what its checkpoint saw
    (state.json's metrics_sha256 of its first metrics_bytes bytes: a loss
    rewritten to the same length), else None. After run_problem: its dir
    is runs/<name>."""
    if r.get("kind") != "train" or not live_run(out, r):
        return None
    state_path, metrics = run_file(out, r, os.path.join("checkpoint", "state.json")), run_file(out, r, "metrics.jsonl")
    if not (os.path.isfile(state_path) and os.path.isfile(metrics)):  # not a FIFO either: it would block
        return None
    try:
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
        want, size = state["metrics_sha256"], state["metrics_bytes"]
        have = None
        if isinstance(size, int) and 0 <= size <= os.path.getsize(metrics):
            with open(metrics, "rb") as f:
                have = hashlib.sha256(f.read(size)).hexdigest()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no checkpoint, or one from before the digest: the other checks stand
    if have != want:
        return (f"{r['dir']}/metrics.jsonl: its first {size} bytes are not the ones its checkpoint recorded (their "
                "sha256 differs: a row edited?): restore it, or remove the run's folder and rerun the study")
    return None


def status_problem(out, r, m):
    """(field, how) where a run's status is not its result.json's, or a
    finished run's metrics are missing or unreadable, else None."""
    path = run_file(out, r, "result.json")
    kept = kept_copy(path)
    had = kept.get("status") if isinstance(kept, dict) else None
    # Not yet finished in study.json while result.json is: the run ended and
    # its analysis was not saved (a study still running, or killed between
    # the two: a rerun adds it), unless the record holds a finished outcome.
    unsaved = r.get("status") in (None, "interrupted") and had in FINISHED and \
        (r.get("outcome") or {}).get("status") not in FINISHED
    if had in FINISHED + ("interrupted",) and r.get("status") != had and not unsaved:
        return "status", f"is {json.dumps(r.get('status'))} but {r['dir']}/result.json says {json.dumps(had)}"
    # A gradient measured at init is written, then recorded "completed"
    # (a kill in between leaves no status).
    if r.get("kind") == "grad-at-init" and "status" in r and r["status"] != "completed" and \
            isinstance(kept_copy(run_file(out, r, "grad_at_init.json")), dict):
        return "status", f"is {json.dumps(r['status'])} but {r['dir']}/grad_at_init.json holds its measurement"
    # Missing with the run's folder gone too: a study.json read alone.
    if r.get("status") in FINISHED and r.get("kind") == "train" and m and m["error"] and \
            (m["error"] == "unreadable" or os.path.isdir(os.path.join(out, r["dir"]))):
        return "metrics", f"of a finished run ({r.get('metrics')}) are {m['error']}"
    return None


def outcome_problem(r, m, plateau):
    """(field, its value, what the run's metrics record instead) where a
    finished run's outcome is not what its metrics say (gpt2lab computes
    the one from the other), else None. Packed metrics keep 6 significant
    digits."""
    if r.get("status") not in FINISHED or not (m["steps"] or m["val"]):
        return None
    o = r.get("outcome") or {}
    if (m["diverged"] is not None) != (r["status"] == "diverged"):
        return "status", r["status"], "a divergence" if m["diverged"] is not None else "no divergence"
    if problem := spikes_problem(o, m, number((r.get("config") or {}).get("max_loss"))) or curve_problem(o, m):
        return problem
    if r["status"] == "diverged":  # its val loss is not read: a diverged run counts as ln V
        at = m["diverged"].get("step")
        if "diverged_at" in o and o["diverged_at"] != at:
            return "outcome.diverged_at", o["diverged_at"], f"a divergence at step {at}"
        return ("outcome.trains", True, "a divergence") if o.get("trains") is True else None
    last = number(m["val"][-1]) if m["val"] else None
    val = number(o.get("val_loss"))
    if (val is None) != (last is None) or (last is not None and not close(val, last)):
        return "outcome.val_loss", o.get("val_loss"), f"a last val loss of {last}"
    if "val_ppl" in o and val is not None and val < 700:  # exp(val_loss), as analysis.cpp writes it
        if number(o["val_ppl"]) is None or not close(o["val_ppl"], math.exp(val)):
            return "outcome.val_ppl", o["val_ppl"], f"a last val loss of {val} (perplexity {math.exp(val):.6g})"
    if "trains" in o and plateau is not None:
        trains = val is not None and (r.get("preset") == "translation" or val < plateau)
        if o["trains"] != trains:
            return "outcome.trains", o["trains"], f"a val loss of {val} against the plateau limit {plateau:.6g}"
    return None


def close(a, b):
    return abs(a - b) <= 1e-5 * max(1.0, abs(b))


def curve_problem(o, m):
    """Where outcome.val_curve (which times "converges faster") is not the
    metrics' finite validation losses, step for step."""
    if not isinstance(o.get("val_curve"), list):
        return None
    want = [(s, v) for s, v in zip(m["val_steps"], m["val"]) if number(v) is not None]
    had = o["val_curve"]
    ok = len(had) == len(want) and all(
        isinstance(p, list) and len(p) == 2 and p[0] == s and number(p[1]) is not None and close(p[1], v)
        for p, (s, v) in zip(had, want))
    return None if ok else ("outcome.val_curve", "[...]", f"{len(want)} validation losses that differ from it")


def spikes_problem(o, m, limit):
    """(field, its value, what the metrics record) where outcome.spikes or
    spike_steps is not what the training losses give by gpt2lab's rule
    (analysis.cpp, spikes_from_metrics: each excursion above max_loss that
    came back, by its first step), else None. Not checked where a packed
    loss sits within its rounding of the limit."""
    if limit is None or not ("spikes" in o or "spike_steps" in o or "max_loss" in o):
        return None
    rows = [(step, x) for step, x in zip(m["steps"], m["loss"])
            if isinstance(step, int) and not isinstance(step, bool) and number(x) is not None]
    if m["packed"] and any(abs(x - limit) <= 1e-5 * max(1.0, abs(limit)) for _, x in rows):
        return None
    starts, open_at = [], None
    for step, x in rows:
        if x > limit:
            open_at = step if open_at is None else open_at
        elif open_at is not None:
            starts.append(open_at)
            open_at = None
    if o.get("spikes") != len(starts):
        return "outcome.spikes", o.get("spikes"), f"{len(starts)} excursions above max_loss {limit:g} that came back"
    if "spike_steps" in o and o["spike_steps"] != starts:
        return "outcome.spike_steps", o["spike_steps"], f"spikes starting at steps {starts}"
    return None


def translation_problem(out, r):
    """(field, how) where a translation run's BLEU or chrF in study.json
    differs from its translation-test.json, written with them (which a
    live run folder must keep), else None."""
    t = r.get("translation")
    if not isinstance(t, dict):
        return None
    if t.get("hypotheses") != "translation-test.json":
        return "translation.hypotheses", f"is {json.dumps(t.get('hypotheses'))}, not translation-test.json"
    name = f"{r['dir']}/translation-test.json"
    scores = kept_copy(os.path.join(out, name))
    if scores is None:
        return ("translation", f"was scored, but {name} is gone") if live_run(out, r) else None
    if not isinstance(scores, dict):
        return "translation", f"was scored, but {name} is unreadable"
    for key in ("bleu", "chrf"):
        if t.get(key) != scores.get(key):
            return f"translation.{key}", f"is {json.dumps(t.get(key))} but {name} records {scores.get(key)}"
    return None


# Records study.json holds beside a copy in the run's folder, written with
# it: (field, file, the file's key holding it; None: the whole file).
FILE_BACKED = (("result", "grad_at_init.json", None), ("residual_stream", "residual_stream.json", None),
               ("symmetry", "measures.json", "symmetry"), ("sample", "measures.json", "sample"),
               ("fluency", "measures.json", "fluency"), ("translation", "measures.json", "translation"))


UNREADABLE = object()  # a kept copy that does not parse: equal to no record


def kept_copy(path):
    """A JSON file gpt2lab wrote beside a record: None when absent,
    UNREADABLE when it does not parse."""
    if not os.path.isfile(path):
        return None
    try:
        return json.loads(read_text(path, 256 << 20))
    except (OSError, ValueError):
        return UNREADABLE


def file_backed_problem(out, r, copies):
    """(field, how) where a record study.json holds differs from its copy
    in the run's folder, or a live folder lost the copy (`copies`: the
    study says gpt2lab keeps them), else None."""
    if r.get("status") not in FINISHED:  # the copies are of a finished run's analysis
        return None
    read = {}
    for field, file, key in FILE_BACKED:
        if file not in read:
            read[file] = kept_copy(run_file(out, r, file))
        kept = read[file]
        if kept is None:
            if copies and field in r and r.get("kind") == "train" and live_run(out, r):
                return field, f"has no copy in {r['dir']}/{file} (deleted?); rerun the study, which measures it again"
            continue
        if key is not None:
            if not isinstance(kept, dict) or (key in kept) != (field in r):
                return field, f"is not what {r['dir']}/{file}, written with it, holds"
            if key not in kept:
                continue
            kept = kept[key]
        if field in r and kept != r[field]:
            return field, f"differs from {r['dir']}/{file}, written with it"
    return None


def kept_copies(study):
    """Whether the gpt2lab that last ran the study keeps copies of its
    measures beside the runs: study.json says so ("copies_kept"), or the
    folder holds one (judge.json, a run's measures.json). A folder from
    before them has none, and is not refused for that."""
    if not hasattr(study, "_copies"):
        study._copies = study.s.get("copies_kept") is True or os.path.isfile(
            os.path.join(study.out, "judge.json")) or any(
            isinstance(r.get("dir"), str) and os.path.isfile(run_file(study.out, r, "measures.json"))
            for r in study.runs)
    return study._copies


def judge_problem(study):
    """Where study.json's judge calibration (which gates the fluency
    verdict) differs from judge.json, written with it (which a study with
    its data must keep), else None."""
    kept = kept_copy(os.path.join(study.out, "judge.json"))
    if "judge" not in study.s:
        return None if kept is None else "field 'judge' is missing, but judge.json, written with it, holds one"
    live = any(isinstance(r.get("dir"), str) and live_run(study.out, r) for r in study.runs)
    if kept is None and kept_copies(study) and live:
        return "field 'judge' has no copy in judge.json (deleted?)"
    if kept is not None and kept != study.s["judge"]:
        return "field 'judge' differs from judge.json, written with it"
    return None


# A run's variables (what the report groups it by) and where its config
# says the same: (variable, config path).
VARIABLE_IN_CONFIG = (("lr", ("lr",)), ("seed", ("seed",)), ("warmup", ("warmup",)), ("clip", ("grad_clip",)),
                      ("depth", ("model", "n_layer")), ("residual_scale", ("model", "residual_scale")),
                      ("norm", ("model", "norm")), ("norm_type", ("model", "norm_type")), ("init", ("model", "init")),
                      ("embedding_scale", ("model", "embedding_scale")))
# The settings of a run's config.json its record must repeat.
CONFIG_KEPT = ("model", "lr", "seed", "warmup", "grad_clip", "steps", "batch_size", "seq_len", "max_loss")
ATLAS_NAME = re.compile(r"^atlas-(?:sel-|edge-)?(?P<variant>.+?)-(?:L\d+|lr)")
# A run's arm by its name, as plan.cpp names them (first prefix that fits;
# none fits: no arm), for each preset gpt2lab has (a newer one's runs are
# left unchecked). The arm groups a run (a fine-tuned run recorded as from
# scratch joins another cell of the translation verdicts).
ARM_BY_NAME = {"init": (("init-postsel-", "select"),),
               "translation": (("mt-pretrain-", "pretrain"), ("mt-ft-", "finetune"), ("mt-scratch-", "scratch")),
               "atlas": (("atlas-sel-", "select"), ("atlas-edge-", "edge"), ("atlas-", "depth")),
               "norm": (), "depth": (), "lr-edge": (), "grad-at-init": ()}


def in_config(c, path):
    for step in path:
        c = c.get(step) if isinstance(c, dict) else None
    return c


# The preset each run's name starts with (plan.cpp), and what the rest of
# the name says of its variables: a packed run (no config.json) or a
# grad-at-init one (no config at all in its folder) edited in both its
# variables and its config was grouped as the edit said.
PRESET_OF_PREFIX = (("norm-", "norm"), ("depth-", "depth"), ("edge-", "lr-edge"), ("gai-", "grad-at-init"),
                    ("init-", "init"), ("atlas-", "atlas"), ("mt-", "translation"))
NAME_SAYS = {
    "grad-at-init": (r"gai-L(?P<depth>\d+)-(?P<norm>[a-z]+)-(?P<init>[a-z0-9]+)(?:-emb(?P<embedding_scale>[a-z]+))?"
                     r"-s(?P<s>\d+)",),
    "depth": (r"depth-L(?P<depth>\d+)-(?P<norm>[a-z]+)-(?P<residual_scale>scale|noscale)-s(?P<s>\d+)",),
    "norm": (r"norm-(?P<norm>[a-z]+)-w(?P<w>\d+)-lr.+-s(?P<s>\d+)",),
    "lr-edge": (r"edge-(?P<norm>[a-z]+)-w(?P<w>\d+)-.+-s(?P<s>\d+)-lr.+",),
    "init": (r"init-postsel-lr.+-s(?P<s>\d+)", r"init-(?P<norm>[a-z]+)-(?P<init>[a-z0-9]+)(?:-scale)?-s(?P<s>\d+)"),
    "translation": (r"mt-scratch-(?P<norm>[a-z]+)-(?P<init>[a-z0-9]+)-w(?P<w>\d+)-s(?P<s>\d+)",
                    r"mt-(?:pretrain|ft)-(?P<norm>[a-z]+)(?:-w(?P<w>\d+))?-s(?P<s>\d+)"),
}


def name_says(r):
    """{variable: value} that a run's name gives (seed_index from -sN)."""
    for pattern in NAME_SAYS.get(r.get("preset"), ()):
        if m := re.fullmatch(pattern, r["name"]):
            said = {k: v for k, v in m.groupdict().items() if v is not None}
            if "s" in said:
                said["seed_index"] = int(said.pop("s")) - 1
            if "depth" in said:
                said["depth"] = int(said["depth"])
            if "residual_scale" in said:
                said["residual_scale"] = said["residual_scale"] == "scale"
            if r.get("preset") == "grad-at-init":
                said.setdefault("embedding_scale", "none")
            return said
    return {}


def preset_problem(r):
    """(field, how) where a run's preset, or a variable its name gives, is
    not what its name says, else None."""
    want = next((p for prefix, p in PRESET_OF_PREFIX if r["name"].startswith(prefix)), None)
    if want and r.get("preset") != want:
        return "preset", f"is {json.dumps(r.get('preset'))} but a run named {r['name']} is a {want} run"
    v = r.get("variables")
    for key, said in name_says(r).items() if isinstance(v, dict) else ():
        # A key removed made a cell of its own ("post-LN, lr 3e-3" without
        # its warmup); -wNN is the warmup fraction in percent.
        had = v.get(key)
        if key == "w":
            key, said = "warmup_fraction", int(said)
            had = round(v[key] * 100) if number(v.get(key)) is not None else v.get(key)
        if had != said:
            what = f"is {json.dumps(v[key])}" if key in v else "is missing"
            unit = "% warmup" if key == "warmup_fraction" else ""
            return f"variables.{key}", f"{what} but a run named {r['name']} has {json.dumps(said)}{unit}"
    return None


def arm_of(r):
    """The arm a run's name gives it, else None."""
    return next((arm for prefix, arm in ARM_BY_NAME.get(r.get("preset"), ()) if r["name"].startswith(prefix)), None)


def variables_problem(out, r, seeds):
    """(field, how) where a run's variables say other settings than its
    config, or its config other than its folder's config.json (the report
    would group it with other runs), else None."""
    v, c = r.get("variables") or {}, r.get("config")
    for key, path in VARIABLE_IN_CONFIG:
        x = in_config(c, path)
        if key in v and x is not None and v[key] != x and not (key == "init" and v[key] == "pretrained"):
            return f"variables.{key}", f"is {json.dumps(v[key])} but its config has {json.dumps(x)}"
    steps, warmup, frac = in_config(c, ("steps",)), in_config(c, ("warmup",)), v.get("warmup_fraction")
    if number(frac) is not None and number(steps) and number(warmup) is not None and abs(frac * steps - warmup) >= 1:
        return "variables.warmup_fraction", f"is {frac} but its config warms up {warmup} of {steps} steps"
    i = v.get("seed_index")
    if isinstance(i, int) and isinstance(seeds, list) and 0 <= i < len(seeds) and in_config(c, ("seed",)) not in (
            None, seeds[i]):
        return "variables.seed_index", f"is {i} but its config's seed is budget.seeds[{seeds.index(c['seed'])}]" \
            if c["seed"] in seeds else f"is {i} but its config's seed {c['seed']} is not budget.seeds[{i}]"
    if r.get("preset") == "atlas" and "variant" in v and (m := ATLAS_NAME.match(r["name"])) and \
            m["variant"] != v["variant"]:
        return "variables.variant", f"is {json.dumps(v['variant'])} but the run is {m['variant']}'s"
    if r.get("preset") in ARM_BY_NAME and v.get("arm") != (arm := arm_of(r)):
        return "variables.arm", f"is {json.dumps(v.get('arm'))} but a run named {r['name']} " + \
            (f"is of the arm {json.dumps(arm)}" if arm else "has no arm")
    kept = kept_copy(run_file(out, r, "config.json")) if r.get("kind") == "train" else None
    for key in CONFIG_KEPT if isinstance(kept, dict) and isinstance(c, dict) else ():
        if key in kept and kept[key] != c.get(key):
            return f"config.{key}", \
                f"is {json.dumps(c.get(key))} but {r['dir']}/config.json has {json.dumps(kept[key])}"
    return None


def midpoint(a, b):
    """edge_search.cpp's geometric_midpoint: sqrt(ab) to 3 significant digits."""
    return float(f"{math.sqrt(a * b):.2e}")


def replay_edge(e, trains_at):
    """(lrs probed before the search stopped or waits, edge, failed,
    complete) by gpt2lab's own search (edge_search.cpp: scan_grid for an
    exhaustive one, search_edge otherwise), given each probe's outcome
    (trains_at(lr): True, False, or None while it has not run)."""
    grid, probed = e["grid"], []

    def probe(lr):
        o = trains_at(lr)
        if o is not None:
            probed.append(lr)
        return o
    if e.get("exhaustive"):
        for lr in grid:
            if probe(lr) is None:
                return probed, None, None, False
        last = max((i for i, lr in enumerate(grid) if trains_at(lr)), default=None)
        if last is None:
            return probed, None, None, True
        return probed, grid[last], grid[last + 1] if last + 1 < len(grid) else None, True
    lo, hi = -1, len(grid)
    start = grid.index(e["start"])
    first = probe(grid[start])
    if first is None:
        return probed, None, None, False
    pending = False
    if first:
        lo = start
        while hi - lo > 1 and not pending:
            mid = lo + (hi - lo) // 2
            o = probe(grid[mid])
            pending = o is None
            if not pending:
                lo, hi = (mid, hi) if o else (lo, mid)
    else:
        hi = start
        while hi > 0 and not pending:
            o = probe(grid[hi - 1])
            pending = o is None
            if o:
                lo = hi - 1
                break
            hi -= 0 if pending else 1
    edge, failed = (grid[lo] if lo >= 0 else None), (grid[hi] if hi < len(grid) else None)
    for _ in range(e.get("refine", 0) if not pending and edge and failed else 0):
        lr = midpoint(edge, failed)
        if lr <= edge or lr >= failed:
            break
        o = probe(lr)
        if o is None:
            return probed, edge, failed, False
        edge, failed = (lr, failed) if o else (edge, lr)
    return probed, edge, failed, not pending


def edge_problem(e, runs):
    """(field, how) where an lr-edge search's record is not what its probes'
    runs say (each probe's lr and outcome, its setting), or not what
    gpt2lab's search gives from those outcomes (the probes in order, the
    edge, `failed`, whether it is complete), else None."""
    probes, grid = e.get("probes"), e.get("grid")
    if not isinstance(probes, list) or not isinstance(grid, list) or not grid or e.get("start", grid[0]) \
            not in grid or not all(isinstance(p, dict) for p in probes):
        return "probes", "are not a search's (probes, grid and start)"
    trains = {}
    for j, pr in enumerate(probes):
        r = runs.get(pr.get("run"))
        if r is None or (r.get("config") or {}).get("lr", pr.get("lr")) != pr.get("lr"):
            return f"probes[{j}]", f"names {json.dumps(pr.get('run'))} at lr {pr.get('lr')}, which no run is"
        done = r.get("status") in FINISHED
        if done and bool((r.get("outcome") or {}).get("trains")) != pr.get("trains"):
            return f"probes[{j}].trains", f"is {json.dumps(pr.get('trains'))} but its run's outcome is not"
        for key, value in (e.get("setting") or {}).items():
            if key in r.get("variables", {}) and r["variables"][key] != value:
                return f"setting.{key}", \
                    f"is {json.dumps(value)} but its probe {r['name']} has {json.dumps(r['variables'][key])}"
        trains[pr.get("lr")] = pr.get("trains") if done else None
    if "start" not in e:  # an older search (ascending until one failed): its edge and bracket
        return bracket_problem(e, probes)
    lrs, edge, failed, complete = replay_edge(e, trains.get)
    for key, had, want in (("probes", [pr.get("lr") for pr in probes], lrs), ("edge", e.get("edge"), edge),
                           ("failed", e.get("failed"), failed), ("complete", e.get("complete"), complete)):
        if had != want:
            return key, f"is {json.dumps(had)} but its probes give {json.dumps(want)} by gpt2lab's search"
    return None


def bracket_problem(e, probes):
    """(field, how) where a complete search's edge is not the largest lr
    that trained, or `failed` the smallest above it that did not."""
    if not e.get("complete"):
        return None
    ok = [pr["lr"] for pr in probes if pr.get("trains") and number(pr.get("lr")) is not None]
    edge = max(ok) if ok else None
    above = [pr["lr"] for pr in probes if not pr.get("trains") and number(pr.get("lr")) is not None
             and (edge is None or pr["lr"] > edge)]
    failed = min(above) if above else None
    for key, want in (("edge", edge), ("failed", failed)):
        if e.get(key) != want:
            return key, f"is {json.dumps(e.get(key))} but its probes give {json.dumps(want)}"
    return None


def baseline_problem(study):
    """Where study.json's unigram baselines (the val one sets the plateau
    limit: which runs trained; the train one the loss "tokens to" counts
    to) are not the ones its data's shards give, or the uniform loss (what a
    diverged run counts as) is not ln V, else None."""
    base = study.s.get("baselines")
    if not isinstance(base, dict):
        return None
    vocab = number(study.s.get("data", {}).get("vocab_size"))
    if "uniform" in base and vocab and not (number(base["uniform"]) is not None and
                                            abs(base["uniform"] - math.log(vocab)) <= 1e-9 * math.log(vocab)):
        return f"field 'baselines.uniform' is {json.dumps(base['uniform'])} but ln {vocab:g} is {math.log(vocab)}"
    if number(base.get("unigram_val")) is None:
        return None
    # The study's own data where it is there, wherever data.dir points.
    named = study.s.get("data", {}).get("dir")
    dirs = [os.path.join(study.out, d) for d in (STUDY_DATA, named) if isinstance(d, str)]
    data_dir = next((d for d in dirs if os.path.isdir(d)), None)
    if data_dir is None:
        return None
    val, train = unigram_baseline(data_dir, study.vocab)
    for key, want in (("unigram_val", val), ("unigram_train", train)):
        had = base.get(key)
        if want is not None and key in base and not (number(had) is not None and abs(want - had) <= 1e-6 * abs(want)):
            return f"field 'baselines.{key}' is {json.dumps(had)} but the study's data give {want}"
    return None


def budget_problem(study):
    """Where budget.bf16 (which marks the verdicts bf16 may not stand for)
    is not the precision the runs trained in, else None."""
    b = study.s.get("budget") if isinstance(study.s.get("budget"), dict) else {}
    if "bf16" in b and not isinstance(b["bf16"], bool):
        return f"field 'budget.bf16' is {json.dumps(b['bf16'])}, not true or false"
    for r in study.runs:
        ran = (r.get("config") or {}).get("bf16") if isinstance(r.get("config"), dict) else None
        if r.get("kind") == "train" and isinstance(ran, bool) and ran != b.get("bf16", False):
            return f"field 'budget.bf16' is {json.dumps(b.get('bf16'))} but run {r['name']} trained with bf16 {ran}"
    return None


# gpt2lab's named budgets as study.json records them (`gpt2lab_testtool
# budgets` writes this file; a test holds it to gpt2lab's).
NAMED_BUDGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "budgets.json")


def as_named(b, prefix=""):
    """{dotted key: value} of a budget record without what a study's flags
    set apart from its name: its precision (--bf16) and seeds (--seeds)."""
    flat = {}
    for key, value in b.items() if isinstance(b, dict) else ():
        if key in ("bf16", "seed_count") or key.endswith("seeds"):
            continue
        if isinstance(value, dict):
            flat.update(as_named(value, prefix + key + "."))
        else:
            flat[prefix + key] = value
    return flat


def named_budget_problem(study):
    """Where a bf16 study's budget is not the one its name says, else None:
    the name decides which bf16 controls cover its verdicts (precision.py;
    a quick study renamed 'full' lost its marks)."""
    b = study.budget
    if not isinstance(b, dict) or b.get("bf16") is not True:
        return None
    with open(NAMED_BUDGETS) as f:
        named = json.load(f)
    name = b.get("name")
    if not isinstance(name, str) or name not in named:
        return f"field 'budget.name' is {json.dumps(name)}, not one of gpt2lab's budgets ({', '.join(named)})"
    have, want = as_named(b), as_named(named[name])
    for key in sorted(set(have) | set(want)):
        if have.get(key, "missing") != want.get(key, "missing"):
            return (f"field 'budget.name' is {json.dumps(name)} but the budget recorded is not gpt2lab's '{name}': "
                    f"budget.{key} is {json.dumps(have.get(key, 'missing'))} where '{name}' has "
                    f"{json.dumps(want.get(key, 'missing'))} (tools/report/budgets.json)")
    return None


def rules_problem(study):
    """Where the registered verdict rules are gone from a study whose
    gpt2lab registers them when it creates it (study_file.cpp): every one
    that keeps copies of the measures."""
    if "rules" not in study.s and kept_copies(study):
        return "field 'rules' is missing from a study whose gpt2lab registers its verdict rules"
    return None


def margin_problem(study):
    """Where study.json's trains_margin (which sets which runs "trained")
    is not the one the report's own plateau rule uses, else None."""
    margin = study.s.get("budget", {}).get("trains_margin")
    if margin is not None and margin != PLATEAU_MARGIN:
        return f"field 'budget.trains_margin' is {json.dumps(margin)}, but gpt2lab's plateau rule is {PLATEAU_MARGIN}"
    return None


def selection_runs(study):
    """{selection key: {lr: [finished runs, by seed]}} of the runs that
    select an lr for a second stage (study/followup.cpp)."""
    out = {}
    for r in study.runs:
        v = r["variables"]
        if v.get("arm") != "select" or r.get("status") not in ("completed", "diverged"):
            continue
        key = {"init": "init-post", "atlas": f"atlas-{v.get('variant')}"}.get(r.get("preset"))
        out.setdefault(key, {}).setdefault(v.get("lr"), []).append(r)
    return out


def second_stage_lrs(study, key):
    """The lrs of the runs a selection chose for: init's Post-LN arms, an
    atlas variant's depth sweep."""
    for r in study.runs:
        v = r["variables"]
        if key == "init-post" and r.get("preset") == "init" and v.get("norm") == "post" and v.get("arm") is None \
                or r.get("preset") == "atlas" and v.get("arm") == "depth" and key == f"atlas-{v.get('variant')}":
            yield v.get("lr")


def candidate_of(runs):
    """(seeds, trained, mean final val loss or None) as gpt2lab counts an
    lr's selection runs: a diverged seed's loss is infinite."""
    losses = [number(r["outcome"].get("val_loss")) if r.get("status") == "completed" and
              isinstance(r.get("outcome"), dict) else None for r in runs]
    trained = sum(x is not None and r["outcome"].get("trains") is True for x, r in zip(losses, runs))
    mean = sum(losses) / len(losses) if runs and all(x is not None for x in losses) else None
    return len(runs), trained, mean


def rule_pick(cands, fallback):
    """The lr where every seed trained with the lowest mean loss; with
    `fallback` (atlas), where none does, the lowest mean loss."""
    def mean(c):
        return c["mean_val_loss"] if number(c.get("mean_val_loss")) is not None else math.inf
    full = [c for c in cands if c.get("trained") == c.get("seeds")]
    pool = full or (cands if fallback else [])
    best = min(pool, key=mean, default=None)
    return best["lr"] if best and (full or mean(best) < math.inf) else None


def selection_problem(study):
    """Where a selection in study.json (the lr a second stage ran at, and
    the candidates the report shows) is not what its runs give, else None."""
    sels = study.s.get("selections")
    runs = selection_runs(study)
    for key, sel in (sels.items() if isinstance(sels, dict) else ()):
        cands = sel.get("candidates") if isinstance(sel, dict) else None
        if not isinstance(cands, list) or not all(isinstance(c, dict) for c in cands):
            continue
        for j, c in enumerate(cands):
            seeds, trained, mean = candidate_of(runs.get(key, {}).get(c.get("lr"), []))
            had = number(c.get("mean_val_loss"))
            if (c.get("seeds"), c.get("trained")) != (seeds, trained) or (had is None) != (mean is None) or \
                    (mean is not None and abs(had - mean) > 1e-9 * abs(mean)):
                return (f"field 'selections.{key}.candidates[{j}]' says {c.get('trained')}/{c.get('seeds')} seeds "
                        f"trained, mean loss {c.get('mean_val_loss')}, but its runs give {trained}/{seeds}, {mean}")
        picked = rule_pick(cands, key.startswith("atlas-"))
        over = sel.get("over_all_seeds")
        says = over.get("lr") if isinstance(over, dict) else sel.get("lr")
        if says != picked:
            field = "over_all_seeds.lr" if isinstance(over, dict) else "lr"
            return f"field 'selections.{key}.{field}' is {json.dumps(says)}, but its candidates pick {picked}"
        if lr := next((x for x in second_stage_lrs(study, key) if x != sel.get("lr")), None):
            return f"field 'selections.{key}.lr' is {json.dumps(sel.get('lr'))}, but its second stage ran at {lr}"
        at = next((c for c in cands if c.get("lr") == sel.get("lr")), None)
        trains = at is not None and at.get("trained") == at.get("seeds")
        if "trains" in sel and sel["trains"] != trains:
            return f"field 'selections.{key}.trains' is {json.dumps(sel['trains'])}, but its candidates say {trains}"
    return None


# A run's name without its seed (plan.cpp's add_seeds appends -s<i>; an
# lr-edge probe's -lr<x> follows it): the seeds of one setting.
SEED_IN_NAME = re.compile(r"-s\d+(?=-|$)")


def sibling_problem(study):
    """(index, name, field, how) of the first run whose variables differ from
    those of the other seeds of its setting but in its seed, else None. A
    seed changes the init and the batch order, nothing else (plan.cpp): a
    variable removed from one run (lr, clip) made a cell of its own."""
    settings = {}
    for i, r in enumerate(study.runs):
        if isinstance(r.get("variables"), dict) and isinstance(r.get("name"), str):
            settings.setdefault((r.get("preset"), SEED_IN_NAME.sub("", r["name"])), []).append((i, r))
    for (_, setting), runs in settings.items():
        if len(runs) < 2:
            continue
        keys = sorted(set().union(*(r["variables"] for _, r in runs)) - {"seed", "seed_index"})
        for key in keys:
            values = [json.dumps(r["variables"].get(key, "missing")) for _, r in runs]
            common = max(values, key=values.count)
            for (i, r), value in zip(runs, values):
                if value != common:
                    what = "is missing" if key not in r["variables"] else f"is {value}"
                    return i, r["name"], f"variables.{key}", \
                        f"{what} but the other seeds of its setting ({setting}) have {common}"
    return None


def run_problem(study, r, plateau):
    """(field, how) of the first thing in a run's record that its folder
    contradicts, else None."""
    if problem := preset_problem(r) or kind_problem(study.out, r) or path_problem(r, kept_copies(study)):
        return problem
    m = study.metrics.get(r["name"])
    if not isinstance(r.get("dir"), str):  # an older study's grad-at-init record (path_problem)
        return variables_problem(study.out, r, study.budget.get("seeds"))
    if problem := status_problem(study.out, r, m):
        return problem
    if m and (problem := outcome_problem(r, m, plateau)):
        field, had, says = problem
        return field, (f"is {json.dumps(had)} but its metrics ({r.get('metrics')}) record {says}; or rerun the "
                       "study on its folder, which takes each outcome from the run's metrics.jsonl")
    return translation_problem(study.out, r) or file_backed_problem(study.out, r, kept_copies(study)) or \
        variables_problem(study.out, r, study.budget.get("seeds"))


# An lr-edge record's search settings and where the budget says them.
SEARCH_IN_BUDGET = {"lr-edge": ("lr_edge", ("grid", "start", "refine", "exhaustive")),
                    "atlas": ("atlas", ("grid", "start", "refine"))}


def search_problem(study, e):
    """(field, how) where a search's grid, start, refine or exhaustive is
    not its budget's, or it has no setting, or its preset is not its
    name's, else None."""
    if isinstance(e.get("name"), str) and (problem := preset_problem({"name": e["name"], "preset": e.get("preset")})):
        return problem
    if "start" not in e:
        return None
    if not isinstance(e.get("setting"), dict) or not e["setting"]:
        return "setting", "is missing: the search's runs would be grouped with no setting"
    part, keys = SEARCH_IN_BUDGET.get(e.get("preset"), (None, ()))
    b = study.budget.get(part) if part else None
    for key in keys if isinstance(b, dict) else ():
        if key in b and e.get(key, False if key == "exhaustive" else None) != b[key]:
            return key, f"is {json.dumps(e.get(key))} but budget.{part}.{key} is {json.dumps(b[key])}"
    return None


def orphan_probe(study):
    """The first finished lr-edge probe run that its search's record does
    not hold (a record removed or cut short), as (index, name, how)."""
    if not any("start" in (study.budget.get(part) or {}) for part in ("lr_edge", "atlas")):
        return None  # an older study's searches (ascending scans) have no names to match
    edges = {e.get("name"): e for e in study.edges}
    for i, r in enumerate(study.runs):
        if r.get("status") not in FINISHED or not (r.get("preset") == "lr-edge" or
                                                   r["variables"].get("arm") == "edge"):
            continue
        e = edges.get(r["name"].rsplit("-lr", 1)[0])
        if e is None:
            return i, r["name"], "is a probe of no lr-edge record in study.json (removed?)"
        # A record lags its last finished probe until the search saves it.
        if e.get("complete") and r["name"] not in {p.get("run") for p in e.get("probes", [])}:
            return i, r["name"], f"is a probe its complete search {e.get('name')} does not hold"
    return None


def check_outcomes(study):
    """ValueError naming the first field of study.json its folder
    contradicts (module docstring)."""
    if problem := baseline_problem(study) or judge_problem(study) or margin_problem(study) or budget_problem(study) or \
            named_budget_problem(study) or rules_problem(study):
        raise ValueError(f"{problem} (edited?): restore study.json, or rerun the study on its folder")
    plateau = plateau_limit(study)
    for i, r in enumerate(study.runs):
        if problem := run_problem(study, r, plateau):
            field, how = problem
            raise ValueError(f"field 'runs[{i}] ({r['name']}).{field}' {how} (edited?): restore study.json")
        if problem := metrics_digest_problem(study.out, r):
            raise ValueError(problem)
    if problem := selection_problem(study):
        raise ValueError(f"{problem} (edited?): restore study.json, or rerun the study on its folder, which "
                         "selects again from the runs")
    if sibling := sibling_problem(study):
        i, name, field, how = sibling
        raise ValueError(f"field 'runs[{i}] ({name}).{field}' {how} (edited?): restore study.json")
    runs = {r["name"]: r for r in study.runs}
    for i, e in enumerate(study.edges):
        if problem := search_problem(study, e) or edge_problem(e, runs):
            field, how = problem
            raise ValueError(f"field 'edges[{i}] ({e.get('name')}).{field}' {how} (edited?): restore study.json, "
                             f"or rerun the study on its folder, which replays each search from its probes")
    if orphan := orphan_probe(study):
        raise ValueError(f"field 'runs[{orphan[0]}] ({orphan[1]})' {orphan[2]} (edited?): restore study.json, or "
                         "rerun the study on its folder, which replays each search from its probes")
