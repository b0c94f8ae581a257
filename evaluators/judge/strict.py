"""The strict re-evaluation's rule: which results get one, what it runs with, and whether it clears the first.

A correct result set aside only by hard flags a strict run may clear (`flags.strict_can_clear`) gets exactly one
strict re-evaluation: timed as the first is, every output it holds checked, more trials. Only a run that says it was
strict, is correct and is not set aside itself clears the first; then the lesser of the two runs' speedups counts, with
its own run's figures and band. Otherwise the candidate stays set aside, and the reason says what the strict run
found. The graph's quarantine and the evaluate-only batch both decide by these functions; where the evaluation runs
is theirs to choose.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.judge.flags import strict_can_clear
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from kernels.archive import first_run_counts

STRICT_TRIALS = 5  # the loop's and the batch's evaluations run 3 correctness trials by default


def strict_options(options: EvalOptions | None = None) -> EvalOptions:
    """The first evaluation's options, made strict, with at least STRICT_TRIALS correctness trials."""
    first = options or EvalOptions()
    return first.model_copy(update={"strict": True, "trials": max(first.trials, STRICT_TRIALS)})


def recheck_due(first: EvalResult) -> bool:
    """A correct result set aside only by flags a strict re-evaluation may clear: it gets one strict run."""
    return first.status == "correct" and bool(first.set_aside) and strict_can_clear(first.flags)


def clears(first: EvalResult, strict: EvalResult | None) -> bool:
    """Whether `strict` clears `first`: `first` was due a recheck, and `strict` was strict, correct, not set aside."""
    if strict is None or not recheck_due(first):
        return False
    return strict.strict and strict.status == "correct" and not strict.set_aside


@dataclass(frozen=True)
class Standing:
    """What a candidate's evaluations (the first, and the strict one if it ran) add up to."""

    measured: EvalResult  # the evaluation whose figures count: where the strict one cleared, the slower of the two
    set_aside: str | None  # why the measurement is not trusted (the first's hard flags and what the strict run found)
    cleared: bool  # a strict re-evaluation cleared the first
    rechecked: bool  # a strict re-evaluation ran


def standing(first: EvalResult, strict: EvalResult | None = None) -> Standing:
    """The candidate's standing after its first evaluation and, where one ran, its strict re-evaluation."""
    cleared = clears(first, strict)
    measured = (first if first_run_counts(first.speedup, strict.speedup) else strict) if cleared else first
    reason = None if cleared or not first.set_aside else _why(first, strict)
    return Standing(measured=measured, set_aside=reason, cleared=cleared, rechecked=strict is not None)


def _why(first: EvalResult, strict: EvalResult | None) -> str:
    reason = first.set_aside
    if not strict_can_clear(first.flags):
        return f"{reason} (no strict re-evaluation clears this)"
    if strict is None:
        return reason
    if strict.status != "correct":
        return f"{reason}; the strict re-evaluation: {strict.message or strict.status}"
    if strict.set_aside:
        return f"{reason}; the strict re-evaluation: still {strict.set_aside}"
    return f"{reason}; the re-evaluation was not strict"
