"""One scientist run per suite problem, as the batch sees it: its directory, its state, its spend, its report row.

Each run is an ordinary `python -m graph.run` run directory (run.json, checkpoints, archive, summary.json), so
anything graph.run can do with it (resume, report) works on a batch's runs too.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graph.run import SETTINGS_FILE

if TYPE_CHECKING:
    from evaluators.suites.report import SuiteRow

# graph.batch imports this module before it parses its arguments: the archive, the checkpoints and the suite
# report (LangGraph, LangChain, pydantic) are imported by the functions that read them.


@dataclass
class Spend:
    """What a run has used so far, and how far it got."""

    tokens: int = 0
    dollars: float = 0.0
    iteration: int = 0
    best: float | None = None


def run_dir_name(key: str) -> str:
    """A problem key as one folder name (and run id): `level1/19_ReLU` -> `level1__19_ReLU`."""
    return key.replace("/", "__")


def is_finished(run_dir: Path) -> bool:
    """The run reached its report (summary.json is written last)."""
    return (run_dir / "summary.json").is_file()


def is_started(run_dir: Path) -> bool:
    """graph.run saved the run's settings, so it can be resumed."""
    return (run_dir / SETTINGS_FILE).is_file()


def read_spend(run_dir: Path, previous: Spend | None = None) -> Spend:
    """Tokens, dollars, iteration and best speedup from the summary, else from the latest checkpoint.

    The checkpoint may be mid-write by the run's own process: then the previous reading stands.
    """
    from graph import lab
    from graph.checkpoint import open_checkpointer

    if is_finished(run_dir):
        summary = json.loads((run_dir / "summary.json").read_text())
        return Spend(summary["tokens"], summary["cost_usd"], summary["iterations"], summary["best_speedup"])
    if not (run_dir / "checkpoints.sqlite").is_file():
        return previous or Spend()
    try:
        with open_checkpointer(run_dir) as saver:
            saved = saver.get_tuple({"configurable": {"thread_id": run_dir.name}})
    except sqlite3.Error:
        return previous or Spend()
    if saved is None:
        return previous or Spend()
    values = saved.checkpoint.get("channel_values", {})
    tokens, dollars = lab.spent(values.get("llm_calls", []))
    return Spend(tokens, dollars, values.get("iteration", 0), values.get("best_speedup"))


def suite_row(key: str, run_dir: Path, reason: str) -> SuiteRow:
    """The problem's report row: its best kernel when the run finished, else `reason` as a failure."""
    from evaluators.suites.report import SuiteRow, not_judged
    from graph import lab, quarantine

    spend = read_spend(run_dir) if run_dir.is_dir() else Spend()
    cost = {"tokens": spend.tokens, "dollars": round(spend.dollars, 6)}
    if not is_finished(run_dir):
        return not_judged(key, reason, **cost)
    summary = json.loads((run_dir / "summary.json").read_text())
    archive = lab.open_archive(run_dir)
    best = lab.best_kernel(archive)
    wall = summary.get("elapsed_s")
    unfit = lab.does_not_fit(archive)
    if unfit is not None:  # the machine's limit, reported apart from a run that found no correct kernel
        return SuiteRow(key=key, status="does_not_fit", wall_s=wall, message=unfit, **cost)
    if best is None:
        statuses = Counter(r.status for r in archive.records if r.experiment is not None)
        status = statuses.most_common(1)[0][0] if statuses else "not_judged"
        message = f"no correct kernel ({dict(statuses)}); {summary.get('stop_reason')}"
        return SuiteRow(key=key, status=status, wall_s=wall, message=message, **cost)
    measured = best.measured  # a kernel a strict re-evaluation cleared is known by the slower run's figures
    shapes = measured.get("shapes") or []
    fractions = [s["roofline_fraction"] for s in shapes if s.get("kind") == "benchmark" and s.get("roofline_fraction")]
    if not fractions and (measured.get("roofline") or {}).get("fraction"):
        fractions = [measured["roofline"]["fraction"]]
    cleared = " (cleared by strict re-evaluation)" if best.cleared_by_strict else ""
    return SuiteRow(
        key=key,
        status="correct",
        speedup=best.speedup,
        speedup_band=measured.get("speedup_band"),
        speedup_vs_compile=measured.get("speedup_vs_compile"),
        roofline_fraction=statistics.median(fractions) if fractions else None,
        wall_s=wall,
        set_aside=best.set_aside,  # the quarantine's standing, not the first evaluation's flags
        rechecked=bool(best.strict_eval),
        cleared_by_strict=best.cleared_by_strict,
        process_spread=quarantine.spread(best),
        timing=measured.get("timing"),
        message=f"best {best.id}{cleared}; {summary.get('stop_reason')}",
        **cost,
    )
