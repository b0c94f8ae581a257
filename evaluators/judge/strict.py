"""The strict re-evaluation's rule: which results get one, what it runs with, and what the two runs add up to.

One strict re-evaluation (timed as the first is, every output it holds checked, more trials, its reference and its
candidate in processes of their own) is due for a correct result set aside only by hard flags it may clear
(`flags.strict_can_clear`), and for one whose band excludes no change but ends within PROCESS_REACH of it: a run's band
sees only its own two processes, and the same kernel can run up to 38 % apart in two (docs/BENCHMARKS.md), so such a
change counts once another pair of processes confirms it. The graph confirms gains of candidates nothing set aside; a
suite, which reports changes both ways, confirms every significant one. Only a strict run that is correct and not set
aside clears a flagged first (then the lesser speedup counts, with its own run's figures) or confirms an unflagged one
(then the two count together, `kernels.archive.two_runs`: the figures of the run nearer no change, its band spanning
both). Otherwise the candidate is set aside, and the reason says what the strict run found. The graph's quarantine and
the evaluate-only batch both decide by these functions; where the evaluation runs is theirs to choose.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.judge.flags import strict_can_clear
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from kernels.archive import first_run_counts, two_runs

STRICT_TRIALS = 5  # the loop's and the batch's evaluations run 3 correctness trials by default


def strict_options(options: EvalOptions | None = None) -> EvalOptions:
    """The first evaluation's options, made strict, with at least STRICT_TRIALS correctness trials."""
    first = options or EvalOptions()
    return first.model_copy(update={"strict": True, "trials": max(first.trials, STRICT_TRIALS)})


# The most two processes were seen to move one call (the same cuDNN kernel 1.38x apart, bench/probes/memory_state.py):
# a change whose band ends nearer no change than this may be the processes' doing; one beyond it cannot be.
PROCESS_REACH = 1.4


def recheck_due(first: EvalResult, every_change: bool = False) -> bool:
    """Whether `first` gets one strict run: set aside only by flags it may clear, or a significant change to confirm.

    The change confirmed is one whose band ends within PROCESS_REACH of no change: a gain of a candidate nothing set
    aside, or with `every_change` (a suite's) a gain or a slowdown, whatever set it aside.
    """
    if first.status != "correct":
        return False
    if _clearable(first):
        return True
    if not first.significant or first.speedup_band is None:
        return False
    low, high = first.speedup_band
    gain = low > 1.0
    if not (low < PROCESS_REACH if gain else high > 1 / PROCESS_REACH):
        return False
    return every_change or (gain and not first.set_aside)


def _clearable(first: EvalResult) -> bool:
    return bool(first.set_aside) and strict_can_clear(first.flags)


def clears(first: EvalResult, strict: EvalResult | None) -> bool:
    """Whether `strict` clears `first`: set aside by flags it may clear, `first` has a strict, correct, clean run."""
    if strict is None or first.status != "correct" or not _clearable(first):
        return False
    return _holds(strict)


def _holds(strict: EvalResult) -> bool:
    return strict.strict and strict.status == "correct" and not strict.set_aside


@dataclass(frozen=True)
class Standing:
    """What a candidate's evaluations (the first, and the strict one if it ran) add up to."""

    measured: EvalResult  # the evaluation whose figures count: the first, or the two runs together (two_runs)
    set_aside: str | None  # why the measurement is not trusted (the first's hard flags and what the strict run found)
    cleared: bool  # a strict re-evaluation cleared the first
    rechecked: bool  # a strict re-evaluation ran


def standing(first: EvalResult, strict: EvalResult | None = None) -> Standing:
    """The candidate's standing after its first evaluation and, where one ran, its strict re-evaluation.

    Cleared, the lesser of the two runs' speedups counts with its own run's figures. Otherwise the two runs' figures
    count together wherever both were correct and no flag a strict run may clear disputes either's (a suite's rows set
    aside for good still get their change confirmed); the flags decide the rest.
    """
    if strict is None or first.status != "correct":
        return Standing(first, first.set_aside and _why(first, strict), False, strict is not None)
    cleared = clears(first, strict)
    measured = first
    if cleared:
        measured = first if first_run_counts(first.speedup, strict.speedup) else strict
    elif not _clearable(first) and strict.strict and strict.status == "correct" and not _clearable(strict):
        measured = EvalResult.model_validate(two_runs(first.model_dump(mode="json"), strict.model_dump(mode="json")))
    if first.set_aside:
        reason = None if cleared else _why(first, strict)
    else:  # a confirming run: it must hold as a clearing one does
        reason = None if _holds(strict) else _unconfirmed(strict)
    return Standing(measured=measured, set_aside=reason, cleared=cleared, rechecked=True)


def _unconfirmed(strict: EvalResult) -> str:
    if not strict.strict:
        return "its confirming re-evaluation was not strict"
    if strict.status != "correct":
        return f"its confirming strict re-evaluation: {strict.message or strict.status}"
    return f"its confirming strict re-evaluation: {strict.set_aside}"


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
