"""Sketches of timed outputs: an honest output within tolerance always passes, a wrong one never does."""

import math

import pytest
import torch

from evaluators.worker import sketch
from evaluators.worker.sketch import (
    BLOCK,
    Sketcher,
    read_back,
    sketch_floor,
    sketch_mismatch,
    sketch_tolerance,
    sketch_values,
)


def check(found: torch.Tensor, expected: torch.Tensor, key: int, atol=1e-4, rtol=1e-4) -> str | None:
    sketcher = Sketcher(key)
    mine, theirs = sketch_values([sketcher.sketch([expected]), sketcher.sketch([found])])
    return sketch_mismatch(theirs, mine, read_back([sketch_tolerance([expected], sketcher, atol, rtol)])[0])


@pytest.mark.parametrize("key", range(20))
def test_an_output_within_tolerance_everywhere_passes_whatever_the_key(key):
    expected = torch.randn(64, 257)
    worst = 1e-4 + 1e-4 * expected.abs()
    assert check(expected + worst * (2 * torch.rand_like(expected) - 1), expected, key) is None
    assert check(expected + worst, expected, key) is None  # a bias of the full tolerance, all one way


@pytest.mark.parametrize("key", range(5))
def test_a_half_computed_or_stale_output_fails(key):
    expected = torch.randn(64, 257)
    half = expected.clone()
    half[32:] = 0
    assert "weighted sum" in check(half, expected, key)
    assert "weighted sum" in check(torch.randn(64, 257), expected, key)


def test_nan_where_the_reference_is_finite_and_a_wrong_shape_fail():
    expected = torch.randn(8, 8)
    spoiled = expected.clone()
    spoiled[3, 4] = float("nan")
    assert "NaN or Inf" in check(spoiled, expected, 1)
    assert "shape (64,) found" in check(expected.reshape(64), expected, 1)


def test_outputs_longer_than_one_block_reuse_the_weights_and_still_pass_honest_bias():
    expected = torch.randn(BLOCK + 1000)
    assert check(expected + (1e-4 + 1e-4 * expected.abs()), expected, 3) is None
    wrong = expected.clone()
    wrong[BLOCK:] += 10.0
    assert "weighted sum" in check(wrong, expected, 3)


def test_the_bound_adds_atol_once_for_every_block_that_shares_a_weight(monkeypatch):
    """Zeros of 2.5 blocks: the first half block's weights are shared by three elements, the rest by two."""
    monkeypatch.setattr(sketch, "BLOCK", 1000)
    atol = 0.5
    (bound,) = read_back([sketch_tolerance([torch.zeros(2500)], Sketcher(1), atol, 0.0)])[0]
    assert bound == pytest.approx(8.0 * math.sqrt(500 * (3 * atol) ** 2 + 500 * (2 * atol) ** 2))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn, torch.int32, torch.bool])
def test_every_output_dtype_gets_a_finite_bound_and_honest_values_pass(dtype):
    expected = (torch.randn(64, 65) * 4).to(dtype)
    assert check(expected.clone(), expected, 2) is None
    (bound,) = read_back([sketch_tolerance([expected], Sketcher(2), None, None)])[0]
    assert math.isfinite(bound)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.complex64, torch.int32])
@pytest.mark.parametrize("n", [1, 999, 1000, 2500])
def test_the_floor_is_never_above_the_bound_and_is_it_for_zeros_without_rtol(monkeypatch, dtype, n):
    monkeypatch.setattr(sketch, "BLOCK", 1000)
    expected = (torch.randn(n, dtype=torch.complex64 if dtype.is_complex else torch.float32) * 3).to(dtype)
    for atol, rtol in ((None, None), (0.5, 0.0), (1e-3, 1e-1)):
        (floor,) = sketch_floor([expected], atol, rtol)
        (bound,) = read_back([sketch_tolerance([expected], Sketcher(4), atol, rtol)])[0]
        assert 0 <= floor <= bound
    zeros = torch.zeros_like(expected)
    (floor,) = sketch_floor([zeros], 0.5, 0.0)
    assert floor == pytest.approx(read_back([sketch_tolerance([zeros], Sketcher(4), 0.5, 0.0)])[0][0], rel=1e-6)


@pytest.mark.parametrize("key", range(5))
def test_an_output_wrong_everywhere_but_in_its_folded_sum_fails(monkeypatch, key):
    """With one weight block read the same way along the tensor, the sketch saw only the sum of the tensor's blocks,
    which for a matrix product is a fraction of its work: a wrong output with the right folded sum passed."""
    monkeypatch.setattr(sketch, "BLOCK", 1000)
    expected, wrong = torch.randn(4000), 5.0 * torch.randn(1000)
    folded = expected.clone()
    folded[:1000] += wrong  # every element of the first block off by far more than the tolerance,
    folded[1000:2000] -= wrong  # and the second block's off the other way: the blocks' sum is the same
    assert (folded.reshape(4, 1000).sum(0) - expected.reshape(4, 1000).sum(0)).abs().max() < 1e-3
    assert "weighted sum" in check(folded, expected, key)


def test_each_block_reads_the_weights_from_an_offset_of_its_own_and_every_weight_once():
    sketcher = Sketcher(7)
    runs = [sketcher.segments(0, block, BLOCK) for block in range(4)]
    assert runs[0] == [(0, BLOCK, 0)]
    assert len({run[0][2] for run in runs}) == 4
    for run in runs:
        covered = sorted((at, at + end - start) for start, end, at in run)
        assert covered[0][0] == 0 and covered[-1][1] == BLOCK and sum(b - a for a, b in covered) == BLOCK
    assert sketcher.segments(2, 3, 10) == Sketcher(7).segments(2, 3, 10)  # both sides draw the same


@pytest.mark.parametrize("shape", [7, None, "64", [2.5], [-1], [True]])
def test_a_sketch_whose_shape_is_not_a_list_of_sizes_is_malformed(shape):
    expected = Sketcher(1).sketch([torch.randn(4)])
    (mine,) = sketch_values([expected])
    assert sketch_mismatch([[shape, 0.0]], mine, [1.0]) == "output 0: a malformed sketch"
