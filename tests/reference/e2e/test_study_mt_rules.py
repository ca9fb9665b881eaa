"""Rules mt-*/2 (tools/report/verdicts.py): the translation claims are
decided by the target side's validation loss, with BLEU and chrF shown
beside it, so settings whose translations all sit near BLEU 0 are still
told apart."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import harness  # noqa: E402

harness.report_package()
from report import verdicts as V  # noqa: E402


def cell(arm, norm, wf, loss, bleu, init="gpt2"):
    seeds = [0, 1, 2]
    jitter = [-0.01, 0.0, 0.01]
    return {"arm": arm, "init": init if arm == "scratch" else "pretrained", "norm": norm, "warmup_fraction": wf,
            "seeds": seeds, "bleu": [bleu + j for j in jitter], "chrf": [bleu * 2 + j for j in jitter],
            "neg_val_loss": [-(loss + j) for j in jitter]}


def floor_cells(post_w0_loss):
    """BLEU at its floor everywhere (0.5 ± noise); only the loss differs."""
    return [cell("scratch", "pre", 0.0, 3.0, 0.5), cell("scratch", "post", 0.0, post_w0_loss, 0.5),
            cell("scratch", "pre", 0.25, 3.0, 0.5), cell("scratch", "post", 0.25, 3.0, 0.5)]


def test_loss_decides_where_bleu_is_at_its_floor():
    cells = floor_cells(post_w0_loss=3.5)
    assert V.mt_no_warmup_verdict(cells).verdict == V.NOT_OBSERVED
    v = V.mt_no_warmup_verdict_v2(cells)
    assert v.verdict == V.CONFIRMED
    assert v.numbers.startswith("from scratch, no warmup: −val loss Pre-LN higher in 1, lower in 0 of 1 inits")
    assert "beside it, not deciding: not observed at this scale by" in v.numbers


def test_warmup_pattern_by_loss():
    v = V.mt_warmup_verdict_v2(floor_cells(post_w0_loss=3.5))
    assert v.verdict == V.CONFIRMED


def test_loss_the_other_way_contradicts():
    v = V.mt_no_warmup_verdict_v2(floor_cells(post_w0_loss=2.5))
    assert v.verdict == V.CONTRADICTED


def test_no_runs_is_not_tested_once():
    v = V.mt_pretrain_gap_verdict_v2([], "translation not run")
    assert v.verdict == V.NOT_TESTED and v.numbers == "translation not run"


@pytest.mark.parametrize("claim", ["mt-no-warmup", "mt-warmup", "mt-pretrain-gap"])
def test_version_2_is_current(claim):
    assert V.RULES[claim]["id"] == f"{claim}/2"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
