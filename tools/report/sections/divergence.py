"""Divergence and loss spikes: every run that diverged or spiked."""
from ..common import describe, max_loss
from ..stats import count_spikes, fmt


def draw(doc, st, findings):
    runs = [r for r in st.runs if r.get("kind") == "train"]
    rows = []
    for r in runs:
        m = st.metrics.get(r["name"], {})
        loss = m.get("loss", [])
        if r.get("status") == "diverged":
            o = r.get("outcome", {})
            rows.append([r["name"], describe(r), "diverged", o.get("diverged_at", "–"), o.get("reason", ""),
                         count_spikes(loss), fmt(max_loss(st, r))])
        elif loss and count_spikes(loss):
            rows.append([r["name"], describe(r), r.get("status"), "–", "", count_spikes(loss), fmt(max_loss(st, r))])
        elif r.get("status") not in ("completed", "diverged"):
            rows.append([r["name"], describe(r), r.get("status", "pending"), "–", "not finished", "–", "–"])
    n_div = sum(r.get("status") == "diverged" for r in runs)
    doc.p(f"{n_div} of {len(runs)} training runs diverged; this table lists them and every run with a loss spike.")
    if rows:
        doc.table(["run", "setting", "status", "diverged at step", "reason", "loss spikes", "max train loss"], rows)
    findings["divergence"] = [f"{n_div} of {len(runs)} training runs diverged."]
