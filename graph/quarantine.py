"""Quarantine: a flagged candidate is set aside until one strict re-evaluation clears it; a gain, confirmed.

Set aside, a candidate is never the best kernel, a base for the selector or the report's headline; its record keeps both
evaluations and says why (or that the strict run cleared it). A significant gain gets a strict run in other processes
too, and counts as what the two runs vouch for together (`kernels.archive.two_runs`, kept as the record's `counted`): a
gain the second run does not repeat is within noise. Which results get a strict run, with what options, and what the
two add up to is the evaluator's rule (`evaluators.judge.strict`); the graph decides where the run goes (the run's
executor) and what the archive keeps.
"""

from __future__ import annotations

import evaluators
from evaluators.judge import strict as strict_rule
from graph import lab
from kernels.problem_types import Problem


def strict_recheck(ctx, problem: Problem | str, source: str, device: str, result: dict) -> dict:
    """The one strict re-evaluation of a candidate due one (clearable flags, a gain to confirm); {} when none is due.

    It goes through the run's executor like every other evaluation (local, or the cluster).
    """
    if not recheck_due(result):
        return {}
    options = strict_rule.strict_options(evaluators.EvalOptions(compile_baseline=ctx.compile_baseline))
    return lab.evaluate(ctx, problem, source, device, options)


def record_fields(result: dict, strict: dict) -> dict:
    """A CandidateRecord's measurement and standing: eval, strict_eval, counted, speedup, runtime_ms, set_aside..."""
    correct = result.get("status") == "correct"
    fields = {"eval": result, "strict_eval": strict, "set_aside": None, "cleared_by_strict": False}
    if not correct:  # nothing to trust or distrust (and not always an evaluation: an edit off its anchors)
        return fields | {"speedup": None, "runtime_ms": result.get("runtime_ms")}
    standing = strict_rule.standing(_result(result), _result(strict) if strict else None)
    return fields | {
        "counted": standing.measured.model_dump(mode="json"),
        "speedup": standing.measured.speedup,
        "runtime_ms": standing.measured.runtime_ms,
        "set_aside": standing.set_aside,
        "cleared_by_strict": standing.cleared,
    }


def recheck_due(result: dict) -> bool:
    """A correct result set aside only by flags a strict re-evaluation may clear, or a significant gain to confirm."""
    return result.get("status") == "correct" and strict_rule.recheck_due(_result(result))


def _result(result: dict) -> evaluators.EvalResult:
    return evaluators.EvalResult.model_validate(result)
