#!/usr/bin/env python3
"""Draws a gpt2lab study (OUT/study.json + each run's metrics.jsonl) into
OUT/report.md and OUT/report.html (figures inline, base64), with figures in
OUT/figures/.

Every sentence under "Findings" is computed from the numbers in the study;
none is pre-written. Where a measurement disagrees with the papers (Xiong et
al. 2020 for the LayerNorm placement, Radford et al. 2019 for GPT-2's scaled
residual init) the text says so, with what the study varied to rule out a
design artefact.

At the top, a verdict table: one row per claim of the papers (verdicts.py
has the claims and the rules), each verdict computed from every seed of the
settings it rests on, by the same functions the sections' findings print.

The sections follow the presets study.json lists ("presets"; a run's own
"preset" counts too): each known preset the study ran gets its section, in
that order (gpt2lab writes the list in the order of its one preset table,
src/study/plan.cpp), and a known preset it did not run a
one-line "Not run in this study". A preset this report does not know (a
study written by a newer gpt2lab, or an edited study.json) is skipped with a
note in the report and a warning on stderr; its runs still appear under
"Text samples" and "Divergence and loss spikes".

Usage: python3 tools/report OUT [--no-figures]   (this folder; any working
directory; --no-figures writes the same text without the figures, in about
a quarter of the time)
       python3 tools/report --rules [FILE]   (the registered verdict rules,
verdicts.rules_table(), as JSON on stdout or into FILE: what gpt2lab records
in study.json's "rules" when it creates a study, before the runs)
Exit status: 0 written, 2 bad input, 3 matplotlib missing.
"""
import importlib.util
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# Run as a folder, sys.path[0] is this folder: dropped, so that the package's
# module names (load, stats, ...) cannot shadow any other module.
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
    del sys.path[0]


def print_rules(args):
    """--rules [FILE]: needs no matplotlib (the study runs it when it
    creates study.json), so it is handled before the import."""
    spec = importlib.util.spec_from_file_location("report", os.path.join(_HERE, "__init__.py"),
                                                  submodule_search_locations=[_HERE])
    sys.modules["report"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules["report"])
    from report.verdicts import rules_table
    text = json.dumps(rules_table(), indent=1, ensure_ascii=False) + "\n"
    if len(args) > 1:
        tmp = args[1] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args[1])
    else:
        sys.stdout.write(text)
    return 0


if sys.argv[1:2] == ["--rules"] and len(sys.argv) <= 3:
    sys.exit(print_rules(sys.argv[1:]))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import matplotlib.ticker  # noqa: F401
except ImportError:  # the study command turns exit 3 into an install hint
    sys.stderr.write("report: matplotlib is missing (Debian: apt-get install python3-matplotlib)\n")
    sys.exit(3)

# The package is this folder, imported as `report` whatever the folder is
# called (tools/report in the source tree, share/gpt2lab/tools/report when
# installed) and wherever it is run from.
_INIT = os.path.join(_HERE, "__init__.py")
if os.path.abspath(getattr(sys.modules.get("report"), "__file__", None) or os.curdir) != _INIT:  # not `-m report`
    _spec = importlib.util.spec_from_file_location("report", _INIT, submodule_search_locations=[_HERE])
    sys.modules["report"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["report"])

from report import evidence, precision, verdicts  # noqa: E402
from report.document import Doc, Link  # noqa: E402
from report.load import Study  # noqa: E402
from report.sections import BY_PRESET, PRESET_SECTIONS, divergence, fluency, samples  # noqa: E402
from report.stats import GROWS, SPIKE_JUMP, SPIKE_WINDOW  # noqa: E402


def shown_path(path, out):
    """A path as the report shows it: relative to the study folder when it
    lies inside it, else its last two components (a report must not carry
    the absolute paths of the machine it was made on)."""
    if not path:
        return "?"
    if not os.path.isabs(path):  # gpt2lab records paths inside the study folder relative to it
        return os.path.normpath(path)
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(out))
    if not rel.startswith(".."):
        return rel
    parts = os.path.normpath(path).split(os.sep)
    return os.path.join(*parts[-2:]) + " (outside the study folder)"


def shown_command(command, out):
    """The study's command with its paths as the report shows them: --out
    as the study folder itself (.), --data by shown_path."""
    words = command.split(" ")
    for i in range(1, len(words)):
        if words[i - 1] == "--out":
            words[i] = "."
        elif words[i - 1] == "--data":
            words[i] = shown_path(words[i], out).replace(" (outside the study folder)", "")
    return " ".join(words)


def jobs_text(s):
    """The runs' own thread count when the study ran several at once: run
    time is then the sum over runs, more than the wall time."""
    if s.get("jobs", 1) <= 1:
        return ""
    return f" ({s['jobs']} runs at a time, {s.get('threads_per_run', '?')} thread(s) each)"


def budget_rows(budget, prefix=""):
    """The budget as (dotted.key, value) rows; floats as typed (%g)."""
    rows = []
    for key in sorted(budget):
        value = budget[key]
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += budget_rows(value, name + ".")
        elif isinstance(value, float):
            rows.append((name, f"{value:g}"))
        elif isinstance(value, list):
            rows.append((name, ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)))
        else:
            rows.append((name, str(value)))
    return rows


# What a study.json with missing or odd fields raises while a section reads it.
DATA_ERRORS = (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError)


def guarded(doc, section, st, findings):
    """section.draw, or, where the study's data lacks what it needs, a note
    in its place (and on stderr) instead of a report that is not written."""
    blocks, figures = len(doc.blocks), len(doc.figures)
    try:
        section.draw(doc, st, findings)
    except DATA_ERRORS as e:
        matplotlib.pyplot.close("all")
        del doc.blocks[blocks:], doc.figures[figures:]
        name = getattr(section, "PRESET", section.__name__.rsplit(".", 1)[-1])
        sys.stderr.write(f"report: section {name} could not be drawn ({type(e).__name__}: {e})\n")
        if os.environ.get("GPT2LAB_REPORT_TRACE"):
            import traceback
            traceback.print_exc()
        doc.p(f"This section could not be drawn from this study's data ({type(e).__name__}: {e}).")


def seeds_bullet(st):
    seeds = st.seeds()
    if len(seeds) > 1:
        return (f"{len(seeds)} seeds per setting ({', '.join(map(str, seeds))}): a setting's runs differ only in "
                "the seed, and runs of one seed differ only in what the grid varies.")
    return ("One seed per setting (the same seed for every run, so runs differ only in what the grid varies): no "
            "comparison reaches the seeds a stated difference needs.")


def verdict_table(doc, st, not_run):
    """The verdicts, one row per claim, with the numbers behind each and
    links to the sections that hold the measurements."""
    doc.h(2, "Verdicts")
    drawn = {m.PRESET: m.TITLE for m in PRESET_SECTIONS if m.PRESET not in not_run}
    drawn["fluency"] = fluency.TITLE  # drawn for every study, as Text samples
    rows = []
    for v in st.verdicts.values():
        links = [Link(p, doc.anchor(drawn[p])) if p in drawn else f"{p} (not run)" for p in v.sections]
        mark = precision.mark(st, v.sections)
        if v.changed:
            r = v.registered
            rows.append([f"{v.claim} (registered rule {v.registered_rule})", r.verdict if r else "–",
                         mark + (r.numbers if r else "this report does not know the registered rule"), links])
            rows.append([f"{v.claim} (rule {v.rule}, changed after the runs)", v.verdict, mark + v.numbers, links])
        else:
            rows.append([v.claim, v.verdict, mark + v.numbers, links])
    doc.p(f"Each claim's verdict is computed from every seed of the settings it rests on: a difference counts only "
          f"when both sides have at least {verdicts.MIN_SEEDS} seeds and |Δmean| > {verdicts.NOISE:g}·pooled sd "
          "(otherwise: within seed noise); a value outside the probed range is a bound ('< x', '≥ x'), and a "
          "comparison with a bound counts only when the bound itself decides it (otherwise: not resolved). "
          "'confirmed': resolved in the claimed direction (a claim with several measures: every measure that could "
          "be computed confirms); 'not observed at this scale': no resolved difference either way; 'contradicted': "
          "resolved the other way; 'mixed': the claim's measures disagree (each measure's own verdict is in "
          "[brackets]); 'not tested': no runs, or too few seeds (Method has the rules).")
    doc.p(rules_note(st))
    doc.table(["claim", "verdict", "numbers", "section"], rows)
    if any(verdicts.disagrees(v) for v in st.verdicts.values()):
        doc.p("Where a verdict disagrees with the papers or does not show their result, note what the study varied "
              "to rule out a design artefact: " + "; ".join(evidence.artefact_checks(st)) + ".")


def rules_note(st):
    """Where the rules the verdicts use come from: study.json's registered
    rules, the version-1 rules for a study written before registration, or
    none registered."""
    changed = [v for v in st.verdicts.values() if v.changed]
    pairs = ", ".join(f"{v.registered_rule} → {v.rule}" for v in changed)
    tail = (" A rule changed after the runs is shown under both: the registered rule's verdict first, then the "
            "current one's, marked 'changed after the runs' (" + pairs + ").") if changed else ""
    if "rules" not in st.s:
        return ("This study predates registered verdict rules: it counts as registered under version 1 of each "
                "claim's rule (tools/report/verdicts.py, RULE_VERSIONS)." + tail)
    if not isinstance(st.s.get("rules"), dict):
        note = st.s.get("rules_note")
        return ("The verdict rules were not registered when this study was created" +
                (f" ({note})" if isinstance(note, str) and note else "") +
                ": the verdicts below use this report's current rules, and no earlier rule can be shown beside them.")
    return ("Each claim's rule was registered in study.json when the study was created, before its runs." + tail)


def header(doc, st, out, title):
    """The title, the study's budget, runs, data and dates, and its command."""
    s = st.s
    data = s.get("data", {})
    runs = st.runs
    secs = sum(r.get("seconds", 0) or r.get("result", {}).get("seconds", 0) for r in runs)
    doc.h(1, title)
    doc.p(f"Budget '{st.budget.get('name', '?')}', {len(runs)} runs ({', '.join(s.get('presets', []))}), "
          f"{s.get('threads', '?')} threads{jobs_text(s)}, {secs / 60:.1f} minutes of run time; "
          f"data {shown_path(data.get('dir'), out)} "
          f"(tokenizer {data.get('tokenizer_identity', '?')}, vocabulary {data.get('vocab_size', '?')}). "
          f"Study created {s.get('created', '?')}, last updated {s.get('updated', '?')}.")
    if s.get("command"):
        doc.pre(shown_command(s["command"], out))
    doc.p(precision.note(st))


def draw_sections(doc, st, not_run, findings):
    """The presets' sections in the study's order, then samples, fluency and divergence."""
    if not_run:
        # One line, not an empty section per preset.
        doc.p(f"Not run in this study: {', '.join(not_run)} (gpt2lab study --preset NAME --out STUDY, with this "
              "study's folder as STUDY, adds one).")
    for section in [BY_PRESET[p] for p in st.presets if p in BY_PRESET and p not in not_run]:
        doc.h(2, section.TITLE)
        guarded(doc, section, st, findings)
    for preset in [p for p in st.presets if p not in BY_PRESET]:
        sys.stderr.write(f"report: study.json names preset '{preset}', which this report does not know; "
                         "its section is left out\n")
        doc.h(2, f"{preset}: not drawn")
        doc.p(f"This study names the preset '{preset}', which this report has no section for (it knows "
              f"{', '.join(BY_PRESET)}); its runs appear only under Text samples and Divergence and loss "
              "spikes.")
    doc.h(2, "Text samples")
    guarded(doc, samples, st, findings)
    doc.h(2, fluency.TITLE)
    guarded(doc, fluency, st, findings)
    doc.h(2, "Divergence and loss spikes")
    guarded(doc, divergence, st, findings)


def train_target_note(st):
    """Where the training split's baseline came from, when not from study.json:
    a study recorded before gpt2lab wrote it, read without its shards, times
    its runs to another x, and its report says so."""
    if st.unigram_train is not None and st.unigram_train_from == "shards":
        return " This study.json records no training-split baseline: it was computed from the study's shards."
    if st.unigram_train is None and st.unigram is not None:
        return (" **This study.json records no training-split baseline and the study's shards are not here, so x "
                "is 0.1 nats below the validation split's baseline instead: tokens-to-x and the verdicts that "
                "use them (norm's 'converges faster', atlas's ReZero) may differ from the report drawn with the "
                "data.**")
    return ""


def method(doc, st):
    """The Method section and the budget table."""
    doc.h(2, "Method")
    doc.bullets([
        "Train loss curves are trailing moving averages over 1/40 of a run; validation points are the "
        "trainer's evaluations (the same validation batches every time).",
        f"A loss spike is a step whose loss is more than {int(SPIKE_JUMP * 100)}% above the median of the "
        f"previous {SPIKE_WINDOW} steps (consecutive such steps count once).",
        "'Tokens to loss ≤ x': the tokens trained on when the smoothed train loss first reaches x, where x is 0.1 "
        "nats below the unigram baseline on the training split (the point where a model starts to use context); "
        "without a baseline, the median final smoothed train loss of the preset's runs that did not diverge. In "
        "comparisons a seed that never reaches x is a bound, '≥ its run's total tokens' (censored, see below); "
        "tables average only the seeds that reached it, with their count." + train_target_note(st),
        "Unigram baseline: the cross-entropy of the training split's token frequencies (add-one smoothed) on the "
        "validation split (study.json's baselines where gpt2lab wrote them, else computed from the shards); a "
        "model at this loss predicts common tokens and nothing from context. A run left the unigram plateau when "
        "its final validation loss is more than 0.1 nats below it.",
        "Divergence: the trainer's rule (a non-finite loss, or a loss above its threshold for a window of "
        "consecutive steps); a spike (trainer) is a loss that went above the threshold and came back.",
        f"Xiong pattern at init (rule stable-gradients/2): per run, the least-squares slope of log ‖∇W‖ over the "
        f"layers, for W¹ (mlp.c_fc) and W² (mlp.c_proj) separately; per setting the mean slope over seeds with its "
        f"{verdicts.CI_LEVEL:.0%} Student-t interval (n − 1 dof, at least {verdicts.MIN_SEEDS} seeds): Post-LN's "
        "interval entirely above 0 (grows toward the output) and Pre-LN's not. Under rule stable-gradients/1 "
        f"(shown where a study registered it): Post-LN's last/first-layer FFN gradient ratio above {GROWS}, "
        f"Pre-LN's at most {GROWS}.",
        seeds_bullet(st),
        f"Seed noise: a comparison states a difference only when both settings have at least {verdicts.MIN_SEEDS} "
        f"seeds and |Δmean| > {verdicts.NOISE:g}·pooled sd (pooled sd = √((sd₁² + sd₂²)/2), sample sds); "
        "otherwise "
        "it says 'within seed noise'. A diverged seed counts as ln V (the uniform prediction's loss) in the final "
        "validation losses compared; tables show the mean ± sd over the seeds that completed.",
        "Binary measures over seeds (left the unigram plateau, i.e. a final validation loss 0.1 nats below the "
        f"unigram baseline): a setting trains when all of its seeds (at least {verdicts.MIN_SEEDS}) do and fails "
        "when none does; anything in between is seed-dependent and supports no statement.",
        "Max stable lr over seeds: geometric mean and sd of log2 (octaves). A search where nothing trained is a "
        "bound, '< the lowest probe'; one where everything trained, '≥ the grid's top': a bound is never averaged "
        "(a setting with one shows its seeds, not a mean), and a comparison with a bound is resolved only when "
        "every seed of one side lies surely beyond every seed of the other; otherwise it is 'not resolved' and "
        "supports no verdict.",
        "Verdicts: where a claim rests on several settings, more than half of the comparable settings must be "
        "resolved in one direction; where it rests on several measures, it is confirmed only when every measure "
        "that could be computed confirms (contradicted only when every one contradicts, not observed when none "
        "resolves anything), and 'mixed' otherwise, with each measure's own verdict shown; 'not tested' means the "
        "study has no such runs or too few seeds. Each claim's rule is declared, versioned, in "
        "tools/report/verdicts.py (RULE_VERSIONS) and recorded in study.json when the study is created; a rule "
        "changed after the runs is reported beside the registered rule's verdict, never instead of it.",
        "All numbers and every finding above are computed by tools/report from study.json and the runs' "
        "metrics.jsonl; rerunning it on the same folder gives the same report.",
    ])
    doc.p("The budget, every number the runs used:")
    doc.table(["setting", "value"], [[k, v] for k, v in budget_rows(st.budget)])


def insert_summary(doc, findings, summary_at):
    """The summary of findings: it goes near the top (at block summary_at) but is assembled last."""
    summary = []
    for key in (*BY_PRESET, "samples", "fluency", "divergence"):
        if findings.get(key):
            summary.append(f"[{key}] " + findings[key][0])
            for extra in findings[key][1:]:
                if any(w in extra for w in ("disagrees with", "matches Xiong", "distinct hidden unit")):
                    summary.append(f"[{key}] " + extra)
    doc.blocks[summary_at:summary_at] = [("h", 2, "Summary of findings"), ("ul", summary)]


def main():
    args = sys.argv[1:]
    figures = "--no-figures" not in args
    args = [a for a in args if a != "--no-figures"]
    usage = "usage: report OUT [--no-figures] (OUT: a folder with study.json; --no-figures: the text only, faster)\n"
    if args in (["--help"], ["-h"]):
        sys.stdout.write(usage)
        return 0
    if len(args) != 1 or args[0].startswith("-"):
        sys.stderr.write(usage)
        return 2
    out = args[0]
    try:
        st = Study(out)
    except (OSError, EOFError, ValueError, KeyError) as e:
        sys.stderr.write(f"report: cannot read {os.path.join(out, 'study.json')}: {e}\n")
        return 2
    doc = Doc(out, figures)
    title = "gpt2lab study report"
    header(doc, st, out, title)
    findings = {}
    not_run = [section.PRESET for section in PRESET_SECTIONS
               if section.PRESET not in st.presets or not st.has(section.PRESET)]
    try:
        registered = verdicts.registered_rules(st.s)
    except ValueError as e:
        sys.stderr.write(f"report: cannot read {os.path.join(out, 'study.json')}: {e}\n")
        return 2
    try:
        st.verdicts = {v.key: v for v in verdicts.evaluate(evidence.gather(st), registered)}
    except DATA_ERRORS as e:  # a hand-edited or partial study.json
        sys.stderr.write(f"report: the verdicts could not be computed ({type(e).__name__}: {e})\n")
        st.verdicts = {}
    verdict_table(doc, st, not_run)
    summary_at = len(doc.blocks)
    draw_sections(doc, st, not_run, findings)
    method(doc, st)
    insert_summary(doc, findings, summary_at)
    doc.write(title)
    print(f"report: wrote {os.path.join(out, 'report.md')}, report.html and {len(doc.figures)} figures"
          + ("" if doc.draw else " (--no-figures)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
