"""evaluate(): the cascade of static checks, build, correctness and timing per shape, each stage under a timeout.

A warm reference worker (reference_pool) holds the reference's outputs for every shape and trial and its timings;
a fresh candidate worker runs the candidate, one command at a time. The candidate hands its outputs over in sealed
memory files (of tensors, or of device handles), shape by shape, and names their descriptors in its reply; the
reference, which never runs candidate code, opens them through the candidate's process and compares them on its own
device.
Each benchmark shape is then timed on inputs drawn from a nonce the parent reveals with the command; the parent's
own clock around that command bounds what the candidate's timer may claim (judge/wall.py), and every timed
repetition's output is handed over with its block's reply; the parent then picks a few of each block's, which the
reference checks element by element on the very inputs they were given, while the candidate's processes are stopped
(judge/timing_plan.py).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from contextlib import ExitStack

from evaluators.judge import device_room, problem_files, process, spares, timing_plan, verdicts, wall
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import Reply, Worker, WorkerFailure
from evaluators.judge.reference_pool import (
    EnvironmentFailure,
    NoRoomToTime,
    ReferenceOutOfMemory,
    discard,
    reference_for,
    release,
)
from evaluators.judge.result import EvalResult
from evaluators.judge.static import check_source
from evaluators.judge.toolchain import device_kind, resolve_device, toolchain_key
from evaluators.worker.device_lock import LockTimeout, device_key, device_lock, host_lock
from evaluators.worker.trial_seeds import trial_plan
from kernels.bundle import pack_problem
from kernels.problem import load_problem
from kernels.problem_types import Problem

__all__ = ["EnvironmentFailure", "evaluate"]

LOCK_FREED_S = 2.0  # seconds a killed candidate's timing lock is given to come free (its files closed as it ends)

# The options a worker reads from its job: timing budgets, tolerances, and the largest output file it may read.
WORKER_OPTIONS = {
    "seed", "trials", "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps", "atol", "rtol",
    "max_result_mb", "retained", "strict", "compile_baseline", "pin_timing",
}  # fmt: skip


def evaluate(
    problem: Problem | str, candidate_source: str, device: str = "auto", options: EvalOptions | None = None
) -> EvalResult:
    """Evaluate one candidate source against a problem.

    Raises ProblemError/ValueError for bad input, and EnvironmentFailure where no verdict can be drawn: the machine
    failed the reference, the candidate's worker did not start, or the device's timing lock was kept past
    `lock_timeout_s`.
    """
    options = options or EvalOptions()
    if options.strict:
        options = options.model_copy(update={"trials": max(options.trials, 5)})
    problem = problem if isinstance(problem, Problem) else load_problem(problem)
    device = resolve_device(device)
    started = time.perf_counter()
    # Drawn here, told to the candidate only with each shape's trials: no candidate can be written for its inputs.
    trial_seed = options.trial_seed if options.trial_seed is not None else secrets.randbits(31)
    result = EvalResult(
        status="correct",
        device=device,
        problem=problem.name,
        config=problem.config_name(device),
        source_hash=hashlib.sha256(candidate_source.encode()).hexdigest()[:16],
        strict=options.strict,
        trial_seed=trial_seed,
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
        # The problem as the parent loaded it: a worker never reads the user's files, which a candidate can rewrite.
        "problem": pack_problem(problem),
        "shapes": [shape.to_json() for shape in shapes],
        "cache_dir": str(options.cache_dir),
        **options.model_dump(include=WORKER_OPTIONS),
    }
    toolchain = toolchain_key()
    # The candidate can rewrite the problem's files for whatever loads them next: they are read again once its
    # processes are killed, and put back where they changed (judge/problem_files.py).
    watched = problem_files.watch(problem, job["problem"])
    try:
        outcome = _attempt(problem, shapes, candidate_source, device, options, result, job, toolchain, overlap=True)
    except Contended:
        # The reference or the candidate ran out of device memory while both worked at once: neither verdict is
        # the problem's or the candidate's. Both again, with a fresh reference, the candidate only once it is done.
        outcome = _attempt(problem, shapes, candidate_source, device, options, result, job, toolchain, overlap=False)
    finally:
        changed = problem_files.release(watched)
    for code, text in changed:
        outcome.flag(code, text)
    outcome.stages["total"] = time.perf_counter() - started
    return outcome


class Stopped(Exception):
    """The candidate failed, crashed or broke the protocol: `result` holds the finished verdict."""

    def __init__(self, result: EvalResult):
        super().__init__(result.message)
        self.result = result


class Contended(Exception):
    """Device memory ran out while the candidate built beside the reference's planning: no verdict can be drawn."""


class CandidateOutOfMemory(Exception):
    """The candidate's process said it ran out of device memory at `shape`, once the reference was done.

    Whose shortage it was is weighed by the reference's reading of the device (judge/device_room.py), not by the report.
    """

    reading = None  # no reading found the room short: the candidate ran out on its own

    def __init__(self, report: dict, shape: int):
        said = report.get("message")
        self.said = said.splitlines()[0] if isinstance(said, str) and said.strip() else None  # its words, one line
        super().__init__(self.said)
        self.shape = shape


def _attempt(problem, shapes, source, device, options, result, job, toolchain, overlap: bool) -> EvalResult:
    """One try at the evaluation; with `overlap`, the candidate may build while a new reference plans."""
    process.wait_for_dismissed(device)  # an earlier evaluation's candidate gives this device's memory back first
    # Claimed before the reference is ready: the spare that replaces it starts now and has this whole
    # evaluation to get ready for the next one.
    candidate = spares.claim("candidate", options, toolchain, device)
    waited = time.perf_counter()
    try:
        reference = reference_for(problem, shapes, device, options, job | {"trial_seed": result.trial_seed})
        result.stages["reference"] = result.stages.get("reference", 0.0) + time.perf_counter() - waited
        result.reference_warm = reference.served > 1
        with ExitStack() as cleanup:
            cleanup.callback(release, reference)
            together = overlap and reference.overlap
            if not together:
                _waited(lambda: reference.ready, reference, result, False)
            try:
                return _judge(problem, shapes, source, candidate, options, result, reference, job, together, cleanup)
            except Stopped as stopped:
                return stopped.result
            except (NoRoomToTime, CandidateOutOfMemory) as short:  # the reference and the device no longer held
                name = shapes[short.shape].name
                return device_room.shortage(result, candidate, reference, short.shape, name, short.reading, short.said)
            except Contended:
                cleanup.callback(discard, reference)
                raise
            except ReferenceOutOfMemory as exc:
                # Once its outputs are kept, the reference works in the room its plan left beside the candidate:
                # running out there means the candidate held more. Its verdict, not a machine failure that would
                # end a graph run; the reference is replaced for the next candidate.
                candidate.kill()
                cleanup.callback(discard, reference)
                return verdicts.finish(result, "runtime_error", f"out of memory beside the candidate: {exc}", "")
    finally:
        if not candidate.assigned:
            spares.give_back(candidate, options, toolchain, device)


def _judge(problem, shapes, source, candidate, options, result, reference, job, together, cleanup) -> EvalResult:
    cleanup.callback(candidate.dismiss)
    # Where memory is planned, the candidate running out of it is weighed (CandidateOutOfMemory); while the reference
    # may still be planning beside it, it is nobody's verdict (Contended).
    weighed = "weighed" if reference.memory_planned else None
    ask = _Asker(candidate, result, out_of_memory="contended" if together else weighed)

    def first_build() -> None:
        ask.send(lambda: candidate.assign(job | {"role": "candidate"}, source, "build"))
        ask({"cmd": "build", "shape": 0}, "built", "build")

    if together:
        first_build()  # while the reference plans
    memory = _waited(lambda: reference.memory, reference, result, together)
    if not memory["fits"]:
        # Decided only while the candidate has no job: nothing it holds is in the reading. Beside a building
        # candidate, both again one after the other. Alone, the harness's idle workers on the device end first.
        if together:
            raise Contended()
        if device_room.make_room(result.device):
            memory = _waited(reference.replan, reference, result, together)
        if not memory["fits"]:
            return verdicts.finish(result, "does_not_fit", f"does not fit: {memory['reason']}", "")
    if not together:
        first_build()  # a problem that does not fit never runs the candidate
    ask({"cmd": "plan", "memory": memory}, "planned", "build")
    plan = trial_plan(result.trial_seed, options.trials)
    shares = []
    for i, shape in enumerate(shapes):
        if i:
            ask({"cmd": "build", "shape": i}, "built", "build")
        with host_lock(options.cache_dir):  # its first calls of its kernels: never beside another GPU's timing
            outputs = ask({"cmd": "trials", "shape": i, "seed": result.trial_seed}, "outputs", "correctness")
        if not isinstance(outputs.meta.get("modified_inputs"), dict):
            raise Stopped(_broken(candidate, result, "outputs without the in-place check"))
        shares.append(outputs.meta.get("kernel_share"))  # where its profiled call's device time went
        meta = _waited(lambda: reference.ready, reference, result, together)
        ask.out_of_memory = weighed  # the reference is done: from here the plan's room is the candidate's
        handed = handed_over(candidate, outputs, options.trials)
        checked = reference.request({"cmd": "compare", "shape": i, "seed": result.trial_seed, **handed}, "comparison")
        if not verdicts.check_shape(
            result, shape, outputs, checked, plan, meta["dist_supported"], candidate.output_text()
        ):
            return result
    verdicts.judge_evidence(result, shares)
    if not options.timing:
        return verdicts.finish(result, "correct", f"correct on {len(shapes)} shape(s) (not timed)", "")
    timing_started = time.perf_counter()
    try:
        return _timed_shapes(ask, reference, shapes, memory, meta, result, options)
    finally:
        # The parent's clock over both sides' timing, the pauses, the probes and the reference's check of every
        # timed output. Counting the candidate's own commands alone left a second or more of `total` in no stage.
        result.stages["timing"] = time.perf_counter() - timing_started


def _timed_shapes(ask, reference, shapes, memory: dict, meta: dict, result: EvalResult, options):
    """Every benchmark shape timed side by side and its timed outputs checked; the verdict."""
    candidate = ask.candidate
    for i, shape in enumerate(shapes):
        if shape.kind != "benchmark":
            continue
        # The candidate's held outputs and cached blocks go back to the device before the two are timed: the timing
        # is laid out on the memory free then.
        ask({"cmd": "release"}, "released", "timing")
        try:
            reference_timing, timing = _timed(ask, reference, i, options)
            waited = timing.lock_wait_s
            reps_for = timing_plan.honest_reps(result.device, options)
            if (
                timing.mismatch is None
                and device_kind(result.device) == "cuda"
                and wall.judge_timing(timing, reference_timing, reps_for, "cuda").disputed
            ):
                # A disputed timing is measured again, the reference's with it: a passing episode's noise passes,
                # a forger's timer says the same twice.
                reference_timing, timing = _timed(ask, reference, i, options)
                waited += timing.lock_wait_s
        except timing_plan.DeviceBusy as exc:
            # Work outlasting the reference's wait is the candidate's where it ends with the candidate's processes:
            # nothing honest runs on the device once its command has replied. Otherwise not judged, as above.
            if not _left_by(candidate, reference, i):
                raise EnvironmentFailure(f"not judged: {exc}, and still once the candidate's processes ended") from None
            why = f"{exc}: work the candidate left on the device after its command, gone once its processes ended"
            raise Stopped(verdicts.finish(result, "runtime_error", f"runtime_error: {why}", "")) from None
        except LockTimeout as exc:
            # Any process of the user can keep the lock, another evaluation's candidate included: the wait running
            # out is this candidate's verdict only where the lock comes free once its own processes are ended.
            # Otherwise it is not judged, and a batch or a resumed run judges it again.
            if not _kept_by(candidate, options, result.device):
                raise EnvironmentFailure(f"not judged: {exc}") from None
            verdict = verdicts.finish(result, "timeout", f"timeout: {exc}, by the candidate's own process", "")
            raise Stopped(verdict) from None
        result.stages["timing_lock_wait"] = result.stages.get("timing_lock_wait", 0.0) + waited
        result.stages["device_drain_wait"] = result.stages.get("device_drain_wait", 0.0) + timing.drained_ms / 1e3
        if not verdicts.apply_shape_timing(result, i, timing, reference_timing, meta, options):
            return result
    return verdicts.summarize(result, options)


def _kept_by(candidate: Worker, options: EvalOptions, device: str) -> bool:
    """Whether the device's timing lock comes free once the candidate's processes are killed: then they kept it."""
    candidate.kill()
    try:
        with device_lock(options.cache_dir, device_key(device), LOCK_FREED_S):
            return True
    except LockTimeout:
        return False


def _left_by(candidate: Worker, reference, shape: int) -> bool:
    """Whether the device goes idle once the candidate's processes are killed: then the work was theirs."""
    candidate.kill()
    command = {"cmd": "drain", "shape": shape, "mark_ms": None, "quiet_since": time.monotonic()}
    return reference.request(command, "drained", "timing").meta.get("idle") is True


def _waited(get, reference, result: EvalResult, together: bool):
    """The reference's plan or outputs (it began as the candidate did); the wait counts as the reference's stage.

    Its running out of device memory while the candidate built beside it is Contended, not the machine's failure.
    """
    waited = time.perf_counter()
    try:
        return get()
    except ReferenceOutOfMemory:
        if together:
            raise Contended() from None
        raise
    finally:
        result.stages["reference"] = result.stages.get("reference", 0.0) + time.perf_counter() - waited


def _timed(ask, reference, shape: int, options: EvalOptions):
    """(the reference's timing, the candidate's) at one shape; a malformed candidate reply breaks the protocol.

    Raises NoRoomToTime where the device has too little memory free even once the harness's idle workers ended.
    """
    reference_timing, timing = reference.time_beside(
        shape,
        lambda command, event: ask(command, event, "timing"),
        ask.candidate.paused,
        lambda: device_room.make_room(ask.result.device),
        lambda reply, count: handed_over(ask.candidate, reply, count),
        ask.candidate.marks,
    )
    why = None if timing.mismatch else _malformed_timing(timing)
    if why:
        raise Stopped(_broken(ask.candidate, ask.result, why))
    return reference_timing, timing


class _Asker:
    """The candidate's reply to one command, or Stopped with the finished verdict."""

    def __init__(self, candidate: Worker, result: EvalResult, out_of_memory: str | None):
        self.candidate, self.result = candidate, result
        # What the candidate running out of device memory raises: "contended" (Contended), "weighed"
        # (CandidateOutOfMemory), or None (its report's own verdict, where memory is not planned).
        self.out_of_memory = out_of_memory
        self.shape = 0  # the shape of the last command that named one

    def __call__(self, command: dict, event: str, stage: str) -> Reply:
        self.shape = command.get("shape", self.shape)
        return self.send(lambda: self.candidate.call(command, event, stage))

    def send(self, send) -> Reply:
        """What `send()` returned, unless the candidate failed (a WorkerFailure or an "error" reply)."""
        candidate, result = self.candidate, self.result
        try:
            reply = send()
        except WorkerFailure as failure:
            if failure.stage == "startup":
                # Its process had not run the candidate's code yet (the ping comes before the job): what held it up
                # or ended it, a timing lock kept by another process or the machine, is no verdict on the candidate.
                why = f"not judged: the candidate's worker did not start: {failure.message}"
                raise EnvironmentFailure(why) from None
            raise Stopped(verdicts.from_failure(result, failure, candidate.stage_seconds)) from None
        result.stages.update(candidate.stage_seconds)
        if reply.event == "error":
            if self.out_of_memory and isinstance(reply.meta, dict) and reply.meta.get("out_of_memory") is True:
                if self.out_of_memory == "contended":
                    candidate.kill()
                    raise Contended()
                raise CandidateOutOfMemory(reply.meta, self.shape)
            raise Stopped(verdicts.from_error(result, reply.meta, candidate.output_text(settle_s=5)))
        return reply


def _broken(candidate: Worker, result: EvalResult, what: str) -> EvalResult:
    candidate.kill()
    failure = WorkerFailure("crash", candidate.stage, f"the candidate process sent {what}", candidate.output_text())
    return verdicts.from_failure(result, failure, candidate.stage_seconds)


def _malformed_timing(timing) -> str | None:
    """Why the candidate's timing reply cannot be read, or None: one finite time per repetition."""
    times = timing.facts.get("times_ms")
    if not (isinstance(times, list) and len(times) == timing.reps):
        return f"a timing reply without {timing.reps} times"
    if not all(map(verdicts.is_duration, times)):
        return "a timing reply with a time that is not a finite, non-negative number of at most a day"
    side = timing.side_stream_ms
    if not verdicts.is_duration(side):
        return "a side-stream probe that is not a finite, non-negative number"
    return None


def handed_over(candidate: Worker, reply: Reply | dict, count: int) -> dict:
    """Where the reference opens the `count` items the reply handed over: the candidate's process and descriptors.

    The process is the parent's own finding (Worker.harness_pid); the descriptors are the candidate's claim, and
    one that is not a plausible number becomes -1, which no process has: the reference finds nothing there.
    """
    if candidate.harness_pid is None:
        raise EnvironmentFailure("not judged: the candidate's harness process was not found in /proc")
    fds = (reply.meta if isinstance(reply, Reply) else reply).get("handed")
    fds = fds if isinstance(fds, list) and len(fds) == count else [-1] * count
    return {"pid": candidate.harness_pid, "fds": [fd if type(fd) is int and 0 <= fd < 1 << 20 else -1 for fd in fds]}
