"""translation: machine translation (English→French pairs from Debian's
gettext catalogs), Pre-LN vs Post-LN from scratch with and without warmup,
and fine-tuned after pre-training on the study's text corpus, over seeds
(Xiong et al. 2020 measured the placement on IWSLT14 De→En)."""
import math
import statistics

from ..common import add_findings, artefact_line
from ..evidence import artefact_checks, mt_groups, mt_score
from ..plot import COLORS, plt
from ..stats import fmt_lr, fmt_msd
from ..verdicts import CONFIRMED, FEW, NOT_TESTED, Diff, combine, disagrees, score, warmup_label

PRESET = "translation"
TITLE = "translation: Pre-LN vs Post-LN on machine translation"
NAME = {"pre": "Pre-LN", "post": "Post-LN"}
MEASURES = (("bleu", "BLEU"), ("chrf", "chrF"))
EXAMPLES = 3  # test sentences shown per setting
CELL = 100  # characters of a sentence shown in the examples table

# What each cleaning rule does (src/translation/pairs.h), in its order.
CLEANING = [
    ("entries", "catalog entries read"),
    ("header", "dropped: the catalog's metadata entry (msgid \"\")"),
    ("obsolete", "dropped: obsolete (#~) entries"),
    ("fuzzy", "dropped: fuzzy entries (translations not confirmed)"),
    ("untranslated", "dropped: no translation"),
    ("plural_pairs", "added: a plural entry's plural form as a second pair"),
    ("whitespace_normalized", "counted, not dropped: white space collapsed and trimmed"),
    ("not_utf8", "dropped: a side that is not UTF-8"),
    ("empty", "dropped: a side empty after normalization"),
    ("identical", "dropped: the translation equals the source"),
    ("extracted", "pairs after the per-entry rules"),
    ("duplicates", "dropped: the same (source, translation) again"),
    ("too_long", "dropped: a side over the length cap"),
    ("with_format_specifiers", "counted, not dropped: a side holds a format specifier (%s, {0}, ...)"),
    ("kept", "pairs kept, then split by source string"),
    ("alternative_references_dropped", "valid/test: other translations of a source (one reference kept)"),
]


def label(key):
    """A setting in words: arm, placement, init, warmup."""
    arm, init, norm, wf = key
    if arm == "pretrain":
        return f"pre-training, {NAME.get(norm, norm)}"
    head = "from scratch" if arm == "scratch" else "fine-tuned"
    return f"{head}, {NAME.get(norm, norm)}" + (f", init {init}" if arm == "scratch" else "") + f", {warmup_label(wf)}"


def scores(runs, measure):
    """Per seed: the run's test score as the table shows it (completed runs
    with a translation record only)."""
    return [r["translation"][measure] for r in runs if isinstance(r.get("translation"), dict)
            and isinstance(r["translation"].get(measure), (int, float))]


def beam_scores(runs, measure):
    """Per seed: the run's test score with beam search (runs that have one)."""
    return [r["translation"]["beam"][measure] for r in runs if isinstance(r.get("translation"), dict)
            and isinstance(r["translation"].get("beam"), dict)
            and isinstance(r["translation"]["beam"].get(measure), (int, float))]


def beam_width(g):
    for rs in g.values():
        for r in rs:
            t = r.get("translation")
            if isinstance(t, dict) and isinstance(t.get("beam"), dict):
                return t["beam"].get("width")
    return None


def msd(values, n, nd=2):
    """mean ± sd, with how many seeds it rests on when fewer than n."""
    text = fmt_msd(values, nd)
    return text + (f" [{len(values)} seeds]" if values and len(values) < n else "")


def first_init(g):
    """The scratch init compared with the fine-tunings (gpt2: the one their
    pre-training used), or the first there is."""
    inits = sorted({str(k[1]) for k in g if k[0] == "scratch"})
    return "gpt2" if "gpt2" in inits else (inits[0] if inits else None)


def warmups_of(g, arm):
    return sorted({k[3] for k in g if k[0] == arm and k[3] is not None})


# ---------------------------------------------------------------- data

def reconcile(c):
    """Whether the cleaning counts add up (src/translation/pairs.h's identities),
    as a sentence."""
    need = ("entries", "header", "obsolete", "fuzzy", "untranslated", "plural_pairs", "not_utf8", "empty",
            "identical", "extracted", "duplicates", "too_long", "kept")
    if not all(isinstance(c.get(k), int) for k in need):
        return ""
    extracted = (c["entries"] - c["header"] - c["obsolete"] - c["fuzzy"] - c["untranslated"] + c["plural_pairs"]
                 - c["not_utf8"] - c["empty"] - c["identical"])
    kept = c["extracted"] - c["duplicates"] - c["too_long"]
    if extracted == c["extracted"] and kept == c["kept"]:
        return (" The counts reconcile (entries − drops + plural pairs = extracted; extracted − duplicates − too "
                "long = kept).")
    return f" The counts do not reconcile (expected {extracted} extracted and {kept} kept)."


def draw_data(doc, st):
    d = st.s.get("translation_data") if isinstance(st.s.get("translation_data"), dict) else {}
    t = d.get("translation") if isinstance(d.get("translation"), dict) else {}
    pairs, tokens = d.get("pairs") or {}, d.get("tokens") or {}
    packages = [p for p in d.get("packages") or [] if isinstance(p, dict)]
    mb = st.budget.get("translation") if isinstance(st.budget.get("translation"), dict) else {}
    src, tgt = t.get("source_name", "source"), t.get("target_name", "target")
    origin = (f"of {len(packages)} Debian package{'s' if len(packages) != 1 else ''}" if packages else
              "(no Debian package list recorded)")
    doc.p(f"Data: {src}→{tgt} pairs from {d.get('catalogs', '?')} gettext catalogs {origin}, cleaned, "
          f"deduplicated and split by source string (no {src} string is in two splits): "
          f"{pairs.get('train', '?')} train, {pairs.get('valid', '?')} valid and {pairs.get('test', '?')} test pairs "
          f"({tokens.get('train', '?')} train tokens, {tokens.get('val', '?')} validation tokens). Pairs with a side "
          f"over {mb.get('max_tokens', '?')} GPT-2 tokens are dropped. "
          f"Tokenizer: {d.get('tokenizer', '?')}, one BPE for both languages, trained on the pre-training corpus "
          "and the train split's pairs (never on valid or test). Each pair is one training document, the loss on "
          "the completion only; prompt and completion:")
    doc.pre(t.get("prompt", "?") + t.get("completion", ""))
    if packages:
        names = [f"{p.get('package', '?')} {p.get('version', '')}".strip() for p in packages]
        doc.p("Packages: " + ", ".join(names[:30]) + (f" and {len(names) - 30} more." if len(names) > 30 else "."))
    c = d.get("cleaning") if isinstance(d.get("cleaning"), dict) else {}
    known = [k for k, _ in CLEANING]
    rows = [[k, c[k], what] for k, what in CLEANING if k in c] + [[k, c[k], "–"] for k in c if k not in known]
    if rows:
        doc.p("Cleaning, rule by rule, in the order the rules apply (an entry leaves at the first rule that drops "
              "it)." + reconcile(c))
        doc.table(["rule", "count", "what it does"], rows)


def draw_runs(doc, st, g):
    runs = [r for rs in g.values() for r in rs]
    mb = st.budget.get("translation") if isinstance(st.budget.get("translation"), dict) else {}
    scratch = [r for k, rs in g.items() if k[0] == "scratch" for r in rs]
    cfg = (scratch or runs)[0].get("config", {})
    model = cfg.get("model", {})
    n_seeds = sorted({len(v) for v in g.values()})
    n_pairs = sorted({r["translation"]["pairs"] for r in runs if isinstance(r.get("translation"), dict)
                      and isinstance(r["translation"].get("pairs"), int)})
    inits = sorted({str(k[1]) for k in g if k[0] == "scratch"})
    warm = warmups_of(g, "scratch") or warmups_of(g, "finetune")
    doc.p(f"{len(runs)} runs ({'–'.join(map(str, n_seeds))} seeds per setting) of a {model.get('n_layer', '?')}"
          f"-layer, n_embd {model.get('n_embd', '?')} GPT-2, batches of {cfg.get('batch_size', '?')}×"
          f"{cfg.get('seq_len', '?')} tokens, gradient clipping {cfg.get('grad_clip') or 'off'}, "
          f"{cfg.get('schedule', '?')} schedule. From scratch: "
          f"{mb.get('shape', {}).get('steps', cfg.get('steps', '?'))} steps at lr "
          f"{fmt_lr(mb['lr']) if isinstance(mb.get('lr'), (int, float)) else '?'}, init {', '.join(inits) or '–'}, "
          f"warmup {', '.join(f'{w:.0%}' for w in warm)} of the steps. Pre-training: a language model on the study's "
          f"text corpus (--data), {mb.get('pretrain_steps', '?')} steps, init gpt2, warmup "
          f"{mb.get('pretrain_warmup_fraction', 0):.0%}; each seed is then fine-tuned on the pairs for "
          f"{mb.get('finetune_steps', '?')} steps at lr "
          f"{fmt_lr(mb['finetune_lr']) if isinstance(mb.get('finetune_lr'), (int, float)) else '?'} with the same "
          f"warmups (a fine-tuning whose pre-training did not complete is skipped). Every completed run translates "
          f"the first {', '.join(map(str, n_pairs)) or '?'} test pairs greedily; BLEU (corpus, sacreBLEU's 13a "
          "tokenization) and chrF are on a 0–100 scale, every hypothesis in the run's folder. Tables and figures "
          "use the seeds that completed; comparisons count a diverged seed as BLEU 0 and chrF 0 (it translates "
          "nothing).")


# ---------------------------------------------------------------- table and figures

def settings_table(doc, st, g):
    rows = []
    width = beam_width(g)
    for key, rs in g.items():
        n = len(rs)
        status = [r.get("status") for r in rs]
        other = [s for s in status if s not in ("completed", "diverged")]
        done = [r for r in rs if isinstance(r.get("translation"), dict)]
        cap = sum(r["translation"].get("hit_length_cap", 0) or 0 for r in done)
        pairs = sum(r["translation"].get("pairs", 0) or 0 for r in done)
        row = [label(key), n, f"{status.count('completed')}/{n}", f"{status.count('diverged')}/{n}",
               (f"{len(other)} ({', '.join(sorted(set(other)))})" if other else "0"),
               msd(scores(rs, "bleu"), n) if key[0] != "pretrain" else "–",
               msd(scores(rs, "chrf"), n) if key[0] != "pretrain" else "–"]
        if width:
            row += [msd(beam_scores(rs, "bleu"), n) if key[0] != "pretrain" else "–",
                    msd(beam_scores(rs, "chrf"), n) if key[0] != "pretrain" else "–"]
        rows.append(row + [msd([st.val_loss(r) for r in rs if st.val_loss(r) is not None], n, 3),
                           f"{cap}/{pairs}" if pairs else "–"])
    head = ["setting", "seeds", "completed", "diverged", "skipped / other", "test BLEU, greedy (mean ± sd)",
            "test chrF, greedy (mean ± sd)"]
    if width:
        head += [f"test BLEU, beam {width}", f"test chrF, beam {width}"]
    doc.table(head + ["final val loss (mean ± sd)", "greedy hypotheses at the length cap"], rows)


def plot_val(ax, st, runs, color, name):
    """A setting's validation loss: mean over seeds with a ±1 sd band, ×
    where a seed diverged. Returns the plotted means."""
    by_step = {}
    for r in runs:
        m = st.metrics.get(r["name"], {})
        for s, v in zip(m.get("val_steps", []), m.get("val", [])):
            if isinstance(v, (int, float)) and math.isfinite(v):
                by_step.setdefault(s, []).append(v)
    if not by_step:
        return []
    xs = sorted(by_step)
    mean = [statistics.mean(by_step[x]) for x in xs]
    sd = [statistics.stdev(by_step[x]) if len(by_step[x]) > 1 else 0.0 for x in xs]
    n = max(len(v) for v in by_step.values())
    ax.plot(xs, mean, "-o", color=color, ms=3, lw=1.3, label=f"{name} ({n} seed{'s' if n > 1 else ''})")
    if n > 1:
        ax.fill_between(xs, [m - s for m, s in zip(mean, sd)], [m + s for m, s in zip(mean, sd)], color=color,
                        alpha=0.2, lw=0)
    for r in runs:
        if st.diverged(r) and st.diverged_at(r) is not None:
            ax.plot([st.diverged_at(r)], [max(mean)], "x", color=color, ms=9, mew=2)
    return mean


def loss_figure(doc, st, g):
    """Validation loss per arm (rows) and warmup (columns), Pre-LN against
    Post-LN in each panel."""
    rows = [("scratch", i) for i in sorted({str(k[1]) for k in g if k[0] == "scratch"})]
    rows += [(arm, None) for arm in ("finetune", "pretrain") if any(k[0] == arm for k in g)]
    cols = sorted({k[3] for k in g if k[3] is not None}) or [None]
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(5.2 * len(cols), 3.2 * len(rows)), squeeze=False)
    for i, (arm, init) in enumerate(rows):
        for j, wf in enumerate(cols):
            ax = axes[i][j]
            if arm == "pretrain" and j > 0:
                ax.axis("off")
                continue
            ys = []
            for norm in ("pre", "post"):
                rs = [r for k, v in g.items() for r in v if k[0] == arm and k[2] == norm and
                      (init is None or str(k[1]) == init) and (arm == "pretrain" or k[3] == wf)]
                ys += plot_val(ax, st, rs, COLORS[norm], NAME[norm])
            if ys and st.uniform:
                ax.set_ylim(top=min(max(ys) + 0.2, st.uniform + 1.5))
            where = {"scratch": f"from scratch, init {init}", "finetune": "fine-tuned",
                     "pretrain": "pre-training (text corpus)"}[arm]
            ax.set_title(where + ("" if arm == "pretrain" else f", {warmup_label(wf)}"), fontsize=10)
            ax.set_xlabel("step")
            ax.set_ylabel("val loss (nats)")
            ax.grid(alpha=0.3)
            if ys:
                ax.legend(fontsize=8)
    doc.figure(fig, "translation_val_loss.png", "Validation loss (on the completions) per setting, mean over seeds "
                                                "with a ±1 sd band (×: a seed diverged)")


def score_figure(doc, st, g):
    """Test BLEU and chrF per setting: bars at the mean over the seeds that
    completed, ±1 sd, a circle per seed, × at 0 per diverged seed."""
    sets = list(dict.fromkeys((k[0], k[1], k[3]) for k in g if k[0] != "pretrain"))
    fig, axes = plt.subplots(1, 2, figsize=(max(7.0, 1.3 * len(sets) + 2), 3.8))
    for ax, (m, name) in zip(axes, MEASURES):
        for i, (arm, init, wf) in enumerate(sets):
            for j, norm in enumerate(("pre", "post")):
                rs = g.get((arm, init, norm, wf), [])
                vals = scores(rs, m)
                x = i + (j - 0.5) * 0.38
                if vals:
                    sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
                    ax.bar([x], [statistics.mean(vals)], 0.36, yerr=[sd], color=COLORS[norm], alpha=0.55,
                           capsize=3, label=NAME[norm] if i == 0 else None)
                    ax.plot([x] * len(vals), vals, "o", color=COLORS[norm], ms=3.5, mfc="white")
                div = sum(st.diverged(r) for r in rs)
                if div:
                    ax.plot([x] * div, [0] * div, "x", color=COLORS[norm], ms=8, mew=2)
        ax.set_xticks(range(len(sets)))
        ax.set_xticklabels([("scratch\n" + str(init) if arm == "scratch" else "fine-tuned") + "\n" +
                            warmup_label(wf) for arm, init, wf in sets], fontsize=7)
        ax.set_ylabel(f"test {name}")
        ax.set_ylim(0, max(ax.get_ylim()[1], 1.0))
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    doc.figure(fig, "translation_scores.png", "Test BLEU and chrF per setting: bars mean ± 1 sd over the seeds that "
                                              "completed, circles each seed, × a diverged seed")


# ---------------------------------------------------------------- examples

def clip(text):
    text = text.replace("\n", " ⏎ ")
    return (text[:CELL] + " …" if len(text) > CELL else text) or "(empty)"


def first_seed(rs):
    return min(rs, key=lambda r: r.get("variables", {}).get("seed_index", 0)) if rs else None


def hypotheses(r):
    """A run's example hypotheses, or why it has none."""
    if r is None:
        return None, "–"
    t = r.get("translation")
    if isinstance(t, dict) and isinstance(t.get("examples"), list):
        return t["examples"], None
    return None, f"– ({r.get('status', '?')})"


def example(ex, i, field, why):
    return clip(ex[i][field]) if ex and i < len(ex) and isinstance(ex[i].get(field), str) else (why or "–")


def examples_table(doc, g):
    """Source, reference and the first seed's Pre-LN and Post-LN hypotheses,
    side by side, for the scratch runs (gpt2 init) and the fine-tunings."""
    init = first_init(g)
    width = beam_width(g)
    rows = []
    for arm, ini in (("scratch", init), ("finetune", "pretrained")):
        for wf in warmups_of(g, arm):
            pre = first_seed(g.get((arm, ini, "pre", wf)))
            post = first_seed(g.get((arm, ini, "post", wf)))
            (ex_pre, why_pre), (ex_post, why_post) = hypotheses(pre), hypotheses(post)
            base = ex_pre or ex_post or []
            where = ("from scratch, init " + str(ini) if arm == "scratch" else "fine-tuned") + ", " + warmup_label(wf)
            for i, e in enumerate(base[:EXAMPLES]):
                hp = example(ex_pre, i, "hypothesis", why_pre)
                hq = example(ex_post, i, "hypothesis", why_post)
                row = [where, clip(e["source"]), clip(e["reference"]), hp, hq]
                if width:
                    row.insert(4, example(ex_pre, i, "hypothesis_beam", why_pre))
                    row.append(example(ex_post, i, "hypothesis_beam", why_post))
                rows.append(row)
    if rows:
        doc.p(f"The first {EXAMPLES} test pairs, translated by each setting's first seed"
              + (f" (greedy, and beam search of width {width}):" if width else ":"))
        head = ["setting", "source", "reference", "Pre-LN", "Post-LN"]
        if width:
            head = ["setting", "source", "reference", "Pre-LN", f"Pre-LN, beam {width}", "Post-LN",
                    f"Post-LN, beam {width}"]
        doc.table(head, rows)


# ---------------------------------------------------------------- findings

def compare(g, a, b):
    """'BLEU … ; chrF …' of two settings' Diffs (a diverged seed as 0)."""
    parts = []
    for m, name in MEASURES:
        d = Diff([mt_score(r, m) for r in g.get(a, [])], [mt_score(r, m) for r in g.get(b, [])])
        parts.append(f"{name} {d.text(score)}")
    return "; ".join(parts)


def headline(g):
    """The four (or so) BLEU comparisons in one sentence."""
    init = first_init(g)
    parts = []
    for arm, ini, word in (("scratch", init, f"from scratch (init {init})"), ("finetune", "pretrained", "fine-tuned")):
        cells = []
        for wf in warmups_of(g, arm):
            pre, post = g.get((arm, ini, "pre", wf), []), g.get((arm, ini, "post", wf), [])
            cells.append(f"{warmup_label(wf)} {msd(scores(pre, 'bleu'), len(pre))} vs "
                         f"{msd(scores(post, 'bleu'), len(post))}")
        if cells:
            parts.append(f"{word}: " + ", ".join(cells))
    return ("Test BLEU, Pre-LN vs Post-LN (mean ± sd over the seeds that completed): " + "; ".join(parts) + "."
            if parts else "No translation run from scratch or fine-tuned.")


def status_lines(st, g):
    runs = [r for rs in g.values() for r in rs]
    status = [r.get("status") for r in runs]
    other = len(runs) - status.count("completed") - status.count("diverged")
    out = [f"{len(runs)} translation runs: {status.count('completed')} completed, {status.count('diverged')} "
           f"diverged" + (f", {other} not run to the end (skipped or interrupted)" if other else "") + "."]
    div = [f"{label(k)} {sum(st.diverged(r) for r in rs)}/{len(rs)}" for k, rs in g.items()
           if any(st.diverged(r) for r in rs)]
    if div:
        out.append("Seeds that diverged: " + "; ".join(div) + ".")
    notes = sorted({f"{r['name']} ({r['note']})" for r in runs if r.get("status") == "skipped" and r.get("note")})
    if notes:
        out.append("Skipped: " + "; ".join(notes) + ".")
    return out


def pretrain_line(st, g):
    pre, post = g.get(("pretrain", "gpt2", "pre", None)), g.get(("pretrain", "gpt2", "post", None))
    if not pre or not post:
        return []
    d = Diff([st.final_value(r) for r in pre], [st.final_value(r) for r in post])
    return [f"Pre-training on the text corpus, final validation loss Pre-LN vs Post-LN (a diverged seed as ln V): "
            f"{d.text()}."]


def warm_lines(g):
    """From scratch with the longest warmup, Pre-LN vs Post-LN (no claim
    rests on it; Xiong et al. find the two close once Post-LN has warmup)."""
    ws = warmups_of(g, "scratch")
    if len(ws) < 2:
        return []
    inits = sorted({str(k[1]) for k in g if k[0] == "scratch"})
    return [f"From scratch with {warmup_label(ws[-1])}, init {i}, test Pre-LN vs Post-LN: "
            f"{compare(g, ('scratch', i, 'pre', ws[-1]), ('scratch', i, 'post', ws[-1]))}." for i in inits]


def quality_lines(g):
    done = [r["translation"] for rs in g.values() for r in rs if isinstance(r.get("translation"), dict)]
    out = []
    bleus = [t["bleu"] for t in done if isinstance(t.get("bleu"), (int, float))]
    if bleus and max(bleus) < 1:
        out.append(f"Test BLEU is below 1 in every run (highest {max(bleus):.2f}): at this scale the models do not "
                   "translate yet, so BLEU cannot rank the settings; chrF (character n-grams) and the validation "
                   "loss still can.")
    pairs = sum(t.get("pairs", 0) or 0 for t in done)
    if pairs:
        cap = sum(t.get("hit_length_cap", 0) or 0 for t in done)
        out.append(f"{cap} of {pairs} test hypotheses ({cap / pairs:.0%}) reached the length cap without ending "
                   "(<|endoftext|> never came).")
    return out


def xiong_line(st, g):
    """Xiong et al. (2020)'s translation result against this study's, by
    the verdicts of the two claims it makes."""
    vs = [st.verdicts.get(k) for k in ("mt-no-warmup", "mt-warmup")] if st.verdicts else []
    vs = [v for v in vs if v]
    if not vs:
        return []
    init = first_init(g)
    ws = warmups_of(g, "scratch")
    here = "; ".join(f"{NAME[n]} " + " → ".join(
        fmt_msd(scores(g.get(("scratch", init, n, w), []), "bleu"), 2) for w in ws) for n in ("post", "pre"))
    v = combine([x.verdict for x in vs])  # two claims as two measures of one result: both must agree
    word = ("this matches Xiong et al.'s pattern (confirmed)" if v == CONFIRMED else
            f"whether it reproduces is not tested ({FEW})" if v == NOT_TESTED else
            f"this disagrees with (or does not show) Xiong et al. (2020)'s result ({v})")
    return [f"Xiong et al. (2020), IWSLT14 De→En: Post-LN reaches 8.45 BLEU without warmup and about 34 with it, "
            f"while Pre-LN trains without warmup. Here, from scratch (init {init}), test BLEU "
            f"{' → '.join(warmup_label(w) for w in ws)}: {here}; {word}."]


def verdict_lines(st, key):
    """A claim's sentences (its details, then its verdict), or none."""
    v = st.verdicts.get(key) if st.verdicts else None
    return v.lines(PRESET) if v else []


def best_line(g):
    done = [(k, scores(rs, "bleu"), scores(rs, "chrf")) for k, rs in g.items()
            if k[0] != "pretrain" and rs and len(scores(rs, "bleu")) == len(rs)]
    if not done:
        return []
    k, b, c = max(done, key=lambda x: (statistics.mean(x[1]), statistics.mean(x[2]) if x[2] else 0))
    return [f"Best setting by test BLEU: {label(k)}, BLEU {msd(b, len(b))}, chrF {msd(c, len(c))}."]


def draw(doc, st, findings):
    g = mt_groups(st)
    draw_data(doc, st)
    draw_runs(doc, st, g)
    settings_table(doc, st, g)
    loss_figure(doc, st, g)
    score_figure(doc, st, g)
    examples_table(doc, g)
    f = [headline(g)] + status_lines(st, g) + pretrain_line(st, g)
    f += verdict_lines(st, "mt-no-warmup") + warm_lines(g) + verdict_lines(st, "mt-warmup")
    f += verdict_lines(st, "mt-pretrain-gap") + quality_lines(g) + xiong_line(st, g)
    keys = ("mt-no-warmup", "mt-warmup", "mt-pretrain-gap")
    if st.verdicts and any(disagrees(st.verdicts[k]) for k in keys if k in st.verdicts):
        f.append("Where a verdict above is 'not observed', 'mixed' or 'contradicted', this study does not show the "
                 "papers' result at this scale. " + artefact_line(st, artefact_checks(st)))
    f += best_line(g)
    add_findings(doc, findings, PRESET, f)
