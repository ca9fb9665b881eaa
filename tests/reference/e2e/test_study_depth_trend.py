"""Rule scale-depth/2 (tools/report/verdicts.py): the residual scale's
benefit is judged by a trend over every depth, per seed, not by the
deepest against the shallowest depth alone."""
import math
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import harness  # noqa: E402

harness.report_package()
from report import verdicts as V  # noqa: E402

DEPTHS = (2, 6, 12, 24, 48)


def rows(delta, seeds=(0, 1, 2), norms=("pre", "post")):
    """delta(norm, depth, seed) -> Δ(off − on), as evidence.depth_deltas gives them."""
    return [{"norm": n, "depth": d, "deltas": [delta(n, d, s) for s in seeds], "seeds": list(seeds)}
            for n in norms for d in DEPTHS]


def trend(per_doubling, base=0.0, noise=(0.0, 0.004, -0.004)):
    return lambda n, d, s: base + per_doubling * math.log2(d) + noise[s] * (d % 5)


def test_depth_slope_is_per_doubling_of_depth():
    assert V.depth_slope([(2, 0.0), (4, 1.0), (8, 2.0)]) == pytest.approx(1.0, abs=1e-12)
    assert V.depth_slope([(2, 5.0), (8, 3.0)]) == pytest.approx(-1.0, abs=1e-12)
    assert V.depth_slope([(4, 1.0)]) is None


def test_growing_benefit_is_confirmed():
    v = V.scale_depth_trend_verdict(rows(trend(0.05)))
    assert v.verdict == V.CONFIRMED
    assert "pre-LN slope of Δ(off − on) per doubling of depth, 2–48 layers: +0.050" in v.numbers


def test_shrinking_benefit_is_contradicted():
    assert V.scale_depth_trend_verdict(rows(trend(-0.05, base=0.5))).verdict == V.CONTRADICTED


def test_flat_benefit_is_not_observed():
    assert V.scale_depth_trend_verdict(rows(trend(0.0, base=0.2))).verdict == V.NOT_OBSERVED


def test_growth_while_the_scale_still_hurts_is_not_observed():
    # Δ < 0 at every depth: the scale hurts less with depth, but never helps.
    assert V.scale_depth_trend_verdict(rows(trend(0.02, base=-0.5))).verdict == V.NOT_OBSERVED


def test_fewer_than_min_seeds_is_not_tested():
    v = V.scale_depth_trend_verdict(rows(trend(0.05), seeds=(0, 1)))
    assert v.verdict == V.NOT_TESTED


def test_a_seed_missing_at_one_depth_is_left_out():
    rs = rows(trend(0.05), seeds=(0, 1, 2))
    extra = [dict(r, deltas=r["deltas"] + [9.0], seeds=r["seeds"] + [3]) if r["depth"] != 12 else r for r in rs]
    v = V.scale_depth_trend_verdict(extra)
    assert v.verdict == V.CONFIRMED and "3 seeds" in v.numbers


def test_paired_seeds_resolve_a_trend_the_endpoints_do_not():
    # Each seed has its own offset (sd 0.1), shared by its depths; the
    # trend is 0.01 per doubling. Deep vs shallow alone (rule 1) cannot
    # tell it from noise; the per-seed slopes can.
    offsets = (-0.1, 0.0, 0.1)
    rs = rows(lambda n, d, s: offsets[s] + 0.01 * math.log2(d) + 0.001 * s * (d % 3))
    assert V.scale_depth_verdict(rs).verdict == V.NOT_OBSERVED
    assert V.scale_depth_trend_verdict(rs).verdict == V.CONFIRMED


def test_placements_combine_by_majority():
    rs = [r for r in rows(trend(0.05)) if r["norm"] == "pre"] + \
         [r for r in rows(trend(0.0, base=0.2)) if r["norm"] == "post"]
    v = V.scale_depth_trend_verdict(rs)
    assert v.verdict == V.NOT_OBSERVED and "[confirmed]" in v.numbers


def test_is_the_current_rule_of_the_claim():
    assert V.RULES["scale-depth"]["id"] == "scale-depth/2"
    assert "scale-depth/2" in V.RULE_FUNCTIONS


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
