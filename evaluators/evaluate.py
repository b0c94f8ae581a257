"""evaluate(): the cascade of static checks, build, correctness and timing, each stage bounded by a timeout.

The reference and the candidate run in separate worker processes started together. The candidate leaves its
outputs as files; the reference worker, which never runs candidate code, compares them on its own device and
reports per-trial verdicts. Both go on to timing only when the candidate is correct; then the reference checks
the outputs the candidate produced while being timed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from contextlib import ExitStack
from dataclasses import dataclass

from evaluators import verdicts
from evaluators.channel import ChannelError
from evaluators.handoff import handoff_dir
from evaluators.options import EvalOptions
from evaluators.result import EvalResult
from evaluators.sandbox import Worker, WorkerFailure
from evaluators.static import check_source
from evaluators.toolchain import device_kind, resolve_device, toolchain_key
from kernels.problem import Problem, ProblemError, load_problem

# The options a worker reads from its job: timing budgets, tolerances, and the largest output file it may read.
WORKER_OPTIONS = {
    "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps", "atol", "rtol", "max_result_mb",
}  # fmt: skip


@dataclass
class WorkerReport:
    """One report from a worker: an event and its JSON metadata (no tensors ever cross the channel)."""

    event: str
    meta: dict

    @classmethod
    def read(cls, blob: bytes) -> WorkerReport:
        """Decode a report; anything but {"event": str, "meta": dict} broke the protocol."""
        try:
            data = json.loads(blob)
        except (ValueError, RecursionError) as exc:
            raise ChannelError(f"a report that is not JSON ({type(exc).__name__})") from None
        if not (isinstance(data, dict) and isinstance(data.get("event"), str) and isinstance(data.get("meta"), dict)):
            raise ChannelError("a report without an event and its metadata")
        return cls(data["event"], data["meta"])


def evaluate(
    problem: Problem | str, candidate_source: str, device: str = "auto", options: EvalOptions | None = None
) -> EvalResult:
    """Evaluate one candidate source against a problem; raises ProblemError/ValueError only for bad input."""
    options = options or EvalOptions()
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    device = resolve_device(device)
    started = time.perf_counter()
    result = EvalResult(
        status="correct",
        device=device,
        problem=problem.name,
        config=problem.config_name(device),
        source_hash=hashlib.sha256(candidate_source.encode()).hexdigest()[:16],
    )
    static = check_source(candidate_source)
    result.stages["static"] = time.perf_counter() - started
    for code, text in static.flags:
        result.flag(code, text)
    if static.error:
        return verdicts.finish(result, "compile_error", static.error, "")
    with ExitStack() as cleanup:
        outcome = _run_workers(problem, candidate_source, device, options, result, cleanup)
    outcome.stages["total"] = time.perf_counter() - started
    return outcome


def _run_workers(problem, source, device, options, result, cleanup) -> EvalResult:
    handoff = handoff_dir()
    cleanup.callback(shutil.rmtree, handoff, ignore_errors=True)
    job = {
        "device": device_kind(device),
        "problem_path": str(problem.path),
        "config": result.config,
        "seed": options.seed,
        "trials": options.trials,
        "cache_dir": str(options.cache_dir),
        "handoff_dir": str(handoff),
        **options.model_dump(include=WORKER_OPTIONS),
    }
    toolchain = toolchain_key()
    candidate = Worker("candidate", job | {"role": "candidate"}, source, options, toolchain, device)
    cleanup.callback(candidate.close)
    reference = Worker("reference", job | {"role": "reference"}, None, options, toolchain, device)
    cleanup.callback(reference.close)

    outputs = _candidate_report(candidate, result, "outputs")
    if isinstance(outputs, EvalResult):
        return outputs
    expected = _reference_report(reference, "ready")
    reference.tell(b"c")
    checked = _reference_report(reference, "comparison")
    result.stages["compare"] = reference.stage_seconds.get("compare", 0.0)
    if not verdicts.check_correctness(result, outputs, expected, checked, options, candidate.output_text()):
        return result
    if not options.timing:
        return verdicts.finish(result, "correct", "correct (not timed)", "")

    reference.tell(b"g")
    candidate.tell(b"g")
    reference_timing = _reference_report(reference, "timing")
    timing = _candidate_report(candidate, result, "timing")
    if isinstance(timing, EvalResult):
        return timing
    reference.tell(b"c")
    timed = _reference_report(reference, "comparison")
    result.stages["compare_timed"] = reference.stage_seconds.get("compare_timed", 0.0)
    return verdicts.apply_timing(
        result, timing, candidate.marks, reference_timing, reference.marks, expected, timed, options
    )


def _candidate_report(candidate: Worker, result: EvalResult, event: str) -> WorkerReport | EvalResult:
    """The candidate's next report, or the finished verdict when it failed, crashed or broke the protocol."""
    try:
        report = WorkerReport.read(candidate.next_blob())
        if report.event not in (event, "error"):
            raise ChannelError(f"{report.event!r} where {event!r} was expected")
        if report.event == "outputs" and not isinstance(report.meta.get("modified_inputs"), dict):
            raise ChannelError("outputs without the in-place check")
    except WorkerFailure as failure:
        return verdicts.from_failure(result, failure, candidate.stage_seconds)
    except ChannelError as exc:
        failure = WorkerFailure("crash", candidate.stage, f"the candidate process sent {exc}", candidate.output_text())
        candidate.kill()
        return verdicts.from_failure(result, failure, candidate.stage_seconds)
    result.stages.update(candidate.stage_seconds)
    if report.event == "error":
        return verdicts.from_error(result, report.meta, candidate.output_text(settle_s=5))
    return report


def _reference_report(reference: Worker, event: str) -> WorkerReport:
    """The reference's next report; any failure there is the problem's, not the candidate's."""
    try:
        got = WorkerReport.read(reference.next_blob())
    except WorkerFailure as failure:
        tail = failure.output.strip().splitlines()[-1:] or [""]
        raise ProblemError(f"the reference failed: {failure.message}: {tail[0][:300]}") from None
    if got.event == "error":
        raise ProblemError(f"the reference failed in {got.meta['stage']}: {got.meta['message'].splitlines()[0]}")
    if got.event != event:
        raise ProblemError(f"the reference sent {got.event!r} where {event!r} was expected")
    return got
