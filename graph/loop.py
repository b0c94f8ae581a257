"""The main loop's nodes: setup, selector, hypothesizer and record (the experiments run in `graph.experiment`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

import retrieval
from agents.briefs import CandidateBrief
from agents.errors import MalformedAnswer
from agents.hypothesizer import propose_experiments, retrieval_queries
from agents.notebook import archive_summary, notebook_summary, selectable_ids
from agents.selector import select_parent
from graph import lab, quarantine
from graph.context import RunContext
from graph.routing import device_for_slot, stop_reason
from graph.state import ExperimentTask, ScientistState
from kernels.archive import Archive, CandidateRecord
from kernels.gpumode import REFERENCE_SUBMISSION
from kernels.problem import Problem, load_problem


def setup(state: ScientistState, runtime: Runtime[RunContext]) -> Command[Literal["selector", "report"]]:
    """Load the problem, open or resume the archive, and measure the reference and the seed once."""
    ctx = runtime.context
    problem = load_problem(ctx.problem)
    device = lab.run_device(ctx)
    run_dir = state.get("run_dir") or ctx.run_dir or str(lab.RUNS_DIR / lab.new_run_id(problem.name))
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    archive = lab.open_archive(run_dir)
    if not len(archive):
        _measure_starting_point(archive, problem, device, ctx)
    best = lab.best_kernel(archive)
    update = {
        "problem": ctx.problem,
        "device": device,
        "run_dir": run_dir,
        "iteration": 0,
        "elapsed_s": 0.0,
        "best_id": best.id if best else None,
        "best_speedup": best.speedup if best else None,
    }
    reason = stop_reason(ctx, iteration=0, tokens=0, dollars=0.0, elapsed_s=0.0)
    return Command(goto="report" if reason else "selector", update={**update, "stop_reason": reason})


def _measure_starting_point(archive: Archive, problem: Problem, device: str, ctx: RunContext) -> None:
    """Archive the PyTorch reference (speedup 1 by definition) and the seed, from one evaluation.

    Without a seed the reference itself, as a candidate, is measured for its runtime; it is the selector's first
    base and never the best kernel (it has none of its own).
    """
    seed = problem.seed_path
    if seed is not None:
        source = seed.read_text()
    elif problem.format == "gpumode":
        source = REFERENCE_SUBMISSION  # custom_kernel calling the problem's own ref_kernel
    else:
        source = problem.reference_as_candidate()
    result = lab.evaluate(ctx, problem, source, device)
    measured = result["status"] == "correct"
    reference = archive.add(
        CandidateRecord(
            id=archive.next_id(),
            source=problem.source,
            status="reference",
            speedup=1.0,
            runtime_ms=result.get("baseline_ms"),
            eval={} if seed is not None else result,
            note="the problem's PyTorch reference"
            + ("" if measured or seed is not None else f" (its runtime not measured: {result['message']})"),
        )
    )
    if seed is None:
        return
    strict = quarantine.strict_recheck(ctx, problem, source, device, result)
    archive.add(
        CandidateRecord(
            id=archive.next_id(),
            parent_id=reference.id,
            source=source,
            status="seed" if measured else result["status"],
            note=f"bundled seed kernels/seeds/{problem.name}.py",
            **quarantine.record_fields(result, strict),
        )
    )


def selector(state: ScientistState, runtime: Runtime[RunContext]) -> dict:
    """Ask the selector for a base version (and a contrasting reference) from the archive's summary."""
    iteration = state.get("iteration", 0) + 1
    archive = lab.open_archive(state["run_dir"])
    model = lab.model_settings(runtime.context).make("selector")
    best = lab.best_kernel(archive)
    selection, call = select_parent(
        model,
        archive_summary=archive_summary(archive),
        candidate_ids=selectable_ids(archive),
        best_id=best.id if best else None,
        call_id=f"i{iteration}.selector",
    )
    notes = [f"iteration {iteration}: selector fell back to the best candidate"] if call.fell_back else []
    return {
        "iteration": iteration,
        "iteration_started_at": time.time(),
        "selection": selection.model_dump(),
        "llm_calls": [call],
        "notes": notes,
    }


def hypothesizer(state: ScientistState, runtime: Runtime[RunContext]) -> Command[Literal["experiment", "record"]]:
    """Search the literature about the base's bottleneck, propose experiments, and send the chosen ones out."""
    ctx = runtime.context
    iteration, selection = state["iteration"], state["selection"]
    archive = lab.open_archive(state["run_dir"])
    problem = load_problem(state["problem"])
    brief = lab.problem_brief(problem, state["device"], archive)
    base = CandidateBrief.from_record(archive.get(selection["base_id"]))
    passages, search_note = _search_literature(retrieval_queries(brief, base), ctx)
    model = lab.model_settings(ctx).make("hypothesizer")
    try:
        hypotheses, call = propose_experiments(
            model,
            problem=brief,
            base=base,
            notebook=notebook_summary(archive),
            passages=passages,
            n_experiments=ctx.experiments_per_iteration + 1,
            n_chosen=ctx.experiments_per_iteration,
            call_id=f"i{iteration}.hypothesizer",
        )
    except MalformedAnswer as error:
        note = f"iteration {iteration}: no experiments ({error})"
        notes = [search_note, note] if search_note else [note]
        return Command(goto="record", update={"notes": notes, "llm_calls": lab.calls_of(error)})
    gpus = lab.gpu_slots() if state["device"] == "cuda" else 0
    tasks = [
        ExperimentTask(
            iteration=iteration,
            slot=slot,
            base_id=selection["base_id"],
            reference_id=selection.get("reference_id"),
            experiment=experiment.model_dump(),
            problem=state["problem"],
            device=device_for_slot(state["device"], slot, gpus),
            run_dir=state["run_dir"],
        )
        for slot, experiment in enumerate(hypotheses.chosen_experiments[: ctx.experiments_per_iteration])
    ]
    sends = [Send("experiment", {"task": task}) for task in tasks]
    update = {"tasks": tasks, "llm_calls": [call]} | ({"notes": [search_note]} if search_note else {})
    return Command(goto=sends, update=update)


def _search_literature(queries: list[str], ctx: RunContext) -> tuple[list[retrieval.Passage], str | None]:
    """Passages for all queries, best first, each passage once; and a note when the index could not be used.

    A broken or unbuildable index costs the hypothesizer its citations, not the run its progress.
    """
    found: dict[tuple[str, str], retrieval.Passage] = {}
    try:
        for query in queries:
            for passage in retrieval.search(query, k=ctx.passages_per_query, mode=ctx.retrieval):
                found.setdefault((passage.source, passage.text), passage)
    except Exception as error:  # chromadb, OS and model-loading errors all end up here
        note = f"literature search failed, hypothesizing without passages: {type(error).__name__}: {error}"
        print(note.splitlines()[0], file=sys.stderr)
        return [], note.splitlines()[0]
    return sorted(found.values(), key=lambda passage: -passage.score), None


def record(state: ScientistState, runtime: Runtime[RunContext]) -> Command[Literal["selector", "report"]]:
    """Archive the iteration's candidates (once, even when resumed) and decide whether budget remains."""
    archive = lab.open_archive(state["run_dir"])
    done = {(r.iteration, r.slot) for r in archive.records if r.experiment is not None}
    for outcome in sorted(state.get("outcomes", []), key=lambda o: o.slot):
        if (outcome.iteration, outcome.slot) in done:
            continue
        archive.add(
            CandidateRecord(
                id=archive.next_id(),
                parent_id=outcome.base_id,
                reference_id=outcome.reference_id,
                iteration=outcome.iteration,
                slot=outcome.slot,
                source=outcome.source,
                experiment=outcome.experiment,
                status=outcome.status,
                debug_attempts=outcome.debug_attempts,
                note=outcome.note,
                **quarantine.record_fields(outcome.eval, outcome.strict_eval),
            )
        )
    elapsed = state.get("elapsed_s", 0.0) + time.time() - state.get("iteration_started_at", time.time())
    tokens, dollars = lab.spent(state.get("llm_calls", []))
    reason = stop_reason(
        runtime.context, iteration=state.get("iteration", 0), tokens=tokens, dollars=dollars, elapsed_s=elapsed
    )
    best = lab.best_kernel(archive)
    update = {
        "outcomes": None,
        "elapsed_s": elapsed,
        "stop_reason": reason,
        "best_id": best.id if best else None,
        "best_speedup": best.speedup if best else None,
    }
    return Command(goto="report" if reason else "selector", update=update)
