"""Where the graph goes next: after an evaluation, after an iteration, and how many steps a run may take."""

from __future__ import annotations

from typing import Literal

from graph.context import RunContext

FAILED = frozenset({"compile_error", "runtime_error", "incorrect", "timeout"})
# Edits far outside the plan's anchors (agents.anchors) are sent back like a failure, before any evaluation.
OFF_ANCHOR = "off_anchor"


def route_after_evaluate(status: str, debug_attempts: int, max_debug_attempts: int) -> Literal["debugger", "done"]:
    """A failed or off-anchor candidate goes to the debugger until its attempts are spent; anything else is done."""
    if (status in FAILED or status == OFF_ANCHOR) and debug_attempts < max_debug_attempts:
        return "debugger"
    return "done"


def stop_reason(
    ctx: RunContext,
    *,
    iteration: int,
    tokens: int,
    dollars: float,
    elapsed_s: float,
    best_fraction: float | None = None,
) -> str | None:
    """Why the run must stop now (speed of light reached, or the first budget spent), or None while there is room.

    `best_fraction` is the best kernel's fraction of its roofline (the worst over its benchmark shapes).
    """
    if best_fraction is not None and best_fraction >= ctx.speed_of_light:
        return (
            f"speed of light: the best kernel is at {best_fraction * 100:.1f}% of its roofline "
            f"(the run stops at {ctx.speed_of_light * 100:g}%)"
        )
    if iteration >= ctx.iterations:
        return f"iterations: {iteration} of {ctx.iterations} done"
    if ctx.max_tokens is not None and tokens >= ctx.max_tokens:
        return f"tokens: {tokens} used, budget {ctx.max_tokens}"
    if ctx.max_dollars is not None and dollars >= ctx.max_dollars:
        return f"dollars: ${dollars:.4f} spent, budget ${ctx.max_dollars:.4f}"
    if ctx.max_minutes is not None and elapsed_s >= ctx.max_minutes * 60:
        return f"wall time: {elapsed_s / 60:.1f} min used, budget {ctx.max_minutes:g} min"
    return None


def recursion_limit(iterations: int, experiments: int, max_debug_attempts: int) -> int:
    """A step bound that a legal run never reaches: per experiment, implement, then evaluate/debug rounds."""
    per_experiment = 2 * (max_debug_attempts + 1) + 3
    per_iteration = 4 + experiments * per_experiment
    return 10 + iterations * per_iteration


def device_for_slot(device: str, slot: int, gpu_count: int) -> str:
    """Spread parallel experiments over the GPUs: slot k evaluates on cuda:(k mod count)."""
    if device == "cuda" and gpu_count > 1:
        return f"cuda:{slot % gpu_count}"
    return device
