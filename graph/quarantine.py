"""Quarantine: a correct candidate with a hard flag is set aside until one strict re-evaluation clears it.

Set aside, a candidate is never the best kernel, a base for the selector or the report's headline; its record
keeps both evaluations and says why (or that the strict run cleared it).
"""

from __future__ import annotations

import evaluators
from evaluators.judge.flags import Flag, strict_can_clear
from graph import lab
from kernels.problem_types import Problem

STRICT_TRIALS = 5  # the loop's evaluations run 3 correctness trials


def strict_recheck(ctx, problem: Problem | str, source: str, device: str, result: dict) -> dict:
    """The one strict re-evaluation of a candidate set aside by clearable flags, as a dict; {} when none is due.

    It goes through the run's executor like every other evaluation (local, or the cluster).
    """
    if not recheck_due(result):
        return {}
    options = evaluators.EvalOptions(strict=True, trials=STRICT_TRIALS)
    return lab.evaluate(ctx, problem, source, device, options)


def record_fields(result: dict, strict: dict) -> dict:
    """A CandidateRecord's measurement and standing: eval, strict_eval, speedup, runtime_ms, set_aside, cleared."""
    correct = result.get("status") == "correct"
    reason = result.get("set_aside") if correct else None
    cleared = bool(reason) and _clears(result, strict)
    measured = strict if cleared else result  # a cleared candidate is known by the run that vouched for it
    return {
        "eval": result,
        "strict_eval": strict,
        "speedup": measured.get("speedup") if correct else None,
        "runtime_ms": measured.get("runtime_ms"),
        "set_aside": None if cleared or not reason else _why(reason, result, strict),
        "cleared_by_strict": cleared,
    }


def _flags(result: dict) -> list[Flag]:
    return [Flag.model_validate(flag) for flag in result.get("flags", [])]


def recheck_due(result: dict) -> bool:
    """A correct result set aside only by flags a strict re-evaluation may clear."""
    return result.get("status") == "correct" and bool(result.get("set_aside")) and strict_can_clear(_flags(result))


def _clears(result: dict, strict: dict) -> bool:
    """Only a run that says it was strict, correct and not set aside clears, and only flags a strict run can clear."""
    vouched = strict.get("strict") and strict.get("status") == "correct" and not strict.get("set_aside")
    return bool(vouched) and strict_can_clear(_flags(result))


def _why(reason: str, result: dict, strict: dict) -> str:
    if not strict:
        return reason if strict_can_clear(_flags(result)) else f"{reason} (no strict re-evaluation clears this)"
    if strict.get("status") != "correct":
        return f"{reason}; the strict re-evaluation: {strict.get('message') or strict.get('status')}"
    if strict.get("set_aside"):
        return f"{reason}; the strict re-evaluation: still {strict['set_aside']}"
    return f"{reason}; the re-evaluation was not strict"
