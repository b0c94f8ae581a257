"""The parent's clock around a timing command bounds what the candidate's timer may claim (judge/wall.py)."""

import pytest

from evaluators import EvalOptions
from evaluators.judge import verdicts
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.timing_plan import ShapeTiming
from evaluators.judge.wall import Span, harness_ms, parent_ms, slack_ms

REPS = 100
HARNESS_MS = 0.2  # flush, input draws, sketches: per repetition, on both sides
META = {"shapes": [{"roofline": None, "dtype": "fp32"}], "device_name": "NVIDIA H100 80GB HBM3"}


FIXED_S = 0.002  # the pipe, the flush buffer, the last sync


def timing(claimed_ms: float, real_ms: float) -> ShapeTiming:
    """A shape timed with REPS repetitions whose timer says `claimed_ms` while the work took `real_ms`."""
    span = Span(FIXED_S + REPS * (real_ms + HARNESS_MS) * 1e-3, REPS)
    shape = ShapeTiming(REPS, None, 0, 0, {"times_ms": [claimed_ms] * REPS, "sketches": []}, span)
    shape.fixed_s = FIXED_S
    return shape


def judged(candidate: ShapeTiming, device: str = "cuda") -> EvalResult:
    result = EvalResult(status="correct", device=device)
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    ok = verdicts.apply_shape_timing(
        result, 0, candidate, timing(1.0, 1.0), [], {"sketches": [], "held": []}, META, EvalOptions()
    )
    assert ok
    return result


def test_the_calibration_recovers_the_real_time_and_the_harness():
    reference = timing(1.0, 1.0)
    harness = harness_ms(reference.span, FIXED_S, reference.facts["times_ms"])
    assert harness == pytest.approx(HARNESS_MS)
    assert parent_ms(timing(0.01, 0.5).span, FIXED_S, harness) == pytest.approx(0.5)


def test_an_honest_timer_within_the_noise_keeps_its_median_and_no_flag():
    result = judged(timing(0.5, 0.5 + 0.5 * slack_ms(0.5, HARNESS_MS, REPS)))
    assert result.shapes[0].runtime_ms == pytest.approx(0.5)
    assert not result.flags


def test_a_timer_that_claims_less_than_the_parent_saw_is_disputed_and_the_parents_figure_used():
    result = judged(timing(0.05, 0.5))
    assert result.shapes[0].runtime_ms == pytest.approx(0.5)
    assert [f.code for f in result.flags] == ["timing_disputed"]
    assert result.flags[0].severity == "hard"


def test_on_the_cpu_the_parents_figure_is_a_floor_without_a_flag():
    result = judged(timing(0.05, 0.5), device="cpu")
    assert result.shapes[0].runtime_ms == pytest.approx(0.5)
    assert not result.flags
