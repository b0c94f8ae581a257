"""The strict re-evaluation's rule, shared by the graph's quarantine and the evaluate-only batch."""

import pytest

from evaluators.judge import static
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.strict import (
    PROCESS_REACH,
    STRICT_TRIALS,
    Standing,
    clears,
    control_due,
    process_spread,
    recheck_due,
    reference_drift,
    standing,
    strict_options,
)


def result(speedup: float | None, *codes: str, status: str = "correct", strict: bool = False, message: str = "",
           band: tuple[float, float] | None = None):  # fmt: skip
    flagged = EvalResult(status=status, speedup=speedup, strict=strict, message=message)
    if band is not None:
        flagged.speedup_band, flagged.significant = tuple(band), not band[0] <= 1.0 <= band[1]
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


@pytest.mark.parametrize("codes", [("beyond_plausible",), ("unwatched",), ("side_stream", "monkey_patch")])
def test_a_correct_result_set_aside_by_clearable_flags_is_due_one_strict_run(codes):
    assert recheck_due(result(12.0, *codes))


@pytest.mark.parametrize(
    "first",
    [
        result(1.5),  # nothing set aside
        result(1.5, "monkey_patch"),  # soft flags set nothing aside
        result(1.5, "timing_disputed"),  # its figure is the parent's clock's already
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
    # The first's figure counts its work on other streams: clearing says the flag did not come back.
    first, strict = result(1.4, "side_stream"), result(3.0, strict=True)
    assert standing(first, strict) == Standing(measured=first, set_aside=None, cleared=True, rechecked=True)
    unmeasured = result(None, "side_stream")  # no figure to weigh: the strict one counts
    assert standing(unmeasured, strict).measured == strict


@pytest.mark.parametrize(
    ("strict", "says"),
    [
        (result(12.0), "the re-evaluation was not strict"),
        (result(12.0, "side_stream", strict=True), "the strict re-evaluation: still side_stream happened"),
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


@pytest.mark.parametrize(
    ("first", "graph", "suite"),
    [
        (result(1.3, band=(1.25, 1.35)), True, True),  # a gain: confirmed before it counts
        (result(1.02, band=(0.97, 1.07)), False, False),  # within noise: nothing to confirm
        (result(0.9, band=(0.85, 0.95)), False, True),  # a slowdown: no gain for the graph, a change for a suite
        (result(1.04, "no_custom_kernel", band=(1.01, 1.07)), False, True),  # set aside for good: a suite's identity
        (result(1.2, "rewrote_problem", band=(1.1, 1.3)), False, False),  # a cheat gets no second run
        (result(1.2, "beyond_roofline", band=(1.1, 1.3)), False, False),  # nor a timing physics rules out
        (result(1.3), False, False),  # no band, no gain
        (result(7.0, band=(6.5, 7.5)), True, True),  # a gain is weighed against bars anywhere (a best at 6x)
        (result(0.02, band=(0.01, 0.03)), False, False),  # an interpreter's slowdown on the CPU: no process makes it
    ],
)
def test_a_significant_change_is_due_a_confirming_run(first, graph, suite):
    assert recheck_due(first) is graph
    assert recheck_due(first, every_change=True) is suite


def test_a_gain_the_confirming_run_does_not_repeat_is_no_gain():
    held = standing(result(1.3, band=(1.25, 1.35)), result(1.02, strict=True, band=(0.99, 1.05)))
    assert held.set_aside is None and not held.cleared and held.rechecked
    assert held.measured.speedup == 1.02 and held.measured.speedup_band == (0.99, 1.35)
    assert held.measured.significant is False


def test_a_gain_both_runs_show_counts_at_the_lesser_figure_within_both_bands():
    held = standing(result(1.3, band=(1.25, 1.35)), result(1.28, strict=True, band=(1.24, 1.32)))
    assert held.measured.speedup == 1.28 and held.measured.speedup_band == (1.24, 1.35) and held.measured.significant


def test_runs_that_disagree_on_the_direction_show_no_change():
    held = standing(
        result(1.05, band=(1.02, 1.08)),
        result(0.97, strict=True, band=(0.94, 0.99)),
    )
    assert held.measured.speedup == 0.97 and held.measured.speedup_band == (0.94, 1.08)
    assert held.measured.significant is False


@pytest.mark.parametrize(
    ("strict", "says"),
    [
        (result(0.0, status="incorrect", strict=True, message="trial 4 differs"), "trial 4 differs"),
        (result(1.3, "side_stream", strict=True, band=(1.2, 1.4)), "side_stream happened"),
        (result(1.3, band=(1.25, 1.35)), "was not strict"),
    ],
)
def test_a_confirming_run_that_does_not_hold_sets_the_gain_aside(strict, says):
    first = result(1.3, band=(1.25, 1.35))
    held = standing(first, strict)
    assert held.set_aside.startswith("its confirming") and says in held.set_aside and held.measured == first


def test_a_suites_row_set_aside_for_good_still_gets_its_change_confirmed():
    first = result(1.03, "no_custom_kernel", band=(1.01, 1.05))
    held = standing(first, result(1.0, "no_custom_kernel", strict=True, band=(0.99, 1.01)))
    assert held.set_aside.endswith("(no strict re-evaluation clears this)")
    assert held.measured.speedup == 1.0 and held.measured.significant is False


def test_what_a_confirming_run_of_a_row_set_aside_for_good_found_beyond_it_is_said():
    """level1/87 on two H200s: set aside by no_custom_kernel, its confirming strict run hard-flagged (a dispute, hard
    then); the row carried the strict run's figures and said nothing of the flag."""
    first = result(1.01, "no_custom_kernel", band=(1.0, 1.03))
    held = standing(first, result(0.87, "no_custom_kernel", "side_stream", strict=True, band=(0.84, 0.9)))
    assert held.set_aside == ("no_custom_kernel happened (no strict re-evaluation clears this); the strict "
                              "re-evaluation: side_stream happened")  # fmt: skip


def test_a_flag_in_the_first_run_buys_no_narrower_band_than_a_clean_one():
    # Cleared or confirmed, the same two runs add up to the same: the flag is no way to keep the first run's band alone.
    runs = (1.15, (1.1, 1.2)), (1.3, (0.95, 1.5))
    flagged = standing(
        result(runs[0][0], "side_stream", band=runs[0][1]), result(runs[1][0], strict=True, band=runs[1][1])
    )
    clean = standing(result(runs[0][0], band=runs[0][1]), result(runs[1][0], strict=True, band=runs[1][1]))
    assert flagged.cleared and not clean.cleared
    assert flagged.measured.speedup_band == clean.measured.speedup_band == (0.95, 1.5)
    assert flagged.measured.significant is clean.measured.significant is False


def test_runs_either_side_of_no_change_count_at_the_slower():
    held = standing(result(1.3, band=(1.2, 1.4)), result(0.7, strict=True, band=(0.65, 0.75)))
    assert held.measured.speedup == 0.7 and held.measured.speedup_band == (0.65, 1.4) and not held.measured.significant


def test_each_shapes_band_spans_both_runs():
    first, again = result(1.3, band=(1.25, 1.35)), result(1.2, strict=True, band=(0.95, 1.6))
    first.shapes = [ShapeResult(name="s", kind="benchmark", status="correct", speedup=1.15, speedup_band=(1.1, 1.2))]
    again.shapes = [ShapeResult(name="s", kind="benchmark", status="correct", speedup=1.0, speedup_band=(0.9, 1.1))]
    (shape,) = standing(first, again).measured.shapes
    assert shape.speedup == 1.0 and shape.speedup_band == (0.9, 1.2)


@pytest.mark.parametrize("bad", [(float("nan"), 1.3), (1.3, float("inf")), (1.4, 1.2)])
def test_a_malformed_band_in_either_run_leaves_the_pair_without_one(bad):
    good = (1.25, 1.35)
    for first_band, strict_band in ((good, bad), (bad, good)):
        first, again = result(1.3, band=good), result(1.2, strict=True, band=good)
        first.speedup_band, again.speedup_band = first_band, strict_band
        measured = standing(first, again).measured
        assert measured.speedup_band is None and measured.significant is None


@pytest.mark.parametrize("figure", [0.0, -1.0, float("nan"), float("inf"), None])
def test_a_run_without_a_finite_positive_figure_leaves_the_others(figure):
    first, again = result(1.3, band=(1.25, 1.35)), result(figure, strict=True)
    assert standing(first, again).measured.speedup == 1.3


# The control: the reference judged as its own candidate, for a change two runs confirmed within reach of two processes.


@pytest.mark.parametrize(
    ("first", "strict", "graph", "suite"),
    [
        # A gain both runs show within reach: its processes could have made it.
        (result(1.3, band=(1.25, 1.35)), result(1.28, strict=True, band=(1.24, 1.32)), True, True),
        # A reference judged as itself, set aside for good (no kernel of its own): a suite still weighs it.
        (
            result(1.29, "no_custom_kernel", band=(1.27, 1.31)),
            result(1.28, "no_custom_kernel", strict=True, band=(1.26, 1.30)),
            False,
            True,
        ),
        (result(0.8, band=(0.78, 0.82)), result(0.79, strict=True, band=(0.77, 0.81)), False, True),  # a slowdown
        # Beyond reach of 1.0 too: a 1.38x offset lifts a 1.55x kernel past fast_2's bar, or past a best at 2x.
        (result(2.1, band=(2.03, 2.24)), result(2.12, strict=True, band=(2.05, 2.2)), True, True),
        (result(1.3, band=(1.25, 1.35)), result(1.02, strict=True, band=(0.99, 1.05)), False, False),  # not repeated
        (result(1.3, band=(1.25, 1.35)), result(1.3, strict=False, band=(1.25, 1.35)), False, False),  # not strict
        (result(1.3, band=(1.25, 1.35)), result(1.3, "side_stream", strict=True, band=(1.2, 1.4)), False, False),
        (result(1.3, band=(1.25, 1.35)), None, False, False),  # no strict run yet
        # Cleared by its strict run, a flagged gain within reach is weighed as a clean one is.
        (result(1.3, "side_stream", band=(1.25, 1.35)), result(1.28, strict=True, band=(1.24, 1.32)), True, True),
    ],
)
def test_every_change_two_runs_confirm_is_due_a_control(first, strict, graph, suite):
    assert control_due(first, strict) is graph
    assert control_due(first, strict, every_change=True) is suite


@pytest.mark.parametrize(
    ("control", "spread"),
    [
        (result(1.29, strict=True, band=(1.27, 1.31)), 1.31),
        (result(0.9, strict=True, band=(0.8, 1.01)), 1.25),
        (result(1.0, strict=True, band=(0.995, 1.004)), 1 / 0.995),
        (result(None, status="runtime_error", strict=True), None),  # not judged: it vouches for nothing
        (result(1.0, strict=True), None),  # no band
        (result(1.0, strict=True, band=(0.0, 1.1)), None),  # a malformed one
        (result(1.0, strict=True, band=(1.3, 1.2)), None),  # ends out of order
        (None, None),
    ],
)
def test_the_process_spread_is_the_far_end_of_the_controls_band_from_no_change(control, spread):
    assert process_spread(control) == (spread if spread is None else pytest.approx(spread))


def test_a_change_the_control_shows_too_is_no_change():
    # level2/77 on an H200: the reference judged as itself read 1.289x, and again in other processes.
    first = result(1.289, "no_custom_kernel", band=(1.27, 1.31))
    again = result(1.285, "no_custom_kernel", strict=True, band=(1.26, 1.30))
    first.shapes = [ShapeResult(name="s", kind="benchmark", speedup=1.289, speedup_band=(1.27, 1.31))]
    again.shapes = [ShapeResult(name="s", kind="benchmark", speedup=1.285, speedup_band=(1.26, 1.30))]
    control = result(1.29, "no_custom_kernel", strict=True, band=(1.27, 1.31))
    assert standing(first, again).measured.significant  # the two runs alone agree on a change
    held = standing(first, again, control)
    assert held.spread == 1.31 and held.measured.speedup == 1.285 and held.measured.significant is False
    assert held.measured.speedup_band == pytest.approx((1.26 / 1.31, 1.31 * 1.31))
    (shape,) = held.measured.shapes
    assert shape.speedup_band == pytest.approx((1.26 / 1.31, 1.31 * 1.31))
    assert held.set_aside.startswith("no_custom_kernel")  # its flags still decide whether it is trusted


def test_a_gain_beyond_the_controls_spread_stays_a_gain():
    first, again = result(1.3, band=(1.25, 1.35)), result(1.28, strict=True, band=(1.24, 1.32))
    held = standing(first, again, result(1.0, "no_custom_kernel", strict=True, band=(0.99, 1.01)))
    assert held.set_aside is None and held.measured.significant and held.spread == pytest.approx(1 / 0.99, abs=1e-4)
    assert held.measured.speedup_band == pytest.approx((1.24 * 0.99, 1.35 / 0.99), rel=1e-3)


@pytest.mark.parametrize(
    ("runs", "spread"),
    [
        (((1.3, (1.25, 1.35)), (1.28, (1.24, 1.32))), PROCESS_REACH),  # at least the most two processes were seen apart
        (((3.0, (2.9, 3.1)), (2.95, (2.85, 3.05))), 2.85),  # and as far as no change, however large the gain
        (((0.75, (0.74, 0.76)), (0.75, (0.73, 0.77))), PROCESS_REACH),  # a slowdown, rechecked in suites only
    ],
)
def test_a_control_that_could_not_be_judged_vouches_for_no_change(runs, spread):
    (first_speedup, first_band), (strict_speedup, strict_band) = runs
    first, again = result(first_speedup, band=first_band), result(strict_speedup, strict=True, band=strict_band)
    for failed in (result(None, status="runtime_error", strict=True), result(1.0, strict=True)):
        held = standing(first, again, failed)
        assert held.spread == pytest.approx(spread, abs=1e-4) and held.measured.significant is False


def test_a_control_where_none_was_due_changes_nothing():
    first, again = result(1.3, band=(1.25, 1.35)), result(1.02, strict=True, band=(0.99, 1.05))
    control = result(1.3, strict=True, band=(1.2, 1.4))
    assert standing(first, again, control) == standing(first, again)
    assert standing(first, again).spread is None


def _timed(run: EvalResult, gpu: str, reference_ms: float, candidate_ms: float) -> EvalResult:
    """`run` with one timed shape: the reference's median and the candidate's, on `gpu`."""
    run.gpu = gpu
    shape = {"name": "s", "kind": "benchmark", "status": "correct", "speedup": run.speedup}
    times = {"speedup_band": run.speedup_band, "baseline_ms": reference_ms, "runtime_ms": candidate_ms}
    run.shapes = [ShapeResult(**shape, **times)]
    return run


def test_a_reference_the_candidates_runs_found_slow_is_weighed_by_how_slow():
    """level2/77 on two H200s at 4189e8d: both runs' reference processes ran 6.43-6.45 ms, the control's 4.92-4.93."""
    first = _timed(result(1.299, "no_custom_kernel", band=(1.28, 1.317)), "NVIDIA H200 #0", 6.426, 4.945)
    again = _timed(result(1.307, "no_custom_kernel", strict=True, band=(1.29, 1.327)), "NVIDIA H200 #1", 6.45, 4.934)
    control = result(0.998, "no_custom_kernel", strict=True, band=(0.983, 1.013))
    control = _timed(control, "NVIDIA H200 #0", 4.918, 4.927)
    assert process_spread(control) == pytest.approx(1 / 0.983)  # the control's own band sees nothing of it
    assert reference_drift([first, again], control) == pytest.approx(6.45 / 4.927)
    held = standing(first, again, control)
    assert held.spread == pytest.approx(6.45 / 4.927 / 0.983, abs=1e-4) and held.measured.significant is False
    (shape,) = held.measured.shapes
    assert shape.speedup_band[0] < 1.0 < shape.speedup_band[1]


def _alias(run: EvalResult) -> EvalResult:
    """`run` of a candidate that is the reference itself, flagged as judge/static.py flags it."""
    run.flag("no_custom_kernel", f"no custom kernel: ModelNew is the reference Model{static.ALIAS_END}")
    return run


@pytest.mark.parametrize("alias", [True, False])
def test_an_identity_candidate_read_fast_beside_a_control_as_slow_as_its_reference_is_no_change(alias):
    """level2/77 on one H200 at 6efb49f: the reference ran 6.37-6.42 ms in both runs and 6.41-6.43 ms in both of the
    control's processes, the candidate, the reference itself, 4.89-5.04 ms: the same code, 1.31x apart. A candidate of
    its own, as fast, keeps its gain: its times are not readings of the reference's code."""
    mark = _alias if alias else (lambda run: run)
    first = _timed(mark(result(1.314, band=(1.294, 1.332))), "NVIDIA H200 #0", 6.423, 4.889)
    again = _timed(mark(result(1.264, strict=True, band=(1.248, 1.282))), "NVIDIA H200 #0", 6.373, 5.041)
    control = _alias(result(1.004, strict=True, band=(0.989, 1.018)))
    control = _timed(control, "NVIDIA H200 #0", 6.432, 6.407)
    drift = reference_drift([first, again], control)
    held = standing(first, again, control)
    if alias:
        assert drift == pytest.approx(6.407 / 4.889)
        assert held.measured.significant is False
    else:
        assert drift == pytest.approx(6.407 / 6.373)
        assert held.measured.significant


def test_a_gain_whose_reference_ran_as_in_the_control_stays_a_gain():
    first = _timed(result(1.3, band=(1.25, 1.35)), "NVIDIA H100 #0", 5.0, 3.85)
    again = _timed(result(1.28, strict=True, band=(1.24, 1.32)), "NVIDIA H100 #1", 5.02, 3.92)
    control = _timed(result(1.0, "no_custom_kernel", strict=True, band=(0.99, 1.01)), "NVIDIA H100 #0", 5.01, 5.0)
    held = standing(first, again, control)
    assert held.spread == pytest.approx(5.02 / 5.01 / 0.99, abs=1e-4) and held.measured.significant


def test_a_reference_slowed_within_the_controls_spread_adds_to_it():
    """A process 3 % fast, within a control's 4 % spread, beside a reference slowed 4 %: 1.071x, no gain."""
    first = _timed(result(1.071, band=(1.05, 1.09)), "NVIDIA H100 #0", 5.2, 4.856)
    again = _timed(result(1.071, strict=True, band=(1.05, 1.09)), "NVIDIA H100 #1", 5.2, 4.856)
    control = _timed(result(1.0, "no_custom_kernel", strict=True, band=(1 / 1.04, 1.04)), "NVIDIA H100 #0", 5.0, 5.0)
    held = standing(first, again, control)
    assert held.spread == pytest.approx(1.04 * 1.04, abs=1e-4) and held.measured.significant is False


@pytest.mark.parametrize(
    ("control_gpu", "control_ms"),
    [
        ("NVIDIA H200 #0", (5.0, 5.0)),  # another model's times say nothing of this one's processes
        ("NVIDIA H100 #0", (float("nan"), 0.0)),  # no reading of the reference
        ("NVIDIA H100 #0", (-1.0, float("inf"))),
    ],
)
def test_the_reference_is_compared_only_with_readings_of_it_on_its_own_gpu_model(control_gpu, control_ms):
    first = _timed(result(1.3, band=(1.25, 1.35)), "NVIDIA H100 #0", 6.5, 5.0)
    control = _timed(result(1.0, strict=True, band=(0.99, 1.01)), control_gpu, *control_ms)
    assert reference_drift([first], control) == 1.0
    assert reference_drift([first], result(None, status="runtime_error", strict=True)) == 1.0
