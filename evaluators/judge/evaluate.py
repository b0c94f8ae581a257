"""evaluate(): the cascade of static checks, build, correctness and timing per shape, each stage under a timeout.

A warm reference worker (reference_pool) holds the reference's outputs for every shape and trial and its timings;
a fresh candidate worker runs the candidate. The candidate leaves its outputs as files, shape by shape; the
reference, which never runs candidate code, compares them on its own device. Each benchmark shape is then timed
on fresh inputs per repetition, and the outputs of repetitions sampled after they ran are checked by the
reference on the very inputs they were given.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import time
from contextlib import ExitStack

from evaluators.judge import spares, verdicts
from evaluators.judge.channel import ChannelError
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import Worker, WorkerFailure
from evaluators.judge.reference_pool import EnvironmentFailure, reference_for
from evaluators.judge.reports import WorkerReport
from evaluators.judge.result import EvalResult
from evaluators.judge.static import check_source
from evaluators.judge.toolchain import device_kind, resolve_device, toolchain_key
from evaluators.worker.handoff import handoff_dir
from evaluators.worker.trials import trial_plan
from kernels.problem import Problem, load_problem

__all__ = ["EnvironmentFailure", "evaluate"]

# The options a worker reads from its job: timing budgets, tolerances, and the largest output file it may read.
WORKER_OPTIONS = {
    "seed", "trials", "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps", "atol", "rtol",
    "max_result_mb", "retained", "strict", "compile_baseline",
}  # fmt: skip


def evaluate(
    problem: Problem | str, candidate_source: str, device: str = "auto", options: EvalOptions | None = None
) -> EvalResult:
    """Evaluate one candidate source against a problem.

    Raises ProblemError/ValueError for bad input and EnvironmentFailure when the machine failed the reference.
    """
    options = options or EvalOptions()
    if options.strict:
        options = options.model_copy(update={"trials": max(options.trials, 5)})
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    device = resolve_device(device)
    started = time.perf_counter()
    result = EvalResult(
        status="correct",
        device=device,
        problem=problem.name,
        config=problem.config_name(device),
        source_hash=hashlib.sha256(candidate_source.encode()).hexdigest()[:16],
        strict=options.strict,
    )
    static = check_source(candidate_source, "custom_kernel" if problem.format == "gpumode" else "ModelNew")
    result.stages["static"] = time.perf_counter() - started
    for code, text in static.flags:
        result.flag(code, text)
    if static.error:
        return verdicts.finish(result, "compile_error", static.error, "")
    shapes = problem.shapes(device)
    job = {
        "device": device_kind(device),
        "problem_path": str(problem.path),
        "shapes": [shape.to_json() for shape in shapes],
        "cache_dir": str(options.cache_dir),
        **options.model_dump(include=WORKER_OPTIONS),
    }
    toolchain = toolchain_key()
    # Claimed before the reference is ready: the spare that replaces it starts now and has this whole
    # evaluation to get ready for the next one.
    candidate = spares.claim("candidate", options, toolchain, device)
    try:
        reference = reference_for(problem, device, options, job | {"nonce": 0})
        result.stages["reference"] = time.perf_counter() - started - result.stages["static"]
        memory = reference.ready["memory"]
        if not memory["fits"]:
            return verdicts.finish(result, "does_not_fit", f"does not fit: {memory['reason']}", "")
        with ExitStack() as cleanup:
            outcome = _judge(problem, shapes, candidate_source, candidate, options, result, reference, job, cleanup)
    finally:
        if not candidate.assigned:
            spares.give_back(candidate, options, toolchain, device)
    outcome.stages["total"] = time.perf_counter() - started
    return outcome


def _judge(problem, shapes, source, candidate, options, result, reference, job, cleanup) -> EvalResult:
    memory, meta = reference.ready["memory"], reference.ready
    largest_output = max((s["output_bytes"] for s in memory.get("sizes", [])), default=0)
    handoff = handoff_dir(options.trials * largest_output)
    cleanup.callback(shutil.rmtree, handoff, ignore_errors=True)
    job = job | {"role": "candidate", "memory": memory, "handoff_dir": str(handoff), "nonce": random.getrandbits(30)}
    candidate.assign(job, source)
    cleanup.callback(candidate.close)
    plan = trial_plan(options.seed, options.trials)
    for i, shape in enumerate(shapes):
        outputs = _candidate_report(candidate, result, "outputs")
        if isinstance(outputs, EvalResult):
            return outputs
        checked = reference.request({"cmd": "compare", "shape": i, "dir": str(handoff)}, "comparison")
        _remove(handoff, f"s{i}-trial*")
        if not verdicts.check_shape(
            result, shape, outputs, checked, plan, meta["dist_supported"], candidate.output_text()
        ):
            return result
        if i + 1 < len(shapes):
            candidate.tell({"cmd": "continue"})
    result.stages["correctness"] = candidate.stage_seconds.get("correctness", 0.0)
    if not options.timing:
        return verdicts.finish(result, "correct", f"correct on {len(shapes)} shape(s) (not timed)", "")
    for i, shape in enumerate(shapes):
        if shape.kind != "benchmark":
            continue
        # The candidate's held outputs go back to the driver before the reference times: its timing sets need the room.
        candidate.tell({"cmd": "release"})
        released = _candidate_report(candidate, result, "released")
        if isinstance(released, EvalResult):
            return released
        reference_timing = reference.timing(i)
        candidate.marks.clear()
        candidate.tell({"cmd": "time", "shape": i})
        timing = _candidate_report(candidate, result, "timing")
        if isinstance(timing, EvalResult):
            return timing
        marks = dict(candidate.marks)
        checked = reference.request(
            {"cmd": "check_reps", "shape": i, "dir": str(handoff), "reps": timing.meta["kept"]}, "comparison"
        )
        _remove(handoff, f"s{i}-rep*")
        if not verdicts.apply_shape_timing(result, i, timing, marks, reference_timing, checked, meta, options):
            return result
    result.stages["timing"] = candidate.stage_seconds.get("timing", 0.0)
    return verdicts.summarize(result, options)


def _remove(directory, pattern: str) -> None:
    for path in directory.glob(pattern):
        path.unlink(missing_ok=True)


def _candidate_report(candidate: Worker, result: EvalResult, event: str) -> WorkerReport | EvalResult:
    """The candidate's next report, or the finished verdict when it failed, crashed or broke the protocol."""
    try:
        report = WorkerReport.read(candidate.next_blob())
        if report.event not in (event, "error"):
            raise ChannelError(f"{report.event!r} where {event!r} was expected")
        if report.event == "outputs" and not isinstance(report.meta.get("modified_inputs"), dict):
            raise ChannelError("outputs without the in-place check")
        if report.event == "timing" and not _valid_kept(report.meta.get("kept")):
            raise ChannelError("timing without the kept repetitions")
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


def _valid_kept(kept) -> bool:
    """The kept repetitions are [[rep, seed], ...] of plain ints, at least one: the candidate's process sends them."""
    return (
        isinstance(kept, list)
        and len(kept) > 0
        and all(isinstance(k, list) and len(k) == 2 and all(type(v) is int for v in k) for k in kept)
    )
