"""Which flags set a correct result aside, and which of them a strict re-evaluation may clear."""

import pytest

from evaluators.judge.flags import SEVERITY, STRICT_RECHECKS, STRICT_VOUCHES, Flag, strict_can_clear
from evaluators.judge.result import EvalResult


def result(status: str, *codes: str, strict: bool = False) -> EvalResult:
    flagged = EvalResult(status=status, strict=strict)
    for code in codes:
        flagged.flag(code, f"{code} happened")
    return flagged


def test_every_hard_flag_sets_a_correct_result_aside_and_soft_ones_do_not():
    hard = [code for code, severity in SEVERITY.items() if severity == "hard"]
    assert result("correct", *hard).set_aside == "; ".join(f"{code} happened" for code in hard)
    assert result("correct", "monkey_patch", "torch_fallback").set_aside is None
    assert result("incorrect", *hard).set_aside is None  # nothing to trust or distrust


def test_a_strict_run_vouches_for_a_large_speedup_but_not_for_what_it_sees_itself():
    assert result("correct", "beyond_plausible", strict=True).set_aside is None
    for code in ("side_stream", "unwatched", "beyond_roofline", "no_custom_kernel"):
        assert result("correct", "beyond_plausible", code, strict=True).set_aside == f"{code} happened"


@pytest.mark.parametrize("code", sorted(STRICT_VOUCHES | STRICT_RECHECKS))
def test_a_strict_run_may_clear_what_one_run_can_show_by_accident(code):
    assert strict_can_clear([Flag.make(code, "x"), Flag.make("monkey_patch", "y")])


@pytest.mark.parametrize("code", ["beyond_roofline", "no_custom_kernel", "rewrote_problem"])
def test_no_strict_run_clears_physics_a_missing_kernel_or_a_rewritten_problem(code):
    assert not strict_can_clear([Flag.make("beyond_plausible", "x"), Flag.make(code, "y")])


def test_a_disputed_timer_sets_nothing_aside_its_figure_is_the_parents_already():
    # An honest call issued slower than the reference's reads as a forged timer does, and either way the parent's
    # figure is the one the result reports (judge/verdicts.floor_ms).
    assert SEVERITY["timing_disputed"] == "soft" and "timing_disputed" not in STRICT_RECHECKS
    assert result("correct", "timing_disputed").set_aside is None
