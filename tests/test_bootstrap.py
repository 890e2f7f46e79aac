"""Tests for hopgraph.eval.bootstrap.paired_bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.eval.bootstrap import paired_bootstrap

KEYS = {"delta", "ci_low", "ci_high", "p_value", "wins", "ties", "losses", "n"}


def test_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(123)
    a = rng.random(150)
    b = a + rng.normal(0.02, 0.2, size=150)
    first = paired_bootstrap(a, b, n_resamples=500, seed=5)
    second = paired_bootstrap(list(a), list(b), n_resamples=500, seed=5)
    assert first == second
    other = paired_bootstrap(a, b, n_resamples=500, seed=6)
    assert other["delta"] == first["delta"]  # the point estimate does not depend on the seed
    assert (other["ci_low"], other["ci_high"]) != (first["ci_low"], first["ci_high"])


def test_keys_and_types() -> None:
    out = paired_bootstrap([0.0, 1.0, 1.0], [1.0, 1.0, 0.0], n_resamples=50)
    assert KEYS <= set(out)
    for key in ("wins", "ties", "losses", "n"):
        assert type(out[key]) is int
    for key in ("delta", "ci_low", "ci_high", "p_value"):
        assert type(out[key]) is float


def test_clearly_shifted_case() -> None:
    rng = np.random.default_rng(0)
    n = 300
    a = rng.random(n)
    noise = rng.normal(0.0, 0.1, size=n)
    noise -= noise.mean()  # sample delta is exactly the true shift (up to rounding)
    b = a + 0.3 + noise
    out = paired_bootstrap(a, b, n_resamples=2000, seed=1)
    assert out["delta"] == pytest.approx(0.3)
    assert out["ci_low"] < 0.3 < out["ci_high"]
    assert out["ci_low"] > 0.25 and out["ci_high"] < 0.35
    assert out["p_value"] == 0.0  # no resample reaches 0
    assert out["wins"] == int(np.sum(b > a))
    # width agrees with the normal approximation 2 * 1.96 * sd / sqrt(n) within 15 %
    expected_width = 2 * 1.96 * np.std(b - a) / np.sqrt(n)
    assert out["ci_high"] - out["ci_low"] == pytest.approx(expected_width, rel=0.15)


def test_negative_shift_is_mirrored() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(100)
    b = a - 0.2 + rng.normal(0.0, 0.3, size=100)
    fwd = paired_bootstrap(a, b, seed=9)
    back = paired_bootstrap(b, a, seed=9)
    # same resampled indices, so every resampled delta flips sign
    assert back["delta"] == pytest.approx(-fwd["delta"])
    assert back["ci_low"] == pytest.approx(-fwd["ci_high"])
    assert back["ci_high"] == pytest.approx(-fwd["ci_low"])
    assert back["p_value"] == pytest.approx(fwd["p_value"])
    assert (back["wins"], back["losses"]) == (fwd["losses"], fwd["wins"])
    assert fwd["delta"] < 0 and fwd["ci_high"] < 0


def test_identical_inputs() -> None:
    values = [0.0, 0.5, 1.0, 1.0, 0.25, 0.0]
    out = paired_bootstrap(values, list(values), n_resamples=300, seed=4)
    assert out["delta"] == 0.0
    assert out["ci_low"] == 0.0 == out["ci_high"]
    assert out["p_value"] == 1.0
    assert (out["wins"], out["ties"], out["losses"], out["n"]) == (0, 6, 0, 6)


def test_no_real_difference_is_not_significant() -> None:
    rng = np.random.default_rng(11)
    base = rng.random(200)
    a = base + rng.normal(0, 0.1, 200)
    b = base + rng.normal(0, 0.1, 200)
    out = paired_bootstrap(a, b, seed=0)
    assert out["ci_low"] < 0 < out["ci_high"]
    assert out["p_value"] > 0.05
    # CI is roughly symmetric about the point estimate
    left = out["delta"] - out["ci_low"]
    right = out["ci_high"] - out["delta"]
    assert left == pytest.approx(right, rel=0.3)


def test_wins_ties_losses_and_delta() -> None:
    a = [0.0, 1.0, 0.5, 1.0, 0.0]
    b = [1.0, 1.0, 0.0, 1.0, 0.5]
    # b > a at indices 0, 4 -> 2 wins; equal at 1, 3 -> 2 ties; b < a at 2 -> 1 loss
    # delta = mean(b) - mean(a) = 3.5/5 - 2.5/5 = 0.2
    out = paired_bootstrap(a, b, n_resamples=200)
    assert (out["wins"], out["ties"], out["losses"], out["n"]) == (2, 2, 1, 5)
    assert out["delta"] == pytest.approx(0.2)
    assert out["ci_low"] <= 0.2 <= out["ci_high"]
    # resampled means of diffs in {1, 0, -0.5, 0, 0.5} lie in [-0.5, 1]
    assert -0.5 <= out["ci_low"] and out["ci_high"] <= 1.0


def test_single_question() -> None:
    # every resample is the one question: all resampled deltas are 1
    out = paired_bootstrap([0.0], [1.0], n_resamples=100)
    assert (out["delta"], out["ci_low"], out["ci_high"], out["p_value"]) == (1.0, 1.0, 1.0, 0.0)


def test_p_value_definition() -> None:
    # diffs b - a = [+1, -1, +1]: delta = 1/3 > 0, so p = 2 * fraction of resampled means <= 0.
    # Checked against a replica of the documented rule and against the exact probability.
    a = [0.0, 1.0, 0.0]
    b = [1.0, 0.0, 1.0]
    out = paired_bootstrap(a, b, n_resamples=4000, seed=2)
    diff = np.array(b) - np.array(a)
    rng = np.random.default_rng(2)
    boot = diff[rng.integers(0, 3, size=(4000, 3))].mean(axis=1)
    assert out["p_value"] == pytest.approx(min(1.0, 2 * np.mean(boot <= 0)))
    # exact: P(mean <= 0) = P(at most one of three draws is a +1 question)
    #        = (1/3)^3 + 3 * (2/3) * (1/3)^2 = 1/27 + 6/27 = 7/27 -> p ~ 14/27 = 0.5185
    assert out["p_value"] == pytest.approx(14 / 27, abs=0.04)


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([1.0, 2.0], [1.0], {}, "same questions"),
        ([], [], {}, "at least one"),
        ([1.0, float("nan")], [1.0, 2.0], {}, "NaN"),
        ([1.0], [1.0], {"n_resamples": 0}, "n_resamples"),
        ([1.0], [1.0], {"ci": 1.0}, "ci"),
        ([1.0], [1.0], {"ci": 0.0}, "ci"),
    ],
)
def test_validation(a, b, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        paired_bootstrap(a, b, **kwargs)
