"""What the nodes share: the run directory, the archive, the device and target, the chat models and the briefs."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from secrets import token_hex

from agents.briefs import ProblemBrief
from agents.models import ModelSettings
from agents.population import beats
from agents.targets import Target, for_device, get_target
from agents.transcript import TRANSCRIPT_FILE
from evaluators.executors import make_executor
from evaluators.executors.local import Executor
from evaluators.judge.options import EvalOptions
from evaluators.worker.devices import visible_gpus
from graph.context import RunContext
from kernels.archive import Archive, CandidateRecord
from kernels.problem import load_problem
from kernels.problem_types import Problem

RUNS_DIR = Path("runs")
ARCHIVE_FILE = "archive.jsonl"


def new_run_id(problem: str) -> str:
    """A sortable, unique run id: problem, UTC time and a short random suffix."""
    return f"{Path(problem).stem}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{token_hex(2)}"


def open_archive(run_dir: str | Path) -> Archive:
    """The run's archive, reloaded from its JSON lines (nodes run in threads and across resumes)."""
    return Archive(Path(run_dir) / ARCHIVE_FILE)


def resolve_device(device: str) -> str:
    """'auto' becomes 'cuda' where a GPU is present, else 'cpu'; an explicit device is kept."""
    if device != "auto":
        return device
    return "cuda" if visible_gpus() else "cpu"


_executors: dict[tuple[str | None, str], Executor] = {}
_executors_lock = threading.Lock()


def executor(ctx: RunContext, device: str) -> Executor:
    """The evaluation executor for a slot's device, made once per process and kept for the run.

    Locally one executor per device (a slot's `cuda:N`, or CPU slots for the experiments of an iteration); on a
    cluster one for the whole run, whatever GPU index a slot was given. Raises ClusterError if Ray cannot be joined.
    """
    local = ctx.cluster in (None, "local")
    key = (None, device) if local else (ctx.cluster, "cluster")
    with _executors_lock:
        if key not in _executors:
            _executors[key] = make_executor(ctx.cluster, device, cpu_slots=ctx.experiments_per_iteration)
        return _executors[key]


def run_device(ctx: RunContext) -> str:
    """The run's device: `cuda` or `cpu` of this host, or what the cluster's tasks ask for (joining it now)."""
    if ctx.cluster in (None, "local"):
        return resolve_device(ctx.device)
    return executor(ctx, ctx.device).device


def evaluate(ctx: RunContext, problem: Problem | str, source: str, device: str, options=None) -> dict:
    """Submit one evaluation to the run's executor and wait for it; the EvalResult as a dict."""
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    options = options or EvalOptions(compile_baseline=ctx.compile_baseline)
    return executor(ctx, device).submit(problem, source, options).result().model_dump()


def close_executors() -> None:
    """Release the run's executors (and a Ray this process started)."""
    with _executors_lock:
        for held in _executors.values():
            held.close()
        _executors.clear()


def gpu_slots() -> int:
    """GPUs the parallel experiments spread over: each slot's evaluation runs both its workers on its `cuda:N`."""
    return len(visible_gpus())


def model_settings(ctx: RunContext, run_dir: str | Path | None = None) -> ModelSettings:
    """The per-role chat models of this run, each call written to the run's transcript, recorded when asked."""
    record_to = Path(ctx.record_cassette) if ctx.record_cassette else None
    where = run_dir or ctx.run_dir
    transcript = Path(where) / TRANSCRIPT_FILE if where else None
    return ModelSettings(
        default=ctx.model, per_role=dict(ctx.role_models), record_to=record_to, transcript_to=transcript
    )


def evaluated_on(archive: Archive, device: str) -> str:
    """The name of the device the run's evaluations ran on ("NVIDIA H100 80GB HBM3"), as the evaluator wrote it."""
    gpu = next((r.eval.get("gpu") for r in archive.records if r.eval.get("gpu")), None)
    return str(gpu).rsplit(" #", 1)[0] if gpu else device


def run_target(ctx: RunContext, device: str, archive: Archive | None = None) -> Target:
    """The architecture the kernels are for: `--target`, else the device that evaluates."""
    if ctx.target:
        return get_target(ctx.target)
    return for_device(evaluated_on(archive, device) if archive is not None else device)


def problem_brief(problem: Problem, device: str, archive: Archive) -> ProblemBrief:
    """The problem as the prompts show it, with the roofline the seed's evaluation measured."""
    measured = next((r.eval.get("roofline") for r in archive.records if r.eval.get("roofline")), None)
    return ProblemBrief(
        name=problem.name,
        doc=problem.doc,
        source=problem.source,
        device=device,
        roofline=measured,
        format=problem.format,
    )


def best_kernel(archive: Archive) -> CandidateRecord | None:
    """The fastest eligible kernel (seed or candidate): never the reference (the yardstick) nor one set aside.

    In the order they were measured, a kernel takes the lead only by a gain beyond its own noise band
    (agents/population.beats): one a fraction of a percent faster by chance is no new best and no headline.
    """
    best = None
    for record in archive.eligible():
        if record.status != "reference" and beats(record, best):
            best = record
    return best


def does_not_fit(archive: Archive) -> str | None:
    """Why the run's starting evaluation found the problem too large for its device, or None where it did not."""
    for record in archive.records[:2]:
        if record.status == "does_not_fit" or record.eval.get("status") == "does_not_fit":
            return record.eval.get("message", record.note)
    return None


def spent(llm_calls: list) -> tuple[int, float]:
    """Tokens and dollars the run's LLM calls have used so far."""
    tokens = sum(call.input_tokens + call.output_tokens for call in llm_calls)
    return tokens, sum(call.cost_usd for call in llm_calls)


def calls_of(failure: Exception) -> list:
    """The accounting a MalformedAnswer carries, so tokens spent on unusable answers still count."""
    call = getattr(failure, "call", None)
    return [call] if call is not None else []


def roofline_fraction(record: CandidateRecord | None) -> float | None:
    """A kernel's fraction of its roofline: the worst over its timed benchmark shapes, else its evaluation's."""
    if record is None:
        return None
    shapes = [s.get("roofline_fraction") for s in record.measured.get("shapes") or [] if s.get("kind") == "benchmark"]
    if shapes and all(fraction is not None for fraction in shapes):
        return min(shapes)
    return (record.measured.get("roofline") or {}).get("fraction")
