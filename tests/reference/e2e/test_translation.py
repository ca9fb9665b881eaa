"""The translation case end to end on hand-made gettext catalogs: prepare-translation
(pairs, loss mask, split by source) -> train a few steps -> eval-translation
(BLEU/chrF equal to `gpt2lab score` on the same hypotheses), the study's
translation preset at the tiny budget, and bad input refused with nothing
written half.

The .mo files are written here by a small writer of GNU's format (magic,
revision 0, sorted original/translation tables), independent of the C++
reader; the .po file is plain text.
"""
import json
import os
import random
import shutil
import struct
import sys

import pytest

import harness
from harness import run as gpt2lab
from shards import read_shard

WORDS = [("file", "fichier"), ("folder", "dossier"), ("open", "ouvrir"), ("close", "fermer"), ("save", "enregistrer"),
         ("error", "erreur"), ("window", "fenêtre"), ("user", "utilisateur"), ("name", "nom"), ("size", "taille"),
         ("new", "nouveau"), ("help", "aide"), ("copy", "copier"), ("delete", "supprimer"), ("print", "imprimer")]


def write_mo(path, entries):
    """GNU .mo, little-endian, revision 0: entries is [(msgid bytes, msgstr bytes)] incl. the header."""
    entries = sorted(entries)
    n = len(entries)
    orig_table, trans_table = 28, 28 + 8 * n
    data_start = 28 + 16 * n
    blob, orig, trans = b"", [], []
    for k, _ in entries:
        orig.append((len(k), data_start + len(blob)))
        blob += k + b"\0"
    for _, v in entries:
        trans.append((len(v), data_start + len(blob)))
        blob += v + b"\0"
    head = struct.pack("<7I", 0x950412de, 0, n, orig_table, trans_table, 0, 0)
    tables = b"".join(struct.pack("<2I", *x) for x in orig) + b"".join(struct.pack("<2I", *x) for x in trans)
    with open(path, "wb") as f:
        f.write(head + tables + blob)


def synthetic_pairs(count, seed):
    rng = random.Random(seed)
    out = {}
    while len(out) < count:
        (a, fa), (b, fb) = rng.sample(WORDS, 2)
        n = rng.randint(1, 99)
        out[f"{a} {b} {n}".capitalize()] = f"{fa} {fb} {n}".capitalize()
    return sorted(out.items())


def make_catalogs(root):
    """Two catalogs for fr (a .mo and a .po), one for de; 300 + 40 pairs in fr."""
    fr = os.path.join(root, "pkg-a", "usr", "share", "locale", "fr", "LC_MESSAGES")
    os.makedirs(fr)
    header = (b"", b"Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=2; plural=(n > 1);\n")
    pairs = synthetic_pairs(300, 1)
    entries = [header] + [(s.encode(), t.encode()) for s, t in pairs]
    entries.append((b"%d file\0%d files", b"%d fichier\0%d fichiers"))  # plural: both pairs
    entries.append((b"Same", b"Same"))  # identical: dropped
    entries.append((b"menu\x04Open", b"Ouvrir"))  # with a context
    write_mo(os.path.join(fr, "alpha.mo"), entries)
    po = os.path.join(root, "pkg-b", "locale", "fr", "LC_MESSAGES")
    os.makedirs(po)
    lines = ['msgid ""', 'msgstr ""', '"Content-Type: text/plain; charset=UTF-8\\n"', ""]
    for s, t in synthetic_pairs(40, 2):
        lines += [f'msgid "{s}"', f'msgstr "{t}"', ""]
    lines += ["#, fuzzy", 'msgid "Fuzzy thing"', 'msgstr "Chose floue"', ""]  # fuzzy: dropped
    lines += ['msgid "Not yet"', 'msgstr ""', ""]  # untranslated: dropped
    lines += ['msgid ""', '"Two "', '"lines"', 'msgstr "Deux "', '"lignes"', ""]  # multiline
    with open(os.path.join(po, "beta.po"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    de = os.path.join(root, "pkg-a", "usr", "share", "locale", "de", "LC_MESSAGES")
    os.makedirs(de)
    write_mo(os.path.join(de, "alpha.mo"), [header] + [(s.encode(), t.encode()) for s, t in synthetic_pairs(50, 3)])
    with open(os.path.join(root, "packages.tsv"), "w") as f:
        f.write("# package\tversion\tsha256\npkg-a\t1.0-1\t" + "ab" * 32 + "\n")
    return root


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(the scratch folder, its catalogs); a small English corpus beside them
    (every 20th document is val) for the BPE and pre-training."""
    tmp = str(tmp_path_factory.mktemp("translation"))
    cats = make_catalogs(os.path.join(tmp, "cats"))
    corpus = os.path.join(tmp, "corpus")
    os.makedirs(corpus)
    for i in range(24):
        with open(os.path.join(corpus, f"doc{i:02d}.txt"), "w") as f:
            f.write(" ".join(f"The {a} and the {b} are here." for a, _ in WORDS for b, _ in WORDS[i % 12:i % 12 + 3]))
    return tmp, cats


@pytest.fixture(scope="module")
def prepared(setup):
    """(the en -> fr dataset's folder, prepare-translation's exit)."""
    tmp, cats = setup
    d = os.path.join(tmp, "en_fr")
    r = gpt2lab("prepare-translation", "--catalogs", cats, "--target", "fr", "--out", d, "--valid-pairs", "20",
                "--test-pairs", "30")
    return d, r


def test_prepare_translation_writes_a_dataset(prepared):
    r = prepared[1]
    assert r.returncode == 0 and "pairs: train" in r.stdout, f"prepare-translation: {r.stderr.strip()[-300:]}"


def test_dataset_holds_the_catalogs_pairs(prepared):
    d = prepared[0]
    meta = json.load(open(os.path.join(d, "meta.json")))
    assert meta["kind"] == "translation" and meta["format"] == "gpt2lab dataset", "meta.json: a translation dataset"
    c = meta["cleaning"]
    assert c["fuzzy"] == 1 and c["untranslated"] == 1 and c["identical"] == 1 and c["plural_pairs"] == 1, \
        f"every cleaning rule is counted: {c}"
    assert meta["packages"] == [{"package": "pkg-a", "version": "1.0-1", "sha256": "ab" * 32}], \
        "packages.tsv is recorded in meta.json"
    assert len(meta["catalogs"]) == 2 and all(len(x["sha256"]) == 64 for x in meta["catalogs"]), \
        "both fr catalogs are listed with their hashes"
    splits = {s: read_jsonl(os.path.join(d, s + ".jsonl")) for s in ("train", "valid", "test")}
    assert len(splits["valid"]) == 20 and len(splits["test"]) == 30, "valid and test hold the pairs asked for"
    sources = {s: {p["source"] for p in v} for s, v in splits.items()}
    assert (not (sources["train"] & sources["test"]) and not (sources["train"] & sources["valid"])
            and not (sources["valid"] & sources["test"])), \
        "no source string is in two splits"
    targets = {p["target"] for p in splits["train"]}
    assert ("%d fichiers" in targets
            and "Deux lignes" in targets | {p["target"] for p in splits["test"] + splits["valid"]}), \
        "plural forms and multiline strings become pairs"
    tokens = read_shard(os.path.join(d, "train.bin"))
    raw = open(os.path.join(d, "train.mask"), "rb").read()
    mask = list(raw[1024:])
    assert len(mask) == len(tokens), "one mask byte per token"
    eot = meta["tokenizer"]["eot_id"]
    # The mask is 1 exactly on each completion and its closing <|endoftext|>.
    closing = [i for i, t in enumerate(tokens) if t == eot and i > 0]
    assert all(mask[i] == 1 for i in closing) and mask[0] == 0, "each closing <|endoftext|> counts, the first does not"
    assert 0.2 < sum(mask) / len(mask) < 0.8, f"about half the tokens count ({sum(mask)} of {len(mask)})"


def test_existing_dataset_is_replaced_only_with_force(setup, prepared):
    cats, d = setup[1], prepared[0]
    r = gpt2lab("prepare-translation", "--catalogs", cats, "--target", "fr", "--out", d, "--valid-pairs", "20",
                "--test-pairs", "30")
    assert r.returncode == 1 and "--force" in r.stderr, "an existing dataset is replaced only with --force"


def test_reverse_translates_into_english(setup):
    tmp, cats = setup
    rev = os.path.join(tmp, "fr_en")
    gpt2lab("prepare-translation", "--catalogs", cats, "--reverse", "--out", rev, "--valid-pairs", "20",
            "--test-pairs", "30", check=True)
    t = json.load(open(os.path.join(rev, "meta.json")))["translation"]
    first = read_jsonl(os.path.join(rev, "test.jsonl"))[0]
    assert (t["source_language"] == "fr" and t["prompt"].startswith("<|endoftext|>French:")
            and any(w in first["target"].lower() for w, _ in WORDS)), \
        "--reverse translates into English"


def test_target_de_reads_the_german_catalogs(setup):
    tmp, cats = setup
    de = os.path.join(tmp, "en_de")
    gpt2lab("prepare-translation", "--catalogs", cats, "--target", "de", "--out", de, "--valid-pairs", "5",
            "--test-pairs", "5", check=True)
    assert json.load(open(os.path.join(de, "meta.json")))["translation"]["target_name"] == "German", \
        "--target de reads the German catalogs"


def test_bad_input_is_refused_with_nothing_written(setup, tmp):
    cats = setup[1]

    def refused(args, needle, what, out):
        r = gpt2lab("prepare-translation", *args, "--out", out)
        assert r.returncode == 1 and needle in r.stderr and not os.path.exists(out), \
            f"{what}: {r.stderr.strip()[-200:]}"

    out = os.path.join(tmp, "bad")
    refused(["--catalogs", os.path.join(tmp, "nowhere")], "does not exist", "a missing catalogs folder", out)
    fifo = os.path.join(tmp, "pipe.mo")
    os.mkfifo(fifo)
    refused(["--catalogs", fifo], "neither a folder nor a regular file", "a FIFO named as a catalog", out)
    refused(["--catalogs", cats, "--target", "es"], "languages found: de, fr", "a language with no catalogs", out)
    broken = os.path.join(tmp, "broken", "fr", "LC_MESSAGES")
    os.makedirs(broken)
    good = os.path.join(cats, "pkg-a", "usr", "share", "locale", "fr", "LC_MESSAGES", "alpha.mo")
    data = open(good, "rb").read()
    with open(os.path.join(broken, "cut.mo"), "wb") as f:
        f.write(data[: len(data) // 2])  # truncated: its string offsets point past the end
    refused(["--catalogs", os.path.join(tmp, "broken")], "cut.mo", "a damaged catalog is named", out)
    empty = os.path.join(tmp, "empty", "fr", "LC_MESSAGES")
    os.makedirs(empty)
    write_mo(os.path.join(empty, "none.mo"), [(b"", b"Content-Type: text/plain; charset=UTF-8\n"), (b"Hi", b"")])
    refused(["--catalogs", os.path.join(tmp, "empty")], "no usable pairs", "catalogs without translations", out)
    theirs = os.path.join(tmp, "theirs")
    os.makedirs(theirs)
    with open(os.path.join(theirs, "train.jsonl"), "w") as f:
        f.write('{"keep": "me"}\n')
    r = gpt2lab("prepare-translation", "--catalogs", cats, "--out", theirs, "--force", "--valid-pairs", "20",
                "--test-pairs", "30")
    assert r.returncode == 1 and open(os.path.join(theirs, "train.jsonl")).read() == '{"keep": "me"}\n', \
        f"a folder with someone else's train.jsonl is not replaced, even with --force: {r.stderr.strip()[-160:]}"


def test_train_and_eval_translation(setup, prepared, tmp):
    d = prepared[0]
    run = os.path.join(tmp, "run")
    r = gpt2lab("train", "--data", d, "--out", run, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "-B", "4",
                "-T", "32", "--steps", "20", "--eval-every", "10", "--eval-batches", "2", "--quiet", "--threads", "2")
    assert r.returncode == 0, f"train on the pairs: {r.stderr.strip()[-300:]}"
    hyp = os.path.join(tmp, "hyp.json")
    r = gpt2lab("eval-translation", "--model", run, "--data", d, "--out", hyp, "--threads", "2")
    assert r.returncode == 0 and "BLEU" in r.stdout and "chrF" in r.stdout and "reference" in r.stdout, \
        f"eval-translation prints scores and examples: {r.stdout[-300:]} {r.stderr[-300:]}"
    j = json.load(open(hyp))
    assert len(j["items"]) == 30 and 0 <= j["bleu"] <= 100 and 0 <= j["chrf"] <= 100, \
        "every test pair has a hypothesis; scores in [0, 100]"
    hyps, refs = os.path.join(tmp, "h.txt"), os.path.join(tmp, "r.txt")
    with open(hyps, "w") as f:
        f.write("".join(x["hypothesis"].replace("\n", " ") + "\n" for x in j["items"]))
    with open(refs, "w") as f:
        f.write("".join(x["reference"] + "\n" for x in j["items"]))
    r = gpt2lab("score", "--hyp", hyps, "--ref", refs, "--json")
    s = json.loads(r.stdout) if r.returncode == 0 else {}
    bleu = s.get("bleu", {}).get("score") if isinstance(s.get("bleu"), dict) else s.get("bleu")
    chrf = s.get("chrf", {}).get("score") if isinstance(s.get("chrf"), dict) else s.get("chrf")
    assert bleu is not None and abs(bleu - j["bleu"]) < 1e-9 and abs(chrf - j["chrf"]) < 1e-9, \
        (f"eval-translation's scores equal `gpt2lab score` on its hypotheses "
         f"({bleu}, {chrf} vs {j['bleu']}, {j['chrf']})")
    r = gpt2lab("eval-translation", "--model", run, "--data", d, "--out", hyp, "--limit", "5", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["pairs"] == 5, "--limit and --json; our own file is replaced"
    r = gpt2lab("eval-translation", "--model", run, "--data", d, "--out", hyp, "--limit", "5", "--json", "--beam", "3")
    b = json.loads(r.stdout) if r.returncode == 0 else {}
    assert b.get("beam") == 3 and b.get("pairs") == 5 and 0 <= b.get("bleu", -1) <= 100, \
        f"--beam 3 searches and says so: {r.stdout[-200:]} {r.stderr[-200:]}"
    r = gpt2lab("eval-translation", "--model", run, "--data", d, "--out", hyp, "--beam", "2", "--temperature", "1")
    assert r.returncode == 1 and "--beam" in r.stderr, "beam search with a temperature is refused"
    mine = os.path.join(tmp, "mine.json")
    with open(mine, "w") as f:
        f.write("{}\n")
    r = gpt2lab("eval-translation", "--model", run, "--data", d, "--out", mine)
    assert r.returncode == 1 and open(mine).read() == "{}\n", "a file eval-translation did not write is not replaced"
    # A model whose tokenizer is not the dataset's: refused, naming both.
    tok = os.path.join(tmp, "tok")
    gpt2lab("tokenizer", "train", "--input", os.path.join(setup[0], "corpus"), "--vocab-size", "300", "--out", tok,
            check=True)
    other = os.path.join(tmp, "other")
    gpt2lab("prepare-translation", "--catalogs", os.path.join(setup[0], "cats"), "--tokenizer", tok, "--out", other,
            "--valid-pairs", "20", "--test-pairs", "30", check=True)
    r = gpt2lab("eval-translation", "--model", run, "--data", other, "--out", os.path.join(tmp, "x.json"))
    assert r.returncode == 1 and "tokenizer" in r.stderr and not os.path.exists(os.path.join(tmp, "x.json")), \
        f"a model trained with another tokenizer is refused: {r.stderr.strip()[-200:]}"
    test_file = os.path.join(d, "test.jsonl")
    kept = open(test_file, "rb").read()
    with open(test_file, "ab") as f:
        f.write(b'{"source": "Extra", "target": "En plus"}\n')
    r = gpt2lab("eval-translation", "--model", run, "--data", d, "--out", os.path.join(tmp, "y.json"))
    assert r.returncode == 1 and "has changed since" in r.stderr, f"an edited test.jsonl is refused: {r.stderr[-200:]}"
    with open(test_file, "wb") as f:
        f.write(kept)
    r = gpt2lab("eval-translation", "--model", run, "--data", os.path.join(setup[0], "corpus"))
    assert r.returncode == 1 and "not a translation dataset" in r.stderr, "a folder that is not a translation dataset"


def test_study_translation_preset(setup):
    tmp = setup[0]
    out = os.path.join(tmp, "study")
    r = gpt2lab("study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
                "--catalogs", os.path.join(tmp, "cats"), "--out", out, "--no-report", "--quiet", "--threads", "2")
    assert r.returncode == 0, f"study --preset translation (tiny): {r.stderr.strip()[-400:]}"
    s = json.load(open(os.path.join(out, "study.json")))
    runs = [x for x in s["runs"] if x["preset"] == "translation"]
    arms = {}
    for x in runs:
        arms.setdefault(x["variables"]["arm"], []).append(x)
    assert (len(arms.get("pretrain", [])) == 4 and len(arms.get("finetune", [])) == 8
            and len(arms.get("scratch", [])) == 16), \
        f"2 seeds of every setting: { {k: len(v) for k, v in arms.items()} }"
    scored = [x for x in arms.get("finetune", []) + arms.get("scratch", []) if x["status"] == "completed"]
    assert scored and all("bleu" in x["translation"] and len(x["translation"]["examples"]) == 5 for x in scored), \
        "every completed run is scored with BLEU, chrF and examples"
    assert all(x["translation"].get("beam", {}).get("width") == 4 and "bleu" in x["translation"]["beam"]
               and "hypothesis_beam" in x["translation"]["examples"][0] for x in scored), \
        "beside greedy, every scored run has beam search's scores and examples"
    ft = arms.get("finetune", [{}])[0]
    assert ft.get("config", {}).get("init_from", "").endswith("mt-pretrain-pre-s1"), \
        "fine-tuning starts from pre-training"
    assert s.get("translation_data", {}).get("pairs", {}).get("test") == 6, "study.json records the translation data"
    td = s["translation_data"]
    assert (td.get("dir"), td.get("corpus_dir")) == ("translation-data/pairs", "translation-data/corpus"), \
        "study.json names the translation data inside the study folder, not by a path of this machine"
    assert tmp not in json.dumps({k: v for k, v in s.items() if k != "command"}), \
        "study.json names no path of this machine outside the command as it was typed"
    r = gpt2lab("study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
                "--catalogs", os.path.join(tmp, "cats"), "--out", out, "--no-report", "--quiet", "--threads", "2")
    assert r.returncode == 0 and "28 found done" in r.stderr and "edited?" not in r.stderr, \
        f"a rerun keeps every run, its outcome as recorded: {r.stderr.strip()[-200:]}"
    # Two runs at a time, 2 threads each as above: every fine-tuning waits for
    # its pre-training run (none is skipped), and every run is the same.
    j = os.path.join(tmp, "study-jobs")
    r = gpt2lab("study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
                "--catalogs", os.path.join(tmp, "cats"), "--out", j, "--no-report", "--quiet", "--threads", "4",
                "--jobs", "2")
    assert r.returncode == 0, f"study --preset translation --jobs 2: {r.stderr.strip()[-400:]}"
    sj = json.load(open(os.path.join(j, "study.json")))

    def untimed(d):
        return {k: untimed(v) if isinstance(v, dict) else v for k, v in d.items() if k != "seconds"}

    def result(x):
        return (x["name"], x["status"], x.get("outcome"), x.get("symmetry"), untimed(x.get("translation", {})))
    assert [result(x) for x in sj["runs"]] == [result(x) for x in s["runs"]], \
        "with --jobs 2 every run (fine-tunings after their pre-training) has the same outcome and BLEU"


def test_the_report_refuses_an_edited_bleu(setup):
    # study.json's BLEU was taken as it stood: an edited score moved the
    # translation verdicts. Each is checked against the run's own
    # translation-test.json, written with it.
    tmp = setup[0]
    out, edited = os.path.join(tmp, "study"), os.path.join(tmp, "study-bleu")
    r = gpt2lab("study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
                "--catalogs", os.path.join(tmp, "cats"), "--out", out, "--no-report", "--quiet", "--threads", "2")
    assert r.returncode == 0, r.stderr[-400:]
    report = [sys.executable, os.path.join(harness.SOURCE, "tools", "report")]
    r = harness.command(report + [out, "--no-figures"])
    assert r.returncode == 0, f"the study as it ran is drawn: {r.stderr[-400:]}"
    shutil.copytree(out, edited, ignore=shutil.ignore_patterns("checkpoint"))
    with open(os.path.join(edited, "study.json")) as f:
        s = json.load(f)
    scored = next(x for x in s["runs"] if x.get("translation"))
    scored["translation"]["bleu"] += 10
    with open(os.path.join(edited, "study.json"), "w") as f:
        json.dump(s, f)
    r = harness.command(report + [edited, "--no-figures"])
    assert r.returncode == 2 and f"({scored['name']}).translation.bleu' is" in r.stderr \
        and "translation-test.json records" in r.stderr, r.stderr[-400:]
    # The beam scores had no copy; they are in the run's measures.json now.
    with open(os.path.join(out, "study.json")) as f:
        s = json.load(f)
    scored = next(x for x in s["runs"] if x.get("translation", {}).get("beam"))
    scored["translation"]["beam"]["bleu"] += 10
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump(s, f)
    r = harness.command(report + [out, "--no-figures"])
    assert r.returncode == 2 and f"({scored['name']}).translation' differs from runs/" in r.stderr, r.stderr[-400:]
    # A rerun scores the run again (study.json and the copy disagreed).
    r = gpt2lab("study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
                "--catalogs", os.path.join(tmp, "cats"), "--out", out, "--no-report", "--quiet", "--threads", "2")
    assert r.returncode == 0 and "edited?: measured again" in r.stderr, r.stderr[-400:]
    r = harness.command(report + [out, "--no-figures"])
    assert r.returncode == 0, r.stderr[-400:]


def test_an_edited_translation_cache_is_refused_then_built_again(setup):
    # The translation data cache kept no record of its files: a token of the
    # corpus's val shard rewritten (or a test pair, with its digest in
    # meta.json) was taken by a rerun. Now each file's sha256 is kept.
    tmp = setup[0]
    out, edited = os.path.join(tmp, "study"), os.path.join(tmp, "study-cache")
    args = ["study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
            "--catalogs", os.path.join(tmp, "cats"), "--no-report", "--quiet", "--threads", "2"]
    r = gpt2lab(*args, "--out", out)
    assert r.returncode == 0, r.stderr[-400:]
    shutil.copytree(out, edited)
    data = os.path.join(edited, "translation-data")
    assert os.path.exists(os.path.join(data, "files.json")), "the cache keeps its files' digests"
    corpus = os.path.join(data, "corpus")
    shard = os.path.join(corpus, next(f for f in sorted(os.listdir(corpus)) if f.startswith("val")))
    with open(shard, "rb") as f:
        before = f.read()
    with open(shard, "r+b") as f:
        f.seek(len(before) - 2)
        f.write(b"\x02\x00" if before[-2:] == b"\x01\x00" else b"\x01\x00")
    r = gpt2lab(*args, "--out", edited)
    assert r.returncode == 1 and "is not a file the study built (edited?)" in r.stderr and \
        os.path.basename(shard) in r.stderr and "the study rebuilds it" in r.stderr, r.stderr[-400:]
    # Without the record (a cache from before it, or the record deleted
    # beside the edit): built again, deterministically, and no run redone.
    os.remove(os.path.join(data, "files.json"))
    r = gpt2lab(*args, "--out", edited)
    assert r.returncode == 0 and "28 found done" in r.stderr and "edited?" not in r.stderr, r.stderr[-400:]
    with open(shard, "rb") as f:
        assert f.read() == before, "the rebuilt shard is the one the study trained on"


def test_a_translation_study_stopped_before_its_first_save_is_rerun(setup):
    # A translation study stopped before study.json's first save (killed,
    # or an error such as GPT-2's tokenizer files not found) left
    # translation-data/ and judge.json, and its rerun was refused as "not a
    # study folder".
    tmp = setup[0]
    out = os.path.join(tmp, "study-first-save")
    args = ["study", "--preset", "translation", "--budget", "tiny", "--data", os.path.join(tmp, "corpus"),
            "--catalogs", os.path.join(tmp, "cats"), "--no-report", "--quiet", "--threads", "2", "--out", out]
    r = gpt2lab(*args)
    assert r.returncode == 0, r.stderr[-400:]
    os.remove(os.path.join(out, "study.json"))
    shutil.rmtree(os.path.join(out, "runs"))
    assert {"translation-data", "judge.json"} <= set(os.listdir(out))
    r = gpt2lab(*args)
    assert r.returncode == 0 and "28 runs done now" in r.stderr, r.stderr[-400:]
