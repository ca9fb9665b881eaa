"""gpt2lab's BLEU, chrF and 13a tokenizer (`gpt2lab score`) against NLTK's
implementations (nltk.translate.bleu_score, nltk.translate.chrf_score;
Debian's python3-nltk), on fixed English/French sentence pairs written here
and on corpora drawn from a fixed seed. Scores agree within 1e-6 on
gpt2lab's 0..100 scale (NLTK's is 0..1).

What is compared, and why these inputs:
  13a      gpt2lab's tokens (`score --show-tokens --json`) against a Python
           13a written here from sacreBLEU's definition (tokenizer_13a.py,
           tokenizer_re.py), on adversarial strings: entities, <skipped>,
           digits next to . , -, every symbol, Unicode white space, multibyte
           characters, and thousands of random mixes of those.
  BLEU     NLTK's corpus_bleu on the SAME tokens: NLTK takes token lists, so
           it gets the Python 13a's tokens of each line (and, for
           `--tokenize none`, the line split on white space). gpt2lab
           computes sacreBLEU's BLEU (exp smoothing); NLTK's default has no
           smoothing and gives a sentence shorter than n one n-gram of
           denominator. The two definitions agree exactly when every
           hypothesis has >= 4 tokens and every n-gram order has >= 1 match
           over the corpus -- so every set here is built that way, and the
           test checks that it is (a set that broke it would fail, not
           compare two different things). Beyond the score: per-order
           matches and totals against modified_precision's numerators and
           denominators, the lengths, and the brevity penalty.
  chrF     `--chrf-average sentence --chrf-beta B` against
           corpus_chrf(refs, hyps, beta=B) for B = 2 and 3 (the same
           definition: per-sentence, per-order F-beta, macro-averaged). The
           default (sacreBLEU's corpus statistics) is checked on NLTK's
           counting: its per-sentence matches (the `support` of
           chrf_precision_recall_fscore_support), summed with sacreBLEU's rule
           (a hypothesis's n-grams count only against a reference that has
           some), then sacreBLEU's effective-order average written out here.

Skips when NLTK is missing (scripts/setup.sh installs
python3-nltk), unless CI is set: there that is a failure.
"""
import json
import os
import random
import re
import string

import pytest

import harness

TOLERANCE = 1e-6  # on the 0..100 scale

# ---------------------------------------------------------------- 13a in Python

# sacreBLEU's 13a, from its definition: entity and <skipped> replacements in
# order, each one pass; pad with spaces; split off every ASCII symbol but
# ' , - . ; split off . and , unless a digit precedes, then unless a digit
# follows; split off - after a digit; split on white space.
_REPLACEMENTS = (("<skipped>", ""), ("-\n", ""), ("\n", " "), ("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"),
                 ("&gt;", ">"))
_SYMBOLS = "".join(sorted((set(string.punctuation) | {" "}) - set("',-.")))
_RULES = (
    (re.compile("([" + re.escape(_SYMBOLS) + "])"), r" \1 "),
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)


def tokenize_13a(line):
    for old, new in _REPLACEMENTS:
        line = line.replace(old, new)
    line = " " + line + " "
    for pattern, replacement in _RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def bleu_tokens(line, tokenize):
    """What BLEU counts for a line: right-stripped, then tokenized."""
    line = line.rstrip()
    return tokenize_13a(line) if tokenize == "13a" else line.split()


# ---------------------------------------------------------------- test data

# (hypothesis, reference): machine-translation-like output with partial
# overlaps, punctuation, numbers and entities for 13a to work on. Every
# hypothesis has at least 4 tokens.
PAIRS = [
    ("The cat sat on the mat.", "The cat was sitting on the mat."),
    ("It is a guide to action which ensures that the military always obeys the commands of the party.",
     "It is a guide to action that ensures that the military will forever heed Party commands."),
    ("He read the book because he was interested in world history.",
     "He was interested in world history because he read the book."),
    ("The meeting has been postponed until next Tuesday, 3 p.m.",
     "The meeting was postponed to next Tuesday at 3 p.m."),
    ("Prices rose by 3.5% in 2023, compared with 2.1% a year earlier.",
     "Prices increased 3.5% in 2023, against 2.1% the year before."),
    ("The company employs 12,000 people in 40 countries.",
     "The firm has 12,000 employees in 40 countries."),
    ("She said: &quot;We will not give up.&quot;", "She said: \"We shall never give up.\""),
    ("Tom &amp; Jerry is a cartoon from 1940-1958.", "Tom and Jerry is a cartoon made in 1940-1958."),
    ("The results (see table 2) are better than expected.",
     "The results (see Table 2) were better than expected."),
    ("Please send your answer to info@example.org before Friday.",
     "Please send your reply to info@example.org by Friday."),
    ("In the morning, the streets of the old town are quiet.",
     "In the morning the streets of the old town are calm."),
    ("We need more time to finish the project, said the manager.",
     "\"We need more time to complete the project,\" the manager said."),
    ("The train to Paris leaves at 8:15 from platform 4.", "The Paris train departs at 8:15 from platform 4."),
    ("Nobody knows where the money went <skipped> last year.", "No one knows where the money went last year."),
    ("The temperature will drop to -5 degrees tonight.", "Temperatures will fall to -5 degrees tonight."),
    ("Children under 12 years travel for free on weekends.", "Children under 12 travel free at weekends."),
    ("The minister announced new measures against inflation on Monday.",
     "On Monday the minister announced new measures to fight inflation."),
    ("It's not the first time that this happens in the region.",
     "It is not the first time this has happened in the region."),
    ("Le chat est assis sur le tapis.", "Le chat était assis sur le tapis."),
    ("La réunion a été reportée à mardi prochain, 15 h.", "La réunion est reportée à mardi prochain à 15 h."),
    ("Les prix ont augmenté de 3,5 % en 2023.", "Les prix ont progressé de 3,5 % en 2023."),
    ("L'entreprise emploie 12 000 personnes dans 40 pays.", "La société compte 12 000 salariés dans 40 pays."),
    ("Elle a dit : « Nous n'abandonnerons jamais. »", "Elle a déclaré : « Nous n'abandonnerons jamais. »"),
    ("Le train pour Paris part à 8 h 15 du quai 4.", "Le train de Paris part à 8 h 15 de la voie 4."),
    ("Personne ne sait où est passé l'argent l'année dernière.",
     "Personne ne sait où est allé l'argent l'an dernier."),
    ("Les enfants de moins de 12 ans voyagent gratuitement le week-end.",
     "Les enfants de moins de 12 ans voyagent gratuitement en fin de semaine."),
    ("Le ministre a annoncé lundi de nouvelles mesures contre l'inflation.",
     "Lundi, le ministre a annoncé de nouvelles mesures contre l'inflation."),
    ("Ce n'est pas la première fois que cela arrive dans la région.",
     "Ce n'est pas la première fois que cela se produit dans la région."),
    ("Le matin, les rues de la vieille ville sont calmes.", "Le matin, les rues de la vieille ville sont tranquilles."),
    ("Nous avons besoin de plus de temps pour finir le projet.",
     "Il nous faut plus de temps pour terminer le projet."),
    ("La température descendra à -5 degrés cette nuit.", "Les températures tomberont à -5 degrés cette nuit."),
    ("Les résultats (voir tableau 2) sont meilleurs que prévu.",
     "Les résultats (voir le tableau 2) sont meilleurs que prévu."),
    ("Il pleut depuis trois jours sans interruption.", "Il pleut sans arrêt depuis trois jours."),
    ("Le musée est fermé le mardi et les jours fériés.", "Le musée ferme le mardi et les jours fériés."),
    ("The new bridge will be opened to traffic in early 2025.",
     "The new bridge will open to traffic at the start of 2025."),
    ("A spokesman declined to comment on the report.", "A spokesperson refused to comment on the report."),
]

# Strings built to tell 13a's rules apart (one per line: no "\n" in them).
ADVERSARIAL = [
    "", " ", "a", "1.5.2", "3.", ".5", "x..", "1,a a,1", "a.1 1.a", "1990-91", "5--6", "-5 a-5", "5-a", "a-5",
    "&quot;&amp;&lt;&gt;", "&amp;lt;", "&amp;quot;", "&amp;amp;gt;", "&nbsp; &#39; &QUOT;", "&&;;&amp",
    "<skipped>", "<skip<skipped>ped>", "a<skipped>b", "<SKIPPED>", "don't can't 'quoted'",
    "{|}~[\\]^_`!\"#$%&()*+:;<=>?@/", "a,b.c-d'e", "1,000.50 1.000,50 $1,000,000.-", "3.14, 2.71. 1,",
    "café. é,1 ü-2 2-ü", "日本語。中文，1.5", "a\u00a0b\u3000c\u2028d\u2029e\u0085f\u1680g\u202fh\u205fi",
    "e\u200bf \ufefft", "\x1c\x1d\x1e\x1fx\x0b\x0cy\tz", "😀.😀,1 1.😀", "a\rb", "....,,,,----",
    "1.-2 1,-2 -1. -.1 .-1", "end of sentence .", "trailing space   ", "\t leading", "50% 5 % (5)",
    "http://example.org/a-b_c?d=1&e=2.", "e-mail: a.b@c.d", "U.S.A. e.g. i.e.,", "O'Neil's 80's",
]


def random_adversarial(rng, count):
    pieces = ["a", "Z", "0", "9", "1", ".", ",", "-", "'", "&", ";", "<", ">", "quot", "amp", "lt", "gt",
              "&quot;", "&amp;", "&lt;", "&gt;", "<skipped>", "skipped", " ", "  ", "\t", "\u00a0", "\u3000",
              "\u2028", "\u0085", "\x1c", "\x0b", "é", "日", "。", "\u200b", "$", "%", "/", "@", "_", "~", "`",
              "\\", "\"", "(", ")", "😀", "ß", "Ω"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(count)]


WORDS = ("the a of to and in that is was he for it with as his on be at by had are but from or have an they "
         "which one you were all we her she there would their will when who him been has more if no out so said "
         "what up its about than into them can only other new some could time these two may then first any like "
         "now my such over our man me even most made after also did many before must through back years where "
         "much your way well down should because each just those people how too little state good very make "
         "world still own see men work long get here between both life being under never day same another know "
         "while last might us great old year off come since against go came right used take three . , ; : ? ! "
         "( ) \" 's n't 1 2 3 4.5 10,000 1990-91").split()


def random_bleu_corpus(rng, n_pairs, keep, min_ref=5, max_ref=25):
    """References of random words; hypotheses copy them with random edits
    (keep: the chance a token is kept as it is). Lines are tokens joined by
    spaces, so 13a and a white-space split see nearly the same tokens."""
    hyps, refs = [], []
    for _ in range(n_pairs):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(min_ref, max_ref))]
        hyp = []
        for tok in ref:
            r = rng.random()
            if r < keep:
                hyp.append(tok)
            elif r < keep + (1 - keep) / 3:
                hyp.append(rng.choice(WORDS))  # substitute
            elif r < keep + 2 * (1 - keep) / 3:
                pass  # delete
            else:
                hyp.extend([tok, rng.choice(WORDS)])  # insert after
        while len(hyp) < 4:
            hyp.append(rng.choice(WORDS))
        if rng.random() < 0.2 and len(hyp) > 5:  # swap two neighbours
            i = rng.randrange(len(hyp) - 1)
            hyp[i], hyp[i + 1] = hyp[i + 1], hyp[i]
        hyps.append(" ".join(hyp))
        refs.append(" ".join(ref))
    return hyps, refs


def random_chrf_corpus(rng, n_pairs):
    """Character-level corpora: shared stems, accents, CJK, white space of
    every kind, and now and then an empty or one-character line."""
    alphabet = list("aaabcdeeefghiiklmnooprssttuu") + ["é", "è", "ç", "ü", "ß", "日", "本", "😀", "'", ".", ","]
    spaces = [" ", " ", " ", "\t", "\u00a0", "\u3000"]

    def word():
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))

    hyps, refs = [], []
    for _ in range(n_pairs):
        ref_words = [word() for _ in range(rng.randint(0, 10))]
        hyp_words = [w if rng.random() < 0.6 else word() for w in ref_words if rng.random() < 0.9]
        if rng.random() < 0.3:
            hyp_words.append(word())
        hyps.append("".join(w + rng.choice(spaces) for w in hyp_words).strip(" "))
        refs.append("".join(w + rng.choice(spaces) for w in ref_words).strip(" "))
    hyps[0], refs[1] = "", "x"  # an empty hypothesis, a one-character reference
    return hyps, refs


# ---------------------------------------------------------------- gpt2lab

def write_lines(path, lines):
    for line in lines:
        assert "\n" not in line, "a line cannot hold a newline"
    with open(path, "wb") as f:
        f.write("".join(line + "\n" for line in lines).encode("utf-8"))


def gpt2lab_json(tmp, hyps, refs, *flags):
    hyp_path, ref_path = os.path.join(tmp, "hyp.txt"), os.path.join(tmp, "ref.txt")
    write_lines(hyp_path, hyps)
    write_lines(ref_path, refs)
    r = harness.run("score", "--hyp", hyp_path, "--ref", ref_path, "--json", *flags, check=True)
    return json.loads(r.stdout)


def close(a, b):
    return abs(a - b) <= TOLERANCE


# ---------------------------------------------------------------- the sets compared

def _corpora():
    """(BLEU sets [(name, hyps, refs, tokenize)], chrF sets [(name, hyps,
    refs)], the names of the BLEU sets whose brevity penalties are
    collected), drawn in one fixed order from one seed."""
    hyps, refs = [h for h, _ in PAIRS], [r for _, r in PAIRS]
    bleu = [("fixed pairs", hyps, refs, "13a"), ("fixed pairs, white-space tokens", hyps, refs, "none"),
            ("fixed pairs, pre-tokenized", [" ".join(tokenize_13a(h)) for h in hyps],
             [" ".join(tokenize_13a(r)) for r in refs], "none")]
    chrf = [("fixed pairs", hyps, refs)]
    rng = random.Random(2024)
    for i, (n_pairs, keep) in enumerate([(5, 0.9), (40, 0.7), (200, 0.5), (120, 0.35), (60, 0.8)]):
        hyps, refs = random_bleu_corpus(rng, n_pairs, keep)
        for tokenize in ("13a", "none"):
            bleu.append((f"random corpus {i}", hyps, refs, tokenize))
        chrf.append((f"random words {i}", hyps, refs))
    # Mostly deletions: hypotheses shorter than their references.
    hyps, refs = random_bleu_corpus(rng, 80, 0.55, min_ref=8)
    hyps = [" ".join(h.split()[: max(4, len(h.split()) * 3 // 4)]) for h in hyps]
    bleu.append(("random short hypotheses", hyps, refs, "none"))
    for i in range(4):
        hyps, refs = random_chrf_corpus(rng, [3, 30, 150, 400][i])
        chrf.append((f"random characters {i}", hyps, refs))
    return bleu, chrf


BLEU_SETS, CHRF_SETS = _corpora()


@pytest.fixture(scope="module", autouse=True)
def nltk():
    try:
        import nltk.translate.bleu_score  # noqa: F401
        import nltk.translate.chrf_score  # noqa: F401
    except ImportError as e:
        print(f"missing: NLTK ({e}); scripts/setup.sh installs python3-nltk")
        if os.environ.get("CI"):
            pytest.fail("NLTK is missing under CI")
        pytest.skip("NLTK is missing")
    import warnings
    warnings.simplefilter("ignore")  # NLTK warns about zero counts in its own checks


def adversarial_lines():
    rng = random.Random(13)
    return ADVERSARIAL + random_adversarial(rng, 3000) + [h for h, _ in PAIRS] + [r for _, r in PAIRS]


def test_13a_tokens_equal_python_13a(tmp_path):
    lines = adversarial_lines()
    # Every line on both sides: hypotheses as they are, references reversed.
    out = gpt2lab_json(tmp_path, lines, lines[::-1], "--show-tokens")
    inputs = lines + lines[::-1]
    ours = out["hyp_tokens"] + out["ref_tokens"]
    ref = [bleu_tokens(x, "13a") for x in inputs]
    bad = [(x, o, p) for x, o, p in zip(inputs, ours, ref) if o != p]
    assert len(ours) == len(ref) and not bad, \
        (f"13a: gpt2lab's tokens equal the Python 13a's on {len(ref)} adversarial lines"
         + (f"; first difference: {bad[0][0]!r}: gpt2lab {bad[0][1]} vs {bad[0][2]}" if bad else ""))


def test_tokenize_none_splits_on_white_space(tmp_path):
    lines = adversarial_lines()
    none = gpt2lab_json(tmp_path, lines, lines, "--show-tokens", "--tokenize", "none")["hyp_tokens"]
    assert none == [bleu_tokens(x, "none") for x in lines], \
        "--tokenize none: tokens equal Python's str.split() (Unicode white space) on the same lines"


def nltk_bleu_reference(hyp_tokens, ref_tokens):
    """NLTK's corpus BLEU and its sufficient statistics, and whether the set
    meets the conditions under which it equals sacreBLEU's."""
    from nltk.translate.bleu_score import brevity_penalty, corpus_bleu, modified_precision
    refs = [[r] for r in ref_tokens]
    matches = [sum(modified_precision(rs, h, n).numerator for rs, h in zip(refs, hyp_tokens)) for n in range(1, 5)]
    totals = [sum(modified_precision(rs, h, n).denominator for rs, h in zip(refs, hyp_tokens)) for n in range(1, 5)]
    hyp_len = sum(map(len, hyp_tokens))
    ref_len = sum(map(len, ref_tokens))
    comparable = min(map(len, hyp_tokens)) >= 4 and min(matches) >= 1
    return {"score": 100 * corpus_bleu(refs, hyp_tokens), "matches": matches, "totals": totals,
            "hyp_len": hyp_len, "ref_len": ref_len, "bp": brevity_penalty(ref_len, hyp_len), "comparable": comparable}


def bleu_of(tmp, hyps, refs, tokenize):
    """(gpt2lab's BLEU, NLTK's reference)."""
    flags = [] if tokenize == "13a" else ["--tokenize", "none"]
    ours = gpt2lab_json(tmp, hyps, refs, *flags)["bleu"]
    ref = nltk_bleu_reference([bleu_tokens(h, tokenize) for h in hyps], [bleu_tokens(r, tokenize) for r in refs])
    return ours, ref


@pytest.mark.parametrize("name,hyps,refs,tokenize", BLEU_SETS, ids=[f"{b[0]}-{b[3]}" for b in BLEU_SETS])
def test_bleu_equals_nltk(tmp_path, name, hyps, refs, tokenize):
    ours, ref = bleu_of(tmp_path, hyps, refs, tokenize)
    assert ref["comparable"], (f"BLEU {name}: every hypothesis has >= 4 tokens and every order a match "
                               f"(matches {ref['matches']})")
    assert ours["matches"] == ref["matches"] and ours["totals"] == ref["totals"], \
        (f"BLEU {name}: matches {ours['matches']} and totals {ours['totals']} equal NLTK's "
         f"{ref['matches']} {ref['totals']}")
    assert ours["hyp_len"] == ref["hyp_len"] and ours["ref_len"] == ref["ref_len"], \
        f"BLEU {name}: lengths {ours['hyp_len']}/{ours['ref_len']} equal NLTK's {ref['hyp_len']}/{ref['ref_len']}"
    assert abs(ours["brevity_penalty"] - ref["bp"]) <= 1e-12, \
        f"BLEU {name}: brevity penalty {ours['brevity_penalty']:.9f} vs NLTK {ref['bp']:.9f}"
    assert close(ours["score"], ref["score"]), \
        f"BLEU {name} ({len(hyps)} lines, tokenize {tokenize}): {ours['score']:.9f} vs NLTK {ref['score']:.9f}"


def test_bleu_sets_include_both_brevity_cases(tmp_path):
    brevity = []
    for name, hyps, refs, tokenize in BLEU_SETS:
        if name.startswith("random"):
            ours, ref = bleu_of(tmp_path, hyps, refs, tokenize)
            if ref["comparable"]:
                brevity.append(ours["brevity_penalty"])
    assert any(bp < 1 for bp in brevity) and any(bp == 1 for bp in brevity), \
        f"the BLEU sets include brevity penalties below 1 and equal to 1 ({[round(b, 4) for b in brevity]})"


def sacrebleu_chrf_from_nltk(hyps, refs, beta, order):
    """sacreBLEU's corpus chrF on NLTK's n-gram matching (see the top)."""
    from nltk.translate.chrf_score import _preprocess, chrf_precision_recall_fscore_support
    hyp_sum, ref_sum, match_sum = [0] * order, [0] * order, [0] * order
    for h, r in zip(hyps, refs):
        h, r = _preprocess(h, True), _preprocess(r, True)
        for n in range(1, order + 1):
            tp = chrf_precision_recall_fscore_support(r, h, n, beta=beta)[3]
            n_hyp, n_ref = max(0, len(h) - n + 1), max(0, len(r) - n + 1)
            hyp_sum[n - 1] += n_hyp if n_ref > 0 else 0
            ref_sum[n - 1] += n_ref
            match_sum[n - 1] += tp
    effective = [(m / h, m / r) for h, r, m in zip(hyp_sum, ref_sum, match_sum) if h > 0 and r > 0]
    p = sum(x for x, _ in effective) / len(effective) if effective else 0.0
    rec = sum(y for _, y in effective) / len(effective) if effective else 0.0
    f = beta ** 2
    score = 100 * (1 + f) * p * rec / (f * p + rec) if p + rec else 0.0
    return {"score": score, "hyp_ngrams": hyp_sum, "ref_ngrams": ref_sum, "matches": match_sum}


@pytest.mark.parametrize("beta", [2, 3])
@pytest.mark.parametrize("name,hyps,refs", CHRF_SETS, ids=[c[0] for c in CHRF_SETS])
def test_chrf_equals_nltk(tmp_path, name, hyps, refs, beta):
    from nltk.translate.chrf_score import corpus_chrf
    ours = gpt2lab_json(tmp_path, hyps, refs, "--chrf-average", "sentence", "--chrf-beta", str(beta))["chrf"]
    ref = 100 * corpus_chrf(refs, hyps, beta=beta)
    assert close(ours["score"], ref), \
        f"chrF {name} (beta {beta}, sentence average): {ours['score']:.9f} vs NLTK corpus_chrf {ref:.9f}"
    ours = gpt2lab_json(tmp_path, hyps, refs, "--chrf-beta", str(beta))["chrf"]
    ref = sacrebleu_chrf_from_nltk(hyps, refs, beta, 6)
    assert all(ours[k] == ref[k] for k in ("hyp_ngrams", "ref_ngrams", "matches")), \
        f"chrF {name} (beta {beta}, corpus statistics): n-gram counts equal NLTK's matching"
    assert close(ours["score"], ref["score"]), \
        f"chrF {name} (beta {beta}, corpus statistics): {ours['score']:.9f} vs {ref['score']:.9f}"
