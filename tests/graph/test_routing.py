"""Routing, budgets, the step bound and device placement: the graph's decisions as pure functions."""

import pytest

from graph.context import RunContext
from graph.routing import FAILED, device_for_slot, recursion_limit, route_after_evaluate, stop_reason


@pytest.mark.parametrize("status", sorted(FAILED))
def test_a_failure_goes_to_the_debugger_until_attempts_are_spent(status):
    assert route_after_evaluate(status, 0, 2) == "debugger"
    assert route_after_evaluate(status, 1, 2) == "debugger"
    assert route_after_evaluate(status, 2, 2) == "done"


def test_a_correct_candidate_is_done_at_once():
    assert route_after_evaluate("correct", 0, 2) == "done"


def test_no_debugging_when_attempts_are_zero():
    assert route_after_evaluate("compile_error", 0, 0) == "done"


def test_budgets_stop_the_run_in_order():
    ctx = RunContext(iterations=3, max_tokens=1000, max_dollars=0.5, max_minutes=2)
    assert stop_reason(ctx, iteration=1, tokens=999, dollars=0.49, elapsed_s=119) is None
    assert stop_reason(ctx, iteration=3, tokens=0, dollars=0, elapsed_s=0).startswith("iterations")
    assert stop_reason(ctx, iteration=1, tokens=1000, dollars=0, elapsed_s=0).startswith("tokens")
    assert stop_reason(ctx, iteration=1, tokens=0, dollars=0.5, elapsed_s=0).startswith("dollars")
    assert stop_reason(ctx, iteration=1, tokens=0, dollars=0, elapsed_s=120).startswith("wall time")


def test_unset_budgets_never_stop_a_run():
    ctx = RunContext(iterations=10)
    assert stop_reason(ctx, iteration=9, tokens=10**9, dollars=1e6, elapsed_s=1e6) is None


def test_recursion_limit_grows_with_iterations_experiments_and_debugging():
    base = recursion_limit(2, 2, 1)
    assert recursion_limit(3, 2, 1) > base
    assert recursion_limit(2, 3, 1) > base
    assert recursion_limit(2, 2, 3) > base
    # One experiment's subgraph takes 1 + 2 * (attempts + 1) steps; the bound must cover it.
    assert recursion_limit(1, 1, 5) > 1 + 2 * 6


def test_slots_spread_over_gpus_only_when_there_are_several():
    assert [device_for_slot("cuda", slot, 4) for slot in range(5)] == [f"cuda:{k}" for k in (0, 1, 2, 3, 0)]
    assert device_for_slot("cuda", 3, 1) == "cuda"
    assert device_for_slot("cpu", 3, 0) == "cpu"
