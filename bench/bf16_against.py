#!/usr/bin/env python3
"""bench/bf16_control.sh's comparison: a bf16 study against an fp32 one,
verdict by verdict (the reports' claim tables) and run by run (final
validation loss, and test BLEU where runs translate, paired by name and
settings), the lr selections each precision made, and the wall time of
each.

The fp32 study is either the control's own fp32 half (FP32_WALL given:
every claim compared) or a committed study (FP32_FROM, e.g. docs/study/v3)
standing in for it, valid where this build's fp32 gives that study's runs
bit for bit (bench/study_jobs.sh checks it at every v3 shape): then the
committed study's runs of the presets the bf16 run ran are reported as a
study of those presets alone (what the control's own fp32 half would
report: a claim that several presets decide, fluency for one, otherwise
carries measures the bf16 run did not make), and only the claims the bf16
run tested are compared, each under the rule a fresh study uses.

  bench/bf16_against.py FP32_STUDY BF16_STUDY BF16_WALL [FP32_WALL]
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import study_pack  # noqa: E402


def verdict_rows(report):
    """claim -> verdict, from the report's claim table."""
    rows, on = {}, False
    with open(report, encoding="utf-8") as f:
        for line in f:
            if line.startswith("| claim | verdict |"):
                on = True
            elif on and not line.startswith("|"):
                break
            elif on and not line.startswith("|---"):
                cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
                rows[cells[0]] = cells[1]
    return rows


def current_rule(committed, claim):
    """The committed row of `claim` under the rule a fresh study uses: the
    one marked changed after the runs when the rule changed, else the
    claim's only row."""
    variants = {k: v for k, v in committed.items() if k == claim or k.startswith(claim + " (")}
    changed = [k for k in variants if "changed after the runs" in k]
    if changed:
        return changed[0], variants[changed[0]]
    plain = [k for k in variants if k == claim or "registered rule" in k]
    return (plain[0], variants[plain[0]]) if plain else (None, None)


def load_study(out):
    """A committed study's packed study.json (its plain one may be stale),
    else a run folder's study.json."""
    if study_pack.packed_parts(out):
        return json.loads(study_pack.read_packed(out).decode("utf-8"))
    with open(os.path.join(out, "study.json"), encoding="utf-8") as f:
        return json.load(f)


def same_presets(committed_dir, presets, tmp):
    """The committed study cut to `presets` (its runs, lr-edge searches
    and lr selections of those presets; run folders and data linked, not
    copied), reported into `tmp`."""
    study = load_study(committed_dir)
    study["presets"] = list(presets)
    study["runs"] = [r for r in study["runs"] if r.get("preset") in presets]
    study["edges"] = [e for e in study.get("edges", []) if e.get("preset") in presets]
    study["selections"] = {k: v for k, v in study.get("selections", {}).items()
                           if any(k.startswith(p + "-") for p in presets)}
    if "translation" not in presets:
        study.pop("translation_data", None)
    os.makedirs(os.path.join(tmp, "runs"))
    for r in study["runs"]:
        name = os.path.basename(r["dir"])
        os.symlink(os.path.abspath(os.path.join(committed_dir, "runs", name)), os.path.join(tmp, "runs", name))
    for d in ("data", "translation-data"):
        if os.path.isdir(os.path.join(committed_dir, d)):
            os.symlink(os.path.abspath(os.path.join(committed_dir, d)), os.path.join(tmp, d))
    with open(os.path.join(tmp, "study.json"), "w", encoding="utf-8") as f:
        json.dump(study, f)
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "report")
    subprocess.run([sys.executable, tools, tmp, "--no-figures"], check=True, stdout=subprocess.DEVNULL)
    return tmp


def val_losses(study):
    return {r["name"]: r["outcome"].get("val_loss") for r in study["runs"]
            if r.get("kind") == "train" and isinstance(r.get("outcome"), dict)}


def statuses(study):
    return {r["name"]: r.get("status") for r in study["runs"] if r.get("kind") == "train"}


def compare_verdicts(fp32_dir, bf16_dir, every_claim):
    fp32 = verdict_rows(os.path.join(fp32_dir, "report.md"))
    bf16 = verdict_rows(os.path.join(bf16_dir, "report.md"))
    print("| claim | fp32 (its row) | bf16 | same |\n|---|---|---|---|")
    changed = compared = 0
    for claim, verdict in bf16.items():
        if verdict == "not tested" and not every_claim:
            continue
        row, theirs = current_rule(fp32, claim)
        compared += 1
        same = theirs == verdict
        changed += not same
        print(f"| {claim} | {theirs} ({row}) | {verdict} | {'yes' if same else '**no**'} |")
    print(f"\nverdicts changed: {changed} of {compared}")


def settings(study):
    """name -> the run's training config without its precision flag."""
    return {r["name"]: {k: v for k, v in r.get("config", {}).items() if k != "bf16"}
            for r in study["runs"] if r.get("kind") == "train"}


def compare_selections(fp32_study, bf16_study):
    """The lr each precision's own selection picked, where they differ: the
    runs after it train at another lr, so they are not a pair."""
    fp32, bf16 = fp32_study.get("selections", {}), bf16_study.get("selections", {})
    moved = [(k, fp32[k].get("lr"), v.get("lr"), fp32[k].get("trains"), v.get("trains"))
             for k, v in sorted(bf16.items()) if k in fp32 and fp32[k].get("lr") != v.get("lr")]
    print(f"lr selections: {len(bf16)}, picked differently: {len(moved)}")
    for k, a, b, ta, tb in moved:
        print(f"  {k}: fp32 {a:g} (every seed trains: {ta}), bf16 {b:g} (every seed trains: {tb})")


def compare_losses(fp32_study, bf16_study):
    fp32, bf16 = val_losses(fp32_study), val_losses(bf16_study)
    cfg32, cfg16 = settings(fp32_study), settings(bf16_study)
    other = sorted(k for k in bf16 if k in fp32 and cfg32.get(k) != cfg16.get(k))
    if other:
        print(f"runs of one name at other settings (not paired): {len(other)}: {', '.join(other)}")
    st32, st16 = statuses(fp32_study), statuses(bf16_study)
    # A diverged run's last loss says only that it diverged: counted, not averaged.
    split = sorted(k for k in bf16 if k in fp32 and k not in other and st32.get(k) != st16.get(k))
    if split:
        print(f"runs that ended otherwise in one precision: {len(split)}: "
              + ", ".join(f"{k} (fp32 {st32[k]}, bf16 {st16[k]})" for k in split))
    pairs = {k: (fp32[k], bf16[k]) for k in bf16
             if k in fp32 and k not in other and st32.get(k) == st16.get(k) == "completed"
             and fp32[k] is not None and bf16[k] is not None}
    d = sorted((abs(b - a), k) for k, (a, b) in pairs.items())
    if d:
        mean = sum(x for x, _ in d) / len(d)
        print(f"final val loss, bf16 - fp32 over {len(d)} paired runs (of {len(bf16)}): "
              f"median |diff| {d[len(d) // 2][0]:.4f}, mean {mean:.4f}, max {d[-1][0]:.4f} ({d[-1][1]})")


def scores(study):
    """name -> (greedy BLEU, beam BLEU) of the runs scored on a translation test set."""
    out = {}
    for r in study["runs"]:
        t = r.get("translation")
        if isinstance(t, dict) and isinstance(t.get("bleu"), (int, float)):
            beam = t.get("beam") if isinstance(t.get("beam"), dict) else {}
            out[r["name"]] = (t["bleu"], beam.get("bleu"))
    return out


def compare_scores(fp32_study, bf16_study):
    fp32, bf16 = scores(fp32_study), scores(bf16_study)
    for i, what in ((0, "greedy"), (1, "beam")):
        d = sorted((b[i] - fp32[k][i], k) for k, b in bf16.items()
                   if k in fp32 and b[i] is not None and fp32[k][i] is not None)
        if d:
            a = sorted(abs(x) for x, _ in d)
            print(f"test BLEU ({what}), bf16 - fp32 over {len(d)} paired runs: median |diff| {a[len(a) // 2]:.2f}, "
                  f"mean diff {sum(x for x, _ in d) / len(d):+.2f}, from {d[0][0]:+.2f} ({d[0][1]}) "
                  f"to {d[-1][0]:+.2f} ({d[-1][1]})")


def main():
    fp32_dir, bf16_dir, bf16_wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
    fp32_wall = float(sys.argv[4]) if len(sys.argv) > 4 else None
    bf16_study = load_study(bf16_dir)
    if fp32_wall is None:
        with tempfile.TemporaryDirectory() as tmp:
            compare_verdicts(same_presets(fp32_dir, bf16_study["presets"], tmp), bf16_dir, every_claim=False)
    else:
        compare_verdicts(fp32_dir, bf16_dir, every_claim=True)
    fp32_study = load_study(fp32_dir)
    compare_selections(fp32_study, bf16_study)
    compare_losses(fp32_study, bf16_study)
    compare_scores(fp32_study, bf16_study)
    n = len(bf16_study["runs"])
    line = f"wall: bf16 {bf16_wall:.1f} s, {n} runs, {n * 3600 / bf16_wall:.0f} runs/hour"
    if fp32_wall is not None:
        line += f"; fp32 {fp32_wall:.1f} s, {n * 3600 / fp32_wall:.0f} runs/hour ({fp32_wall / bf16_wall:.2f}x)"
    print(line)


if __name__ == "__main__":
    main()
