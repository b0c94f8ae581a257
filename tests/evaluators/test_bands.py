"""The speedup's noise band (judge/bands.py): honest width from the blocks, and "no significant change" inside it."""

import random

import pytest

from evaluators.judge import bands


def _blocks(rng, centre: float, noise: float, blocks: int, reps: int) -> list[list[float]]:
    return [[centre * (1 + rng.gauss(0, noise)) for _ in range(reps)] for _ in range(blocks)]


@pytest.mark.parametrize("blocks, reps", [(16, 10), (2, 10), (3, 1)])
def test_the_same_code_on_both_sides_is_no_significant_change_in_most_timings(blocks, reps):
    rng = random.Random(1)
    calls = []
    for _ in range(60):
        reference, candidate = _blocks(rng, 1.0, 0.03, blocks, reps), _blocks(rng, 1.0, 0.03, blocks, reps)
        speedup = 1.0
        (low, high), _ = bands.shape_band(reference, candidate, speedup)
        calls.append(bands.significant(low, high))
    assert sum(calls) <= 8  # a 95 % band: about 3 of 60 by chance; far fewer than half


@pytest.mark.parametrize("blocks, reps", [(16, 10), (2, 10), (3, 1)])
def test_a_real_gain_well_beyond_the_noise_is_significant(blocks, reps):
    rng = random.Random(2)
    reference, candidate = _blocks(rng, 1.5, 0.01, blocks, reps), _blocks(rng, 1.0, 0.01, blocks, reps)
    (low, high), _ = bands.shape_band(reference, candidate, 1.5)
    assert bands.significant(low, high) and low > 1.3 and low <= 1.5 <= high


def test_the_band_is_scaled_to_the_reported_figure_and_noisier_timings_get_wider_bands():
    rng = random.Random(3)
    quiet = bands.shape_band(_blocks(rng, 1.0, 0.005, 16, 10), _blocks(rng, 1.0, 0.005, 16, 10), 2.0)[0]
    noisy = bands.shape_band(_blocks(rng, 1.0, 0.05, 16, 10), _blocks(rng, 1.0, 0.05, 16, 10), 2.0)[0]
    assert quiet[0] <= 2.0 <= quiet[1] or abs(quiet[0] - 2.0) < 0.05
    assert noisy[1] - noisy[0] > 3 * (quiet[1] - quiet[0])


def test_one_block_draws_no_band():
    assert bands.shape_band([[1.0, 1.1]], [[1.0, 0.9]], 1.0) == (None, [])


def test_the_geometric_mean_band_is_drawn_jointly_and_narrows_over_shapes():
    rng = random.Random(4)
    shapes = [bands.shape_band(_blocks(rng, 1.0, 0.03, 16, 10), _blocks(rng, 1.0, 0.03, 16, 10), 1.0) for _ in range(4)]
    low, high = bands.geomean_band([draws for _, draws in shapes])
    widths = [b[1] - b[0] for b, _ in shapes]
    assert low <= 1.0 <= high and high - low < max(widths)


def test_a_host_bound_call_timed_in_a_slower_process_is_widened_to_cover_the_speeds_evened_out():
    # The reference as its own candidate, host-bound: the candidate's process runs the harness's own host work 1.18x
    # slower, and its calls read 1/1.18 of the reference's. Inside its own blocks that looks significant.
    rng = random.Random(5)
    (low, high), draws = bands.shape_band(_blocks(rng, 1.0, 0.01, 2, 10), _blocks(rng, 1.18, 0.01, 2, 10), 1 / 1.18)
    assert bands.significant(low, high)
    (low, high), _ = bands.across_processes(draws, 1.18)
    assert low <= 1 / 1.18 and high >= 1.0 and not bands.significant(low, high)
    # The other way round (the candidate's process the faster), the band widens downwards only.
    (faster_low, faster_high), _ = bands.across_processes(draws, 1 / 1.18)
    assert faster_low < 1 / 1.18 * 0.9 and faster_high < 1.0


def test_a_band_is_never_narrower_than_what_two_processes_differ_by():
    # 16 quiet blocks a side: the bootstrap alone is a few hundredths of a percent wide, and 0.995 would read as a
    # significant slowdown of the reference against itself.
    rng = random.Random(6)
    (low, high), draws = bands.shape_band(_blocks(rng, 1.0, 0.001, 16, 10), _blocks(rng, 1.005, 0.001, 16, 10), 0.995)
    assert bands.significant(low, high)
    floor = bands.process_floor(issue_ms=0.01, call_ms=1.0)
    assert floor == pytest.approx(bands.PROCESS_BASE + 0.0005)
    (low, high), floored = bands.with_process_floor(draws, 0.995, floor)
    assert not bands.significant(low, high) and low <= 0.995 / (1 + floor) and high >= 0.995 * (1 + floor)
    # A call of many launches gets the launches' part: 2 us to issue a 25 us call; no more than its cap from 5 us on.
    assert bands.process_floor(issue_ms=0.002, call_ms=0.025) == pytest.approx(bands.PROCESS_BASE + 0.004)
    assert bands.process_floor(issue_ms=0.02, call_ms=0.025) == pytest.approx(bands.PROCESS_BASE + bands.LAUNCH_CAP)
    assert bands.process_floor(issue_ms=0.005, call_ms=0.025) == pytest.approx(bands.PROCESS_BASE + bands.LAUNCH_CAP)
    # Every shape's draws move together (the same two processes), so the geometric mean keeps the floor whole.
    (_, second) = bands.with_process_floor(draws, 0.995, floor)[1], bands.with_process_floor(draws, 0.995, floor)[1]
    low, high = bands.geomean_band([floored, second])
    assert not bands.significant(low, high)


def test_a_sides_reach_is_the_wider_side_of_its_own_bootstrap():
    steady = [[1.0] * 5 for _ in range(4)]
    slow_first = [[1.5] * 5] + [[1.0] * 5 for _ in range(3)]
    assert bands.reach(steady) == pytest.approx(0.0)
    assert bands.reach(slow_first) > 0.1  # one slow block of four reaches far
    assert bands.reach(slow_first + [[1.0] * 5 for _ in range(4)]) < 0.007  # one of eight is set aside
    assert bands.reach(steady[:1]) is None
    assert bands.reach([[0.0] * 5, [1e-310] * 5, [0.0] * 5]) == pytest.approx(0.0)  # taken as the resolution at least
