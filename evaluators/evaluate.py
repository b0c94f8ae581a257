"""evaluate(): the cascade of static checks, build, correctness and timing, each stage bounded by a timeout.

The reference and the candidate run in separate worker processes started together; the parent compares their
outputs (read with weights_only=True) and lets both go on to timing only when the candidate is correct.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from contextlib import ExitStack
from dataclasses import dataclass

import torch

from evaluators import verdicts
from evaluators.options import EvalOptions
from evaluators.result import EvalResult
from evaluators.sandbox import Worker, WorkerFailure
from evaluators.static import check_source
from evaluators.toolchain import resolve_device, toolchain_key
from kernels.problem import Problem, ProblemError, load_problem


@dataclass
class WorkerResult:
    """One blob from a worker, decoded: event, metadata and tensors."""

    event: str
    meta: dict
    tensors: dict[str, torch.Tensor]

    @classmethod
    def read(cls, blob: bytes) -> WorkerResult:
        """Decode without unpickling anything but plain containers and tensors."""
        data = torch.load(io.BytesIO(blob), weights_only=True)
        return cls(str(data["event"]), json.loads(data["meta"]), dict(data["tensors"]))


# Reference outputs by (problem, config, device, seed, trials, torch): reused by correctness-only runs.
_REFERENCE_CACHE: dict[tuple, WorkerResult] = {}


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
    result.suspicious.extend(static.suspicious)
    if static.error:
        return verdicts.finish(result, "compile_error", static.error, "")
    with ExitStack() as cleanup:
        outcome = _run_workers(problem, candidate_source, device, options, result, cleanup)
    outcome.stages["total"] = time.perf_counter() - started
    return outcome


def _run_workers(problem, source, device, options, result, cleanup) -> EvalResult:
    job = {
        "device": device,
        "problem_path": str(problem.path),
        "config": result.config,
        "seed": options.seed,
        "trials": options.trials,
        "cache_dir": str(options.cache_dir),
        **options.model_dump(include={"flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps"}),
    }
    toolchain = toolchain_key()
    cache_key = (problem.digest, result.config, device, options.seed, options.trials, torch.__version__)
    cached = None if options.timing else _REFERENCE_CACHE.get(cache_key)
    candidate = Worker("candidate", job | {"role": "candidate"}, source, options, toolchain)
    cleanup.callback(candidate.close)
    reference = None
    if cached is None:
        reference = Worker("reference", job | {"role": "reference"}, None, options, toolchain)
        cleanup.callback(reference.close)

    try:
        outputs = WorkerResult.read(candidate.next_blob())
    except WorkerFailure as failure:
        return verdicts.from_failure(result, failure, candidate.stage_seconds)
    result.stages.update(candidate.stage_seconds)
    if outputs.event == "error":
        return verdicts.from_error(result, outputs.meta, candidate.output_text(settle_s=5))
    expected = cached or _reference_outputs(reference)
    _REFERENCE_CACHE[cache_key] = expected
    if not verdicts.check_correctness(result, outputs, expected, options, candidate.output_text()):
        return result
    if not options.timing:
        return verdicts.finish(result, "correct", "correct (not timed)", "")

    reference.go()
    candidate.go()
    reference_timing = _reference_timing(reference)
    try:
        timing = WorkerResult.read(candidate.next_blob())
    except WorkerFailure as failure:
        return verdicts.from_failure(result, failure, candidate.stage_seconds)
    result.stages.update(candidate.stage_seconds)
    if timing.event == "error":
        return verdicts.from_error(result, timing.meta, candidate.output_text(settle_s=5))
    return verdicts.apply_timing(result, timing, candidate.marks, reference_timing, reference.marks, expected, options)


def _reference_outputs(reference: Worker) -> WorkerResult:
    return _reference_blob(reference, "outputs")


def _reference_timing(reference: Worker) -> WorkerResult:
    return _reference_blob(reference, "timing")


def _reference_blob(reference: Worker, event: str) -> WorkerResult:
    """The reference's next result; any failure there is the problem's, not the candidate's."""
    try:
        got = WorkerResult.read(reference.next_blob())
    except WorkerFailure as failure:
        tail = failure.output.strip().splitlines()[-1:] or [""]
        raise ProblemError(f"the reference failed: {failure.message}: {tail[0][:300]}") from None
    if got.event == "error":
        raise ProblemError(f"the reference failed in {got.meta['stage']}: {got.meta['message'].splitlines()[0]}")
    if got.event != event:
        raise ProblemError(f"the reference sent {got.event!r} where {event!r} was expected")
    return got
