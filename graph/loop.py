"""The main loop's nodes: setup, selector, hypothesizer (the designer) and record; experiments run in graph.experiment.

The strategy (graph.strategies) decides who picks the base (the selector, or the tree's epsilon-greedy rule, or
sampling's fixed start) and whether the designer runs (not for sampling). The designer sees the base and the
selector's reference side by side, writes for the run's target (`--target`, else the device that evaluates), and
searches the target's own literature.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

import retrieval
from agents.briefs import CandidateBrief
from agents.choice import choose_plans
from agents.errors import MalformedAnswer
from agents.findings import finding_for
from agents.hypothesizer import propose_avenues, propose_plans, retrieval_queries
from agents.notebook import archive_summary, lineage_line, notebook_summary, selectable_ids
from agents.population import diversity, line_of, shape_speedups
from agents.schemas import Selection
from agents.selector import select_parent
from agents.targets import Target
from evaluators.profiling.profile import profile_summary
from graph import lab, quarantine, strategies
from graph.context import RunContext
from graph.routing import device_for_slot, stop_reason
from graph.state import ExperimentTask, ScientistState
from kernels.archive import Archive, CandidateRecord
from kernels.gpumode import REFERENCE_SUBMISSION
from kernels.labbook import DesignRecord, Finding, LabBook
from kernels.problem import load_problem
from kernels.problem_types import Problem

NO_PROFILE = "Profiling is switched off for this run (--no-profile)."
# The literature's list of documents: where to read, not what they say; its lists of names outrank notes in BM25.
BIBLIOGRAPHY = "SOURCES.md"


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
    reason = _unfit(archive, device) or stop_reason(
        ctx, iteration=0, tokens=0, dollars=0.0, elapsed_s=0.0, best_fraction=lab.roofline_fraction(best)
    )
    return Command(goto="report" if reason else "selector", update={**update, "stop_reason": reason})


def _unfit(archive: Archive, device: str) -> str | None:
    """Why no candidate can be judged here: the starting evaluation found the problem too large for the device."""
    why = lab.does_not_fit(archive)
    return None if why is None else f"the problem cannot be run on {device}: {why}"


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
    control = quarantine.control_run(ctx, problem, device, result, strict)
    archive.add(
        CandidateRecord(
            id=archive.next_id(),
            parent_id=reference.id,
            source=source,
            status="seed" if measured else result["status"],
            note=f"bundled seed kernels/seeds/{problem.name}.py",
            **quarantine.record_fields(result, strict, control),
        )
    )


def selector(state: ScientistState, runtime: Runtime[RunContext]) -> dict:
    """Pick the base (and a contrasting reference): the selector for the scientist, the strategy's rule otherwise."""
    ctx = runtime.context
    iteration = state.get("iteration", 0) + 1
    archive = lab.open_archive(state["run_dir"])
    update = {"iteration": iteration, "iteration_started_at": time.time()}
    if ctx.strategy == "sampling":
        return update | {"selection": strategies.sampling_selection(archive).model_dump()}
    if ctx.strategy == "tree":
        chosen = strategies.tree_selection(archive, iteration, ctx.tree_epsilon, Path(state["run_dir"]).name)
        return update | {"selection": chosen.model_dump()}
    model = lab.model_settings(ctx, state["run_dir"]).make("selector")
    best = lab.best_kernel(archive)
    ids = selectable_ids(archive)
    selection, call = select_parent(
        model,
        archive_summary=archive_summary(archive),
        findings=notebook_summary(archive, LabBook(state["run_dir"]).findings),
        candidate_ids=ids,
        best_id=best.id if best and best.id in ids else None,
        lines=line_of(archive),
        shapes={candidate_id: shape_speedups(archive.get(candidate_id)) for candidate_id in ids},
        call_id=f"i{iteration}.selector",
    )
    notes = [f"iteration {iteration}: selector fell back to the best candidate"] if call.fell_back else []
    return update | {"selection": selection.model_dump(), "llm_calls": [call], "notes": notes}


def hypothesizer(state: ScientistState, runtime: Runtime[RunContext]) -> Command[Literal["experiment", "record"]]:
    """Design the iteration's experiments (avenues, plans, the paper's choice) and send the chosen ones out."""
    ctx = runtime.context
    iteration, selection = state["iteration"], state["selection"]
    archive = lab.open_archive(state["run_dir"])
    book = LabBook(state["run_dir"])
    target = lab.run_target(ctx, state["device"], archive)
    design = DesignRecord(
        iteration=iteration,
        strategy=ctx.strategy,
        base_id=selection["base_id"],
        reference_id=selection.get("reference_id"),
        contrast=selection.get("contrast"),
        rationale=selection.get("rationale", ""),
        target=target.name,
        diversity=diversity(archive),
    )
    if ctx.strategy == "sampling":
        plans = [strategies.SAMPLE_PLAN] * ctx.experiments_per_iteration
        book.add_design(design.model_copy(update={"chosen": [{"index": 0, "reason": "best-of-N sample"}] * len(plans)}))
        return Command(goto=_sends(state, plans, ""), update={})
    problem = load_problem(state["problem"])
    brief = lab.problem_brief(problem, state["device"], archive)
    base_record = archive.get(selection["base_id"])
    base = _brief(archive, base_record.id)
    reference = _brief(archive, selection["reference_id"]) if selection.get("reference_id") else None
    profile = profile_summary(problem, base_record.source, state["device"]) if ctx.profile else NO_PROFILE
    passages, search_note = _search_literature(retrieval_queries(brief, base, target), target, ctx)
    notes = [search_note] if search_note else []
    findings = notebook_summary(archive, book.findings)
    model = lab.model_settings(ctx, state["run_dir"]).make("hypothesizer")
    seen = {
        "problem": brief,
        "base": base,
        "reference": reference,
        "selection": Selection.model_validate(selection),
        "target": target,
        "findings": findings,
        "profile": profile,
        "passages": passages,
    }
    calls = []
    try:
        found, call = propose_avenues(
            model, **seen, n_avenues=ctx.avenues, call_id=f"i{iteration}.hypothesizer.avenues"
        )
        calls.append(call)
        avenues = found.avenues
        plans, call = propose_plans(
            model,
            **seen,
            avenues=avenues,
            lesson=found.lesson,
            n_plans=ctx.plans,
            call_id=f"i{iteration}.hypothesizer.plans",
        )
        calls.append(call)
    except MalformedAnswer as error:
        notes.append(f"iteration {iteration}: no experiments ({error})")
        return Command(goto="record", update={"notes": notes, "llm_calls": calls + lab.calls_of(error)})
    chosen = choose_plans(plans, ctx.experiments_per_iteration)
    book.add_design(
        design.model_copy(
            update={
                "lesson": found.lesson,
                "avenues": [avenue.model_dump() for avenue in avenues],
                "plans": [plan.model_dump() for plan in plans],
                "chosen": [pick.model_dump() for pick in chosen],
                "profile": profile,
            }
        )
    )
    return Command(
        goto=_sends(state, [plans[pick.index] for pick in chosen], profile),
        update={"llm_calls": calls, "notes": notes},
    )


def _sends(state: ScientistState, plans: list, profile: str) -> list[Send]:
    """One experiment per plan, spread over the GPUs, each told what its siblings implement beside it."""
    selection = state["selection"]
    gpus = lab.gpu_slots() if state["device"] == "cuda" else 0
    titles = [plan.title for plan in plans]
    return [
        Send(
            "experiment",
            {
                "task": ExperimentTask(
                    iteration=state["iteration"],
                    slot=slot,
                    base_id=selection["base_id"],
                    reference_id=selection.get("reference_id"),
                    experiment=plan.model_dump(),
                    problem=state["problem"],
                    device=device_for_slot(state["device"], slot, gpus),
                    run_dir=state["run_dir"],
                    concurrent=titles[:slot] + titles[slot + 1 :],
                    profile=profile,
                )
            },
        )
        for slot, plan in enumerate(plans)
    ]


def _brief(archive: Archive, candidate_id: str) -> CandidateBrief:
    """A candidate as the designer sees it, with its lineage."""
    return CandidateBrief.from_record(archive.get(candidate_id), lineage=lineage_line(archive, candidate_id))


def _search_literature(
    queries: list[str], target: Target, ctx: RunContext
) -> tuple[list[retrieval.Passage], str | None]:
    """Passages for all queries from the target's documents, best first, each once; a note when the index failed.

    A broken or unbuildable index costs the hypothesizer its citations, not the run its progress.
    """
    found: dict[tuple[str, str], retrieval.Passage] = {}
    filters = {"arch": list(target.arch_labels)} if target.arch_labels else None
    k = ctx.passages_per_query
    try:
        for query in queries:
            passages = retrieval.search(query, k=3 * k, filters=filters, mode=ctx.retrieval)
            notes = [p for p in passages if Path(str(p.metadata.get("path", ""))).name != BIBLIOGRAPHY]
            for passage in notes[:k]:
                found.setdefault((passage.source, passage.text), passage)
    except Exception as error:  # chromadb, OS and model-loading errors all end up here
        note = f"literature search failed, hypothesizing without passages: {type(error).__name__}: {error}"
        print(note.splitlines()[0], file=sys.stderr)
        return [], note.splitlines()[0]
    return sorted(found.values(), key=lambda passage: -passage.score), None


def record(state: ScientistState, runtime: Runtime[RunContext]) -> Command[Literal["selector", "report"]]:
    """Archive the iteration's candidates and their findings (once, even when resumed); decide whether to go on."""
    archive = lab.open_archive(state["run_dir"])
    book = LabBook(state["run_dir"])
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
                **quarantine.record_fields(outcome.eval, outcome.strict_eval, outcome.control_eval),
            )
        )
    for candidate in archive.records:
        if candidate.experiment is not None and candidate.id not in book.findings:
            parent = archive.get(candidate.parent_id) if candidate.parent_id in archive else None
            text = finding_for(candidate, parent)
            book.add_finding(Finding(candidate_id=candidate.id, iteration=candidate.iteration, text=text))
    elapsed = state.get("elapsed_s", 0.0) + time.time() - state.get("iteration_started_at", time.time())
    tokens, dollars = lab.spent(state.get("llm_calls", []))
    best = lab.best_kernel(archive)
    reason = stop_reason(
        runtime.context,
        iteration=state.get("iteration", 0),
        tokens=tokens,
        dollars=dollars,
        elapsed_s=elapsed,
        best_fraction=lab.roofline_fraction(best),
    )
    update = {
        "outcomes": None,
        "elapsed_s": elapsed,
        "stop_reason": reason,
        "best_id": best.id if best else None,
        "best_speedup": best.speedup if best else None,
    }
    return Command(goto="report" if reason else "selector", update=update)
