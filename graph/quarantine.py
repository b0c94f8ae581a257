"""Quarantine: a flagged candidate is set aside until one strict re-evaluation clears it; a gain, confirmed.

Set aside, a candidate is never the best kernel, a base for the selector or the report's headline; its record keeps both
evaluations and says why (or that the strict run cleared it). A significant gain gets a strict run in other processes
too, and counts as what the two runs vouch for together (`kernels.archive.two_runs`, kept as the record's `counted`): a
gain the second run does not repeat is within noise. A gain the two runs still show is weighed against a control, the
problem's reference judged strictly as its own candidate, whose spread widens the counted bands (kept as the record's
`control_eval`). Which results get a strict run or a control, with what options, and what they add up to is the
evaluator's rule (`evaluators.judge.strict`); the graph decides where the runs go (the run's executor) and what the
archive keeps.
"""

from __future__ import annotations

import evaluators
from evaluators.judge import strict as strict_rule
from graph import lab
from kernels.archive import CandidateRecord
from kernels.problem import load_problem
from kernels.problem_types import Problem


def strict_recheck(ctx, problem: Problem | str, source: str, device: str, result: dict) -> dict:
    """The one strict re-evaluation of a candidate due one (clearable flags, a gain to confirm); {} when none is due.

    It goes through the run's executor like every other evaluation (local, or the cluster).
    """
    if not recheck_due(result):
        return {}
    return lab.evaluate(ctx, problem, source, device, _strict_options(ctx))


def control_run(ctx, problem: Problem | str, device: str, result: dict, strict: dict) -> dict:
    """The control of a gain its two runs still show; {} when none is due.

    The problem's reference judged strictly as its own candidate, with the strict run's options, in processes of its
    own: how far two processes of this problem read apart here. A run judges it once, for its first confirmed gain, and
    later gains are weighed against the same: it does not depend on the candidate, and each costs a strict evaluation.
    """
    if not control_due(result, strict):
        return {}
    kept = _judged_control(ctx)
    if kept:  # the problem's spread here, judged once a run: it runs no code of any candidate's
        return kept
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    return lab.evaluate(ctx, problem, problem.reference_as_candidate(), device, _strict_options(ctx))


def _judged_control(ctx) -> dict:
    """The latest control this run's archive keeps that was judged correct (a failed one is run again), or {}."""
    if not ctx.run_dir:
        return {}
    records = lab.open_archive(ctx.run_dir).records
    return next((r.control_eval for r in reversed(records) if r.control_eval.get("status") == "correct"), {})


def record_fields(result: dict, strict: dict, control: dict | None = None) -> dict:
    """A CandidateRecord's measurement and standing: eval, strict_eval, control_eval, counted, speedup, set_aside..."""
    correct = result.get("status") == "correct"
    fields = {
        "eval": result,
        "strict_eval": strict,
        "control_eval": control or {},
        "set_aside": None,
        "cleared_by_strict": False,
    }
    if not correct:  # nothing to trust or distrust (and not always an evaluation: an edit off its anchors)
        return fields | {"speedup": None, "runtime_ms": result.get("runtime_ms")}
    standing = strict_rule.standing(_result(result), _ran(strict), _ran(control))
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


def control_due(result: dict, strict: dict) -> bool:
    """A gain the first evaluation and its strict run confirmed together."""
    return bool(strict) and strict_rule.control_due(_result(result), _result(strict))


def spread(record: CandidateRecord) -> float | None:
    """The factor its control widened the record's counted bands by (`Standing.spread`); None without a control."""
    if not record.control_eval or record.eval.get("status") != "correct":
        return None
    first, strict, control = _result(record.eval), _ran(record.strict_eval), _result(record.control_eval)
    return strict_rule.standing(first, strict, control).spread


def _strict_options(ctx) -> evaluators.EvalOptions:
    return strict_rule.strict_options(evaluators.EvalOptions(compile_baseline=ctx.compile_baseline))


def _result(result: dict) -> evaluators.EvalResult:
    return evaluators.EvalResult.model_validate(result)


def _ran(run: dict | None) -> evaluators.EvalResult | None:
    return _result(run) if run else None
