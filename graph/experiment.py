"""One experiment's loop: implementer -> evaluate -> (debugger -> evaluate)* -> done, as a subgraph per slot.

Before a source is evaluated it is checked as a diff against the base (agents.anchors): edits far outside the
plan's anchors go to the debugger as status "off_anchor" while attempts remain, and are noted in the archive when
they are evaluated anyway. The implementer and the debugger see the siblings' attempts (agents.siblings); the
debugger also sees the base and the earlier versions of its own candidate (the `attempts` channel). A correct one
may end through its strict re-evaluation (recheck) and then its control (control), each a node of its own
(graph.quarantine).
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from agents.anchors import check_edit
from agents.debugger import debug_candidate
from agents.errors import MalformedAnswer
from agents.implementer import implement_plan
from agents.schemas import Plan
from agents.siblings import sibling_digest
from graph import lab, quarantine, stopping
from graph.context import RunContext
from graph.routing import OFF_ANCHOR, route_after_evaluate
from graph.state import ExperimentOutcome, ExperimentOutput, ExperimentState, ExperimentTask
from kernels.archive import Archive
from kernels.labbook import LabBook
from kernels.problem import load_problem


def _siblings(task: ExperimentTask, archive: Archive) -> str:
    return sibling_digest(archive, task.base_id, LabBook(task.run_dir).findings, concurrent=task.concurrent)


def implementer(state: ExperimentState, runtime: Runtime[RunContext]) -> Command[Literal["evaluate", "__end__"]]:
    """Write the complete candidate source for the slot's experiment, from its base version."""
    stopping.check()
    task = state["task"]
    archive = lab.open_archive(task.run_dir)
    problem = load_problem(task.problem)
    model = lab.model_settings(runtime.context, task.run_dir).make("implementer")
    try:
        source, call = implement_plan(
            model,
            problem=lab.problem_brief(problem, task.device, archive),
            base_source=archive.get(task.base_id).source,
            reference_source=archive.get(task.reference_id).source if task.reference_id else None,
            plan=Plan(**task.experiment),
            siblings=_siblings(task, archive),
            call_id=f"i{task.iteration}.s{task.slot}.implementer.a0",
        )
    except MalformedAnswer as error:
        note = f"implementer gave no usable source: {error}"
        outcome = _outcome(task, "", "compile_error", {}, 0, note)
        return Command(goto=END, update={"outcomes": [outcome], "llm_calls": lab.calls_of(error)})
    return Command(goto="evaluate", update={"source": source, "debug_attempts": 0, "llm_calls": [call]})


def evaluate(
    state: ExperimentState, runtime: Runtime[RunContext]
) -> Command[Literal["debugger", "recheck", "__end__"]]:
    """Check the edit against the anchors, then compile, check and time; failures go to the debugger while they may.

    A correct candidate that a hard flag sets aside, or with a gain to confirm, goes on to its one strict re-evaluation
    (recheck).
    """
    stopping.check()
    task, attempts = state["task"], state.get("debug_attempts", 0)
    plan = Plan(**task.experiment)
    check = check_edit(lab.open_archive(task.run_dir).get(task.base_id).source, state["source"], plan.anchors)
    strayed = check.describe() if check.strays else ""
    if strayed and route_after_evaluate(OFF_ANCHOR, attempts, runtime.context.max_debug_attempts) == "debugger":
        event = {"iteration": task.iteration, "slot": task.slot, "attempt": attempts, "status": OFF_ANCHOR}
        runtime.stream_writer(event | {"message": strayed})
        diagnostics = {"status": OFF_ANCHOR, "message": strayed, "diagnostics": strayed}
        update = {"status": OFF_ANCHOR, "eval": diagnostics, "attempts": [_version(state, OFF_ANCHOR, strayed)]}
        return Command(goto="debugger", update=update)
    result = lab.evaluate(runtime.context, task.problem, state["source"], task.device)
    status = result["status"]
    event = {"iteration": task.iteration, "slot": task.slot, "attempt": attempts, "status": status}
    runtime.stream_writer(event | _timing(result))
    if route_after_evaluate(status, attempts, runtime.context.max_debug_attempts) == "debugger":
        version = _version(state, status, result.get("message", ""))
        return Command(goto="debugger", update={"status": status, "eval": result, "attempts": [version]})
    update = {"status": status, "eval": result, "note": strayed}
    if quarantine.recheck_due(result):
        # Its own node, so a stop during the strict run never costs the evaluation that finished before it.
        return Command(goto="recheck", update=update)
    return Command(goto=END, update=update | {"outcomes": [_finished(state | update)]})


def recheck(state: ExperimentState, runtime: Runtime[RunContext]) -> Command[Literal["control", "__end__"]]:
    """The strict re-evaluation of a candidate set aside or with a gain; then its control, or the experiment ends."""
    stopping.check()
    task, result = state["task"], state["eval"]
    strict = quarantine.strict_recheck(runtime.context, task.problem, state["source"], task.device, result)
    runtime.stream_writer(_event(state) | {"status": strict["status"], "strict": True} | _timing(strict))
    if quarantine.control_due(result, strict):
        # Its own node too, so a stop during the control never costs the strict run that finished before it.
        return Command(goto="control", update={"strict_eval": strict})
    return Command(goto=END, update={"outcomes": [_finished(state, strict)]})


def control(state: ExperimentState, runtime: Runtime[RunContext]) -> dict:
    """The control of a gain the two runs still show; the experiment ends with all three.

    The control is the problem's reference judged strictly as its own candidate (graph.quarantine.control_run).
    """
    stopping.check()
    task, strict = state["task"], state["strict_eval"]
    weighed = quarantine.control_run(runtime.context, task.problem, task.device, state["eval"], strict)
    runtime.stream_writer(_event(state) | {"status": weighed["status"], "control": True} | _timing(weighed))
    return {"outcomes": [_finished(state, strict, weighed)]}


def _event(state: ExperimentState) -> dict:
    task = state["task"]
    return {"iteration": task.iteration, "slot": task.slot, "attempt": state.get("debug_attempts", 0)}


def _finished(state: ExperimentState, strict: dict | None = None, control: dict | None = None) -> ExperimentOutcome:
    """The experiment's outcome once its last evaluation (and any strict one, and any control) is in."""
    status, attempts = state["status"], state.get("debug_attempts", 0)
    notes = [f"given up after {attempts} debugger attempts" if status != "correct" and attempts else "", state["note"]]
    note = "; ".join(filter(None, notes))
    return _outcome(state["task"], state["source"], status, state["eval"], attempts, note, strict, control)


def debugger(state: ExperimentState, runtime: Runtime[RunContext]) -> Command[Literal["evaluate", "__end__"]]:
    """Fix the source sent back (failed, or off its anchors) from the diagnostics, seeing the siblings' attempts."""
    stopping.check()
    task, attempt = state["task"], state.get("debug_attempts", 0) + 1
    archive = lab.open_archive(task.run_dir)
    model = lab.model_settings(runtime.context, task.run_dir).make("debugger")
    result = state["eval"]
    try:
        source, call = debug_candidate(
            model,
            problem=lab.problem_brief(load_problem(task.problem), task.device, archive),
            source=state["source"],
            base_source=archive.get(task.base_id).source,
            attempts=state.get("attempts", [])[:-1],  # the last is the version sent back, shown in full
            diagnostics=result.get("diagnostics") or result.get("message", ""),
            status=state["status"],
            plan=Plan(**task.experiment),
            siblings=_siblings(task, archive),
            profile=task.profile or "(no profile for this base)",
            call_id=f"i{task.iteration}.s{task.slot}.debugger.a{attempt}",
        )
    except MalformedAnswer as error:
        note = f"debugger gave no usable source: {error}"
        outcome = _outcome(task, state["source"], state["status"], result, attempt, note)
        return Command(goto=END, update={"outcomes": [outcome], "llm_calls": lab.calls_of(error)})
    return Command(goto="evaluate", update={"source": source, "debug_attempts": attempt, "llm_calls": [call]})


def _version(state: ExperimentState, status: str, message: str) -> dict:
    """The version being sent back, as the debugger's history keeps it."""
    return {"attempt": state.get("debug_attempts", 0), "status": status, "message": message, "source": state["source"]}


def _timing(result: dict) -> dict:
    return {
        "speedup": result.get("speedup"),
        "message": result.get("message", ""),
        "set_aside": result.get("set_aside"),
    }


def _outcome(
    task: ExperimentTask,
    source: str,
    status: str,
    result: dict,
    attempts: int,
    note: str,
    strict: dict | None = None,
    control: dict | None = None,
):
    return ExperimentOutcome(
        iteration=task.iteration,
        slot=task.slot,
        base_id=task.base_id,
        reference_id=task.reference_id,
        experiment=task.experiment,
        source=source,
        status=status,
        eval=result,
        strict_eval=strict or {},
        control_eval=control or {},
        debug_attempts=attempts,
        note=note,
    )


def build_experiment_graph():
    """The per-slot subgraph; it inherits the parent's checkpointer, so a resumed run continues mid-debugging."""
    builder = StateGraph(ExperimentState, context_schema=RunContext, output_schema=ExperimentOutput)
    builder.add_node("implementer", implementer)
    builder.add_node("evaluate", evaluate)
    builder.add_node("debugger", debugger)
    builder.add_node("recheck", recheck)
    builder.add_node("control", control)
    builder.add_edge(START, "implementer")
    return builder.compile(name="experiment")
