#!/usr/bin/env python3
"""The bf16 half of bench/bf16_control.sh against a committed fp32 study
(FP32_FROM, e.g. docs/study/v3) standing in for the fp32 half: valid where
this build's fp32 gives that study's runs bit for bit (bench/study_jobs.sh
checks it at every v3 shape). Prints, for each claim the bf16 run tested,
its verdict beside the committed report's under the same rule, and each
run's final validation loss against the committed run of the same name.

  bench/bf16_against.py COMMITTED_STUDY BF16_STUDY WALL_SECONDS
"""
import json
import os
import sys

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


def val_losses(study):
    return {r["name"]: r["outcome"].get("val_loss") for r in study["runs"]
            if r.get("kind") == "train" and isinstance(r.get("outcome"), dict)}


def main():
    committed_dir, bf16_dir, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
    committed = verdict_rows(os.path.join(committed_dir, "report.md"))
    mine = verdict_rows(os.path.join(bf16_dir, "report.md"))
    print("| claim | committed fp32 (its row) | bf16 | same |\n|---|---|---|---|")
    changed = tested = 0
    for claim, verdict in mine.items():
        if verdict == "not tested":
            continue
        row, theirs = current_rule(committed, claim)
        tested += 1
        same = theirs == verdict
        changed += not same
        print(f"| {claim} | {theirs} ({row}) | {verdict} | {'yes' if same else '**no**'} |")
    print(f"\nverdicts changed: {changed} of {tested} tested")
    fp32 = val_losses(json.loads(study_pack.read_packed(committed_dir).decode("utf-8")))
    with open(os.path.join(bf16_dir, "study.json"), encoding="utf-8") as f:
        bf16_study = json.load(f)
    bf16 = val_losses(bf16_study)
    pairs = {k: (fp32[k], bf16[k]) for k in bf16 if k in fp32 and fp32[k] is not None and bf16[k] is not None}
    d = sorted((abs(b - a), k) for k, (a, b) in pairs.items())
    if d:
        mean = sum(x for x, _ in d) / len(d)
        print(f"final val loss, bf16 - committed fp32 over {len(d)} paired runs (of {len(bf16)}): "
              f"median |diff| {d[len(d) // 2][0]:.4f}, mean {mean:.4f}, max {d[-1][0]:.4f} ({d[-1][1]})")
    n = len(bf16_study["runs"])
    print(f"wall: bf16 {wall:.1f} s, {n} runs, {n * 3600 / wall:.0f} runs/hour")


if __name__ == "__main__":
    main()
