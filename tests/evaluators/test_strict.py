"""The strict re-evaluation's rule, shared by the graph's quarantine and the evaluate-only batch."""

import pytest

from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from evaluators.judge.strict import STRICT_TRIALS, Standing, clears, recheck_due, standing, strict_options


def result(speedup: float | None, *codes: str, status: str = "correct", strict: bool = False, message: str = ""):
    flagged = EvalResult(status=status, speedup=speedup, strict=strict, message=message)
    for code in codes:
        flagged.flag(code, f"{code} happened")
    return flagged


def test_the_strict_run_keeps_the_first_runs_options_with_more_trials():
    first = EvalOptions(compile_baseline=True, max_speedup=20.0)
    options = strict_options(first)
    assert options.strict and options.trials == STRICT_TRIALS and options.compile_baseline and options.max_speedup == 20
    assert not first.strict  # the first's options are left as they were
    assert strict_options(EvalOptions(trials=8)).trials == 8
    assert strict_options().strict
    # The Ray executor sends a node only the options the caller set: strict and its trials must be among them.
    assert {"strict", "trials"} <= strict_options().model_fields_set


@pytest.mark.parametrize("codes", [("beyond_plausible",), ("timing_disputed",), ("side_stream", "monkey_patch")])
def test_a_correct_result_set_aside_by_clearable_flags_is_due_one_strict_run(codes):
    assert recheck_due(result(12.0, *codes))


@pytest.mark.parametrize(
    "first",
    [
        result(1.5),  # nothing set aside
        result(1.5, "monkey_patch"),  # soft flags set nothing aside
        result(12.0, "beyond_plausible", "no_custom_kernel"),
        result(12.0, "beyond_roofline"),
        result(12.0, "beyond_plausible", status="incorrect"),
    ],
)
def test_no_strict_run_is_due_for_the_rest(first):
    assert not recheck_due(first)


def test_a_strict_correct_result_not_set_aside_clears_and_its_measurement_counts():
    first, strict = result(12.0, "beyond_plausible"), result(11.0, "beyond_plausible", strict=True)
    assert clears(first, strict)
    assert standing(first, strict) == Standing(measured=strict, set_aside=None, cleared=True, rechecked=True)


def test_a_cleared_candidate_counts_the_lesser_of_its_two_speedups():
    # The first's figure is the parent's where its timer was disputed: clearing says the flag did not come back.
    first, strict = result(1.4, "timing_disputed"), result(3.0, strict=True)
    assert standing(first, strict) == Standing(measured=first, set_aside=None, cleared=True, rechecked=True)
    unmeasured = result(None, "timing_disputed")  # no figure to weigh: the strict one counts
    assert standing(unmeasured, strict).measured is strict


@pytest.mark.parametrize(
    ("strict", "says"),
    [
        (result(12.0), "the re-evaluation was not strict"),
        (result(12.0, "timing_disputed", strict=True), "the strict re-evaluation: still timing_disputed happened"),
        (result(0.0, status="incorrect", strict=True, message="timed repetition 3 differs"), "repetition 3 differs"),
    ],
)
def test_anything_else_leaves_it_set_aside_by_its_first_measurement_with_what_the_strict_run_found(strict, says):
    first = result(12.0, "beyond_plausible")
    held = standing(first, strict)
    assert not clears(first, strict) and not held.cleared and held.rechecked
    assert held.measured is first and held.set_aside.startswith("beyond_plausible happened; ")
    assert says in held.set_aside


def test_without_a_strict_run_the_first_stands():
    first = result(12.0, "beyond_plausible")
    assert standing(first) == Standing(first, "beyond_plausible happened", False, False)
    unclearable = standing(result(3.0, "no_custom_kernel"), result(3.0, strict=True))
    assert not unclearable.cleared and unclearable.set_aside.endswith("(no strict re-evaluation clears this)")
    assert standing(result(1.5)).set_aside is None
