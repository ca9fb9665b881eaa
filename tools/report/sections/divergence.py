"""Divergence and loss spikes, per preset and setting: runs the trainer
marked diverged (its recovery-aware rule), spikes it counted (the loss went
above the threshold and came back), and the report's own relative-jump
spike count as a second measure."""
from ..common import describe, jump_spikes
from ..stats import SPIKE_JUMP, SPIKE_WINDOW


def setting_of(r):
    """A run's setting without its seed (and, for lr-edge probes, its lr)."""
    d = describe(r)
    if r.get("preset") == "lr-edge":
        d = ", ".join(p for p in d.split(", ") if not p.startswith("lr "))
    return d


def draw(doc, st, findings):
    runs = [r for r in st.runs if r.get("kind") == "train"]
    by_preset, by_setting = {}, {}
    for r in runs:
        by_preset.setdefault(r.get("preset", "?"), []).append(r)
        by_setting.setdefault((r.get("preset", "?"), setting_of(r)), []).append(r)

    def counts(rs):
        div = [r for r in rs if st.diverged(r)]
        sp = [st.spikes(r) for r in rs]
        jp = [jump_spikes(st, r) for r in rs]
        return (div, sum(x or 0 for x in sp) if any(x is not None for x in sp) else None,
                sum(bool(x) for x in sp if x is not None), sum(x or 0 for x in jp))

    rows = []
    for preset, rs in by_preset.items():
        div, sp, sp_runs, jp = counts(rs)
        rows.append([preset, len(rs), len(div), "–" if sp is None else f"{sp} in {sp_runs} runs", jp])
    n_div = sum(st.diverged(r) for r in runs)
    doc.p(f"{n_div} of {len(runs)} training runs diverged by the trainer's rule (a non-finite loss, or a loss above "
          "its threshold for its window of consecutive steps); a spike is a loss that went above the threshold and "
          f"came back (counted by the trainer), and the relative-jump measure counts steps more than "
          f"{int(SPIKE_JUMP * 100)}% above the median of the previous {SPIKE_WINDOW} (consecutive ones once).")
    doc.table(["preset", "training runs", "diverged", "spikes (trainer)", "spikes (10% jump)"], rows)
    srows = []
    for (preset, setting), rs in by_setting.items():
        div, sp, sp_runs, jp = counts(rs)
        if div or sp or jp or any(r.get("status") not in ("completed", "diverged") for r in rs):
            unfinished = sum(r.get("status") not in ("completed", "diverged") for r in rs)
            srows.append([preset, setting, len(rs), len(div),
                          ", ".join(str(st.diverged_at(r)) for r in div) or "–",
                          "; ".join(sorted({r.get("outcome", {}).get("reason", "") for r in div} - {""})) or "",
                          "–" if sp is None else sp, jp, unfinished or ""])
    if srows:
        doc.p("Settings (all seeds; lr-edge: all probes of the setting) with a divergence, a spike or an unfinished "
              "run:")
        doc.table(["preset", "setting", "runs", "diverged", "diverged at step", "reason", "spikes (trainer)",
                   "spikes (10% jump)", "not finished"], srows)
    f = [f"{n_div} of {len(runs)} training runs diverged."]
    for preset, rs in by_preset.items():
        div, sp, sp_runs, jp = counts(rs)
        f.append(f"{preset}: {len(div)} of {len(rs)} runs diverged; "
                 + (f"{sp} spikes that recovered in {sp_runs} runs (the trainer's count); " if sp is not None else "")
                 + f"{jp} relative-jump spikes.")
    findings["divergence"] = f
    doc.h(3, "Findings")
    doc.bullets(f)
