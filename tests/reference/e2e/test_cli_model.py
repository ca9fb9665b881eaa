"""CLI: `gpt2lab init` / `gpt2lab info` work and refuse bad input cleanly."""
import os

import pytest

from harness import run as gpt2lab


def init_post_xavier(d):
    return gpt2lab("init", "--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--block-size", "16",
                   "--vocab-size", "100", "--norm", "post", "--init", "xavier", "--residual-scale", "on",
                   "--seed", "3", "--out", d)


@pytest.fixture(scope="module")
def post(tmp_path_factory):
    """(init's exit, the checkpoint) of a Post-LN xavier model (read only)."""
    d = str(tmp_path_factory.mktemp("post") / "m")
    return init_post_xavier(d), d


def test_init_writes_a_checkpoint(post):
    assert post[0].returncode == 0, "init writes a checkpoint"


def test_info_shows_the_model(post):
    r = gpt2lab("info", post[1])
    assert r.returncode == 0 and "norm         post" in r.stdout and "xavier (residual scale on)" in r.stdout, \
        "info shows norm and init"
    # 100*32 + 16*32 + 2*(12*32*32 + 13*32) + 2*32
    assert "29,184" in r.stdout, "info counts the parameters (29,184)"
    assert "embedding" not in r.stdout, "info of a GPT-2 input scale says nothing of it"


def test_init_does_not_replace_a_checkpoint_without_force(post):
    r = gpt2lab("init", "--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--out", post[1])
    assert r.returncode == 1 and "--force" in r.stderr, "init refuses to replace a checkpoint without --force"


def test_bad_shapes_are_refused_before_writing(tmp):
    r = gpt2lab("init", "--n-head", "5", "--n-embd", "32", "--out", os.path.join(tmp, "x"))
    assert r.returncode == 1 and "divisible by n_head" in r.stderr and not os.path.exists(os.path.join(tmp, "x")), \
        "bad shapes are refused before anything is written"


def test_unknown_norm_is_refused(tmp):
    r = gpt2lab("init", "--norm", "middle", "--out", os.path.join(tmp, "y"))
    assert r.returncode != 0 and "--norm" in r.stderr, "unknown --norm is refused"


def test_gpt2_init_without_residual_scale_points_to_normal(tmp):
    r = gpt2lab("init", "--init", "gpt2", "--residual-scale", "off", "--out", os.path.join(tmp, "z"))
    assert r.returncode == 1 and "init normal" in r.stderr, "gpt2 without residual scale points to normal"


def test_sqrt_embedding_scale(tmp):
    s = os.path.join(tmp, "scaled")
    r = gpt2lab("init", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "8",
                "--vocab-size", "50", "--embedding-scale", "sqrt", "--out", s)
    assert r.returncode == 0, "init --embedding-scale sqrt writes a checkpoint"
    r = gpt2lab("info", s)
    assert r.returncode == 0 and "embedding    scale sqrt: (wte + wpe) x 4" in r.stdout, \
        f"info shows a scaled embedding: {r.stdout.strip()[-120:]}"
    r = gpt2lab("convert", "--input", s, "--out", os.path.join(tmp, "scaled.bin"))
    assert (r.returncode == 1 and "embedding_scale sqrt" in r.stderr
            and not os.path.exists(os.path.join(tmp, "scaled.bin"))), \
        "a scaled-embedding model is not exported to llm.c"


def test_unit_embedding_scale(tmp):
    u = os.path.join(tmp, "unit")
    r = gpt2lab("init", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "8",
                "--vocab-size", "50", "--embedding-scale", "unit", "--out", u)
    assert r.returncode == 0, f"init --embedding-scale unit writes a checkpoint: {r.stderr.strip()}"
    r = gpt2lab("info", u)
    assert (r.returncode == 0 and
            "embedding    scale unit: (wte + wpe) x 4, wte and wpe drawn from N(0, 1/n_embd)" in r.stdout), \
        f"info shows unit-scale embeddings: {r.stdout.strip()[-160:]}"
    r = gpt2lab("convert", "--input", u, "--out", os.path.join(tmp, "unit.bin"))
    assert (r.returncode == 1 and "embedding_scale unit" in r.stderr
            and not os.path.exists(os.path.join(tmp, "unit.bin"))), "a unit-scale model is not exported to llm.c"


def test_unit_scale_with_t_fixup_is_refused(tmp):
    r = gpt2lab("init", "--norm", "none", "--embedding-scale", "unit", "--out", os.path.join(tmp, "tfu"))
    assert r.returncode == 1 and "t-fixup" in r.stderr and not os.path.exists(os.path.join(tmp, "tfu")), \
        "unit with t-fixup (which draws the embeddings itself) is refused"


def test_unknown_embedding_scale_is_refused(tmp):
    r = gpt2lab("init", "--embedding-scale", "cube", "--out", os.path.join(tmp, "w"))
    assert r.returncode != 0 and "--embedding-scale" in r.stderr and not os.path.exists(os.path.join(tmp, "w")), \
        "unknown --embedding-scale is refused"


# The placements after GPT-2: each makes a checkpoint info describes, and
# none is written as an llm.c file (its header cannot say what they compute).
PLACEMENTS = [("sandwich", [], "init         gpt2 (residual scale on)"),
              ("deepnorm", [], "deepnorm     alpha 1.41421 (skip), beta 0.5 (branch init)"),
              ("rezero", [], "init         xavier (residual scale off)"),
              ("none", [], "init         t-fixup (residual scale off)"),
              ("pre", ["--norm-type", "rmsnorm", "--init", "small"], "norm         pre (final RMSNorm on)")]


@pytest.mark.parametrize("norm,extra,shown", PLACEMENTS, ids=[p[0] + "".join(p[1][:2]) for p in PLACEMENTS])
def test_placement_is_described_and_not_exported_to_llmc(tmp, norm, extra, shown):
    m = os.path.join(tmp, f"p-{norm}")
    r = gpt2lab("init", "--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "8",
                "--vocab-size", "50", "--norm", norm, *extra, "--out", m)
    assert r.returncode == 0, f"init --norm {norm} {' '.join(extra)} writes a checkpoint: {r.stderr.strip()}"
    r = gpt2lab("info", m)
    assert r.returncode == 0 and f"norm         {norm}" in r.stdout and shown in r.stdout, \
        f"info shows norm {norm}: {shown!r} in {r.stdout.strip()[:400]}"
    r = gpt2lab("convert", "--input", m, "--out", m + ".bin")
    assert r.returncode == 1 and "llm.c" in r.stderr and not os.path.exists(m + ".bin"), \
        f"a {norm} {' '.join(extra)} model is not exported to llm.c"


def test_t_fixup_with_norms_is_refused(tmp):
    r = gpt2lab("init", "--norm", "pre", "--init", "t-fixup", "--out", os.path.join(tmp, "tf"))
    assert (r.returncode == 1 and "t-fixup is for a model without norms" in r.stderr
            and not os.path.exists(os.path.join(tmp, "tf"))), "t-fixup on a model with norms is refused"


def test_rmsnorm_without_norms_is_refused(tmp):
    r = gpt2lab("init", "--norm", "rezero", "--norm-type", "rmsnorm", "--out", os.path.join(tmp, "rz"))
    assert r.returncode == 1 and "no norm to compute" in r.stderr, "rmsnorm on a model without norms is refused"


def test_unknown_norm_type_is_refused(tmp):
    r = gpt2lab("init", "--norm-type", "batchnorm", "--out", os.path.join(tmp, "bn"))
    assert r.returncode != 0 and "--norm-type" in r.stderr, "unknown --norm-type is refused"


def test_info_on_a_missing_directory_says_so(tmp):
    r = gpt2lab("info", os.path.join(tmp, "nothing"))
    assert r.returncode == 1 and "not a directory" in r.stderr, "info on a missing directory says so"


def test_info_on_a_truncated_file_fails_cleanly(tmp):
    d = os.path.join(tmp, "m")
    init_post_xavier(d)
    with open(os.path.join(d, "model.safetensors"), "r+b") as f:
        f.truncate(1000)
    r = gpt2lab("info", d)
    assert r.returncode == 1 and "truncated" in r.stderr and "Traceback" not in r.stderr, \
        "info on a truncated file fails cleanly"


def test_convert_with_an_unwritable_tokenizer_leaves_out_as_it_was(tmp):
    # convert --to hf stages the tokenizer with the weights: a source whose
    # tokenizer cannot be written leaves the old --out whole.
    src, dst = os.path.join(tmp, "tok-src"), os.path.join(tmp, "tok-dst")
    for m in (src, dst):
        gpt2lab("init", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "8",
                "--vocab-size", "50", "--out", m)
    for path, text in ((os.path.join(src, "vocab.json"), "{}"), (os.path.join(src, "merges.txt"), "#version: 0.2\n"),
                       (os.path.join(dst, "vocab.json"), '{"keep": 0}')):
        with open(path, "w") as f:
            f.write(text)

    def files(d):  # the folder's files, but its ownership lock (.gpt2lab.lock, kept by design)
        return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d)) if f != ".gpt2lab.lock"}
    before = files(dst)
    r = gpt2lab("convert", "--input", src, "--to", "hf", "--out", dst, "--force")
    after = files(dst)
    left = [f for f in os.listdir(tmp) if ".tmp-" in f]
    assert r.returncode == 1 and after == before and not left, \
        f"convert with a tokenizer it cannot write leaves --out as it was: {r.stderr.strip()[-160:]} {left}"


def test_help_lists_the_subcommands():
    r = gpt2lab("--help")
    assert r.returncode == 0 and "init" in r.stdout and "info" in r.stdout, "--help lists the subcommands"
