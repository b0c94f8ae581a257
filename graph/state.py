"""The scientist's state: the main graph's channels, one experiment's channels, and the records they carry."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from pydantic import BaseModel, Field
from typing_extensions import TypedDict


class ExperimentTask(BaseModel):
    """One chosen plan handed to a slot: what to change, from which candidate, on which device, beside what.

    `experiment` is an `agents.schemas.Plan` dump; `concurrent` the titles of the plans the other slots implement
    from the same base; `profile` the base's profiler summary, for the debugger.
    """

    iteration: int
    slot: int
    base_id: str
    reference_id: str | None = None
    experiment: dict[str, Any]
    problem: str
    device: str
    run_dir: str
    concurrent: list[str] = Field(default_factory=list)
    profile: str = ""


class ExperimentOutcome(BaseModel):
    """What one slot produced: the final source, its evaluation and how many debugger rounds it took."""

    iteration: int
    slot: int
    base_id: str
    reference_id: str | None = None
    experiment: dict[str, Any]
    source: str
    status: str
    eval: dict[str, Any] = Field(default_factory=dict)
    strict_eval: dict[str, Any] = Field(default_factory=dict, description="the strict re-evaluation, if one ran")
    control_eval: dict[str, Any] = Field(default_factory=dict, description="the control (the reference), if one ran")
    debug_attempts: int = 0
    note: str = ""


def gather(current: list | None, update: list | None) -> list:
    """Append outcomes as slots finish; an update of None clears them once record has archived the iteration."""
    if update is None:
        return []
    return (current or []) + list(update)


class ScientistState(TypedDict, total=False):
    """The main loop's channels; per-candidate detail lives in the archive under `run_dir`."""

    problem: str
    device: str
    run_dir: str
    iteration: int
    selection: dict[str, Any] | None
    tasks: list[ExperimentTask]
    outcomes: Annotated[list[ExperimentOutcome], gather]
    llm_calls: Annotated[list[Any], operator.add]
    notes: Annotated[list[str], operator.add]
    best_id: str | None
    best_speedup: float | None
    elapsed_s: float
    iteration_started_at: float
    stop_reason: str | None
    report_path: str | None


class ExperimentState(TypedDict, total=False):
    """One experiment's channels inside its implement -> evaluate -> debug loop."""

    task: ExperimentTask
    source: str
    status: str
    eval: dict[str, Any]
    strict_eval: dict[str, Any]  # the strict run, kept while its control runs
    debug_attempts: int
    attempts: Annotated[list[dict[str, Any]], operator.add]  # versions sent back: attempt, status, message, source
    note: str
    outcomes: Annotated[list[ExperimentOutcome], gather]
    llm_calls: Annotated[list[Any], operator.add]


class ExperimentOutput(TypedDict):
    """What an experiment hands back to the main graph."""

    outcomes: Annotated[list[ExperimentOutcome], gather]
    llm_calls: Annotated[list[Any], operator.add]
