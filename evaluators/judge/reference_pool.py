"""Warm reference workers: one per (problem, device, settings), reused by every candidate of that problem.

The reference's outputs for every shape and trial are the same for every candidate; computing them once takes the
reference's start-up, CUDA context and work off each evaluation's critical path. Its timing is not: it is measured
with each candidate, side by side (judge/timing_plan.py). A new problem's reference takes a pre-started process
(spares), so its start-up is off the path too once one waits. Reference workers never run candidate code, so
keeping one alive costs no isolation. A reference nobody is using ends when another problem's starts on its
device, so the new plan sees the device's memory free, and whenever memory on its device is short
(judge/device_room.py). Shape sizes also outlive the process, on disk (judge/reference_cache.py).
"""

from __future__ import annotations

import atexit
import json
import secrets
import threading
from concurrent.futures import Future

from evaluators.judge import spares
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import Reply, WorkerFailure, close_together
from evaluators.judge.reference_cache import ReferenceCache
from evaluators.judge.timing_plan import ShapeTiming, time_side_by_side
from evaluators.judge.toolchain import device_kind, same_gpu, toolchain_key
from evaluators.worker.device_lock import host_lock
from evaluators.worker.memory import RESERVE_BYTES
from kernels.problem_types import Problem, ProblemError, Shape

# The options that change what the reference computes or how it is timed.
REFERENCE_OPTIONS = {
    "seed", "trials", "atol", "rtol", "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps",
    "max_result_mb", "retained", "strict", "cache_dir", "pid_namespace", "timeout_s", "compile_baseline",
    "reference_cache", "pin_timing",
}  # fmt: skip


class EnvironmentFailure(RuntimeError):
    """The machine, not the problem or the candidate, failed the evaluation (e.g. the reference ran out of memory)."""


class ReferenceOutOfMemory(EnvironmentFailure):
    """The reference ran out of device memory: the machine's failure, unless a candidate was building beside it."""


class NoRoomToTime(Exception):
    """Even one side at a time, with one input set, does not fit in what the device has free to time `shape`.

    `reading` is the reference's: the device's free and total bytes and the least the timing needs.
    """

    said = None  # nothing the candidate reported: the reading found the room short

    def __init__(self, reading: dict, shape: int):
        super().__init__(f"{reading['free_bytes']:,} bytes free, {reading['least_bytes']:,} needed")
        self.reading, self.shape = reading, shape


# A candidate builds beside the reference's sizing and outputs only where this many input sets, and the reserve,
# fit in the free memory: each process's first call holds its inputs, outputs and temporaries at once.
OVERLAP_INPUT_SETS = 8


class ReferenceWorker:
    """One warm reference process; requests are serialized, its timings kept per shape and repetition plan.

    It answers its job at once with the device's free memory, read before it allocates, and then plans memory and
    computes its outputs in the background (`memory` and `ready` wait for those), so a candidate can build
    meanwhile where `overlap` says the device has the room.
    """

    def __init__(self, problem: Problem, shapes: list[Shape], device: str, options: EvalOptions, job: dict):
        self.device, self.options = device, options
        self.cache = ReferenceCache(problem, shapes, device, options)
        self.worker = spares.claim("reference", options, toolchain_key(), device)
        self.lock = threading.Lock()
        self.compiled: dict[int, dict] = {}  # torch.compile(reference)'s times per shape, when asked for
        self.users = 0  # evaluations using it now (reference_for to release): an idle one may be ended
        self.served = 0  # evaluations it has been handed to: more than one means a later one found it warm
        job = job | {"role": "reference", "sizes": self.cache.sizes()}
        self.sizes_from_cache = job["sizes"] is not None and device_kind(device) == "cuda"
        self.cached_sizes = job["sizes"]
        try:
            with self.lock:
                self.started = self._checked(lambda: self.worker.assign(job, None, "reference")).meta
        except BaseException:
            self.worker.close()  # never pooled: nothing else would let go of its pipes and its directory
            raise
        self._memory: Future = Future()
        self._ready: Future = Future()
        threading.Thread(target=self._prepare, args=(job["sizes"] is None,), daemon=True, name="reference").start()

    @property
    def overlap(self) -> bool:
        """Whether a candidate would build while this reference plans and computes its outputs, and may."""
        if self._ready.done():
            return False  # a warm reference: nothing left to overlap
        if not self.memory_planned:
            return True
        inputs = self.started["input_bytes"]  # None: inputs of unknown size
        return inputs is not None and OVERLAP_INPUT_SETS * inputs + RESERVE_BYTES <= self.started["free_bytes"]

    @property
    def memory_planned(self) -> bool:
        """Whether the device's memory is planned (a GPU's, or a simulated one); the CPU's is not."""
        return bool(self.started["total_bytes"])

    def _prepare(self, store_sizes: bool) -> None:
        try:
            memory = self.request({"cmd": "plan"}, "planned", "reference").meta["memory"]
        except BaseException as exc:  # raised again to whoever waits on `memory` or `ready`
            self._memory.set_exception(exc)
            self._ready.set_exception(exc)
            return
        # Measured anew where the cached sizes did not fit (worker/reference.py, plan_for): the entry is corrected.
        if memory.get("sizes") and (store_sizes or memory["sizes"] != self.cached_sizes):
            self.cache.store(sizes=memory["sizes"])
        self._memory.set_result(memory)
        if not memory["fits"]:
            self._ready.set_result({"memory": memory})
            return
        try:
            with host_lock(self.options.cache_dir):  # its first calls of the problem's kernels: never beside a timing
                meta = self.request({"cmd": "expect"}, "ready", "reference").meta
            if self.sizes_from_cache and memory.get("sizes") != meta["sizes"]:
                # Sizes from the cache that real tensors contradict: an entry made stale or written by someone else.
                self.cache.store(sizes=meta["sizes"])
                self.worker.kill()
                raise EnvironmentFailure(
                    "the reference cache held wrong input/output sizes for this problem; they are corrected on disk, "
                    "evaluate again (or pass --no-cache)"
                )
            self._ready.set_result(meta | {"memory": memory})
        except BaseException as exc:
            self._ready.set_exception(exc)

    @property
    def memory(self) -> dict:
        """The memory plan, once made. Raises what planning raised (EnvironmentFailure, ProblemError)."""
        return self._memory.result()

    def replan(self) -> dict:
        """A plan that did not fit, made again on the device's memory as it is now; its outputs, where it fits.

        The parent asks once it has made room on the device, and only while no candidate of the evaluation has its job.
        """
        self._memory, self._ready = Future(), Future()
        self._prepare(store_sizes=False)
        return self.memory

    @property
    def ready(self) -> dict:
        """The memory plan, the shapes' roofline facts and the device's name, once the outputs are computed.

        Raises what the reference's job raised (EnvironmentFailure, ProblemError).
        """
        return self._ready.result()

    def _checked(self, send) -> Reply:
        """The reference's reply; failures there are the problem's or the machine's, never the candidate's."""
        worker = self.worker
        try:
            got = send()
        except WorkerFailure as failure:
            worker.kill()
            tail = failure.output.strip().splitlines()[-1:] or [""]
            raise EnvironmentFailure(f"the reference process failed: {failure.message}: {tail[0][:300]}") from None
        if got.event == "error":
            worker.kill()
            meta = got.meta
            first = meta["message"].splitlines()[0]
            if meta.get("out_of_memory"):
                raise ReferenceOutOfMemory(f"the reference ran out of device memory in {meta['stage']}: {first}")
            raise ProblemError(f"the reference failed in {meta['stage']}: {first}")
        return got

    def request(self, command: dict, event: str, stage: str = "compare") -> Reply:
        """Send one command and wait for its reply."""
        with self.lock:
            return self._checked(lambda: self.worker.call(command, event, stage))

    def room(self, shape: int) -> dict:
        """The reference's reading of the device for timing `shape`, once what the parent has just ended is gone.

        See worker/reference.py, timing_room.
        """
        with self.lock:
            return self._checked(lambda: self.worker.call(self._room_command(shape, True), "room", "timing")).meta

    def _room_command(self, shape: int, settle: bool) -> dict:
        return {"cmd": "room", "shape": shape, "settle": settle}

    def time_beside(self, shape: int, candidate_call, quiet, make_room, where,
                    channel=None) -> tuple[ShapeTiming, ShapeTiming]:  # fmt: skip
        """(the reference's timing, the candidate's) at `shape`, measured now in blocks taken in turn.

        `candidate_call(command, event)` sends one command to the candidate and returns its Reply; `quiet()` is a
        context in which the candidate's processes are stopped, all through the timing but for its own commands;
        `where(reply, count)` says where the reference opens the outputs a candidate's reply handed over; `channel`,
        the candidate's marks of its blocks' ends (process.Worker.marks), on which the reference's watch is armed
        (judge/timing_plan.py). The
        reference is timed with every candidate, never from an earlier run: a median from another moment differs
        from the candidate's by whatever the machine did in between. torch.compile(reference)'s times, where asked
        for, are measured once per shape and kept. The timing is laid out on the device's free memory read just
        before it; where even the least does not fit, `make_room()` ends the harness's idle workers on the device
        (True if it ended any) and the memory is read again. Raises NoRoomToTime where there is still too little.
        """
        memory = self.memory  # before the lock: planning takes it

        def call(command, event):
            return self._checked(lambda: self.worker.call(command, event, _stage(command)))

        def room() -> dict:
            reading = call(self._room_command(shape, False), "room").meta
            if reading["layout"] is None and make_room():
                reading = call(self._room_command(shape, True), "room").meta
            if reading["layout"] is None:
                raise NoRoomToTime(reading, shape)
            return reading["layout"]

        def compiled(side) -> dict:
            if shape not in self.compiled:
                command = side.command(0, side.timing.reps, secrets.randbits(30), hold=False)
                self.compiled[shape] = call(command | {"cmd": "time_compiled", "calls": side.warm, "seed": side.seed},
                                            "compiled").meta  # fmt: skip
            return self.compiled[shape]

        def post(command) -> None:
            if "on" in command:  # armed on a candidate's marks: handed over first where the reference lacks them
                command = command | {"on": {"new": self.worker.hand_marks(command["on"])}}
            self.worker.post(command, _stage(command))

        with self.lock:
            return time_side_by_side(
                call, candidate_call, shape, self.device, self.options, memory, room, quiet, where,
                compiled if self.options.compile_baseline else None, post, channel,
            )  # fmt: skip

    @property
    def alive(self) -> bool:
        """Whether the process still runs (a failed request kills it)."""
        return self.worker.proc.poll() is None

    def close(self) -> None:
        """End the process and remove its scratch directory."""
        self.worker.close()


def _stage(command: dict) -> str:
    """torch.compile of the reference may take minutes: the build stage's limit applies to it."""
    return {"time_compiled": "build", "check_reps": "compare_timed"}.get(command["cmd"], "timing")


_pool: dict[str, ReferenceWorker] = {}
_starting: dict[str, threading.Lock] = {}
_pool_lock = threading.Lock()


def reference_for(problem: Problem, shapes: list[Shape], device: str, options: EvalOptions, job: dict):
    """The warm ReferenceWorker for this problem, device and settings, started (up to its plan) when there is none.

    The caller uses it until `release(reference)`. Before a new one plans its memory, the idle references of other
    problems on the device end and give their memory back: a plan made beside them would see too little free. A strict
    run's reference is its own, never warm and never kept: confirming a change takes a draw of processes independent
    of every other run's (judge/strict.py).
    """
    key = json.dumps(
        [problem.digest, str(problem.path), device, options.model_dump(include=REFERENCE_OPTIONS, mode="json")]
    )
    with _pool_lock:
        starting = _starting.setdefault(key, threading.Lock())
    with starting:
        with _pool_lock:
            warm = _pool.get(key)
            if warm is not None and warm.alive and not options.strict:
                warm.users += 1
                warm.served += 1
                return warm
            dead = _pool.pop(key, None)
            if dead is not None and dead.users == 0:
                dead.close()  # it died idle; one that died in use is closed by its last evaluation's release
            idle = [k for k, w in _pool.items() if _evictable(json.loads(k), problem, device) and w.users == 0]
            for other in idle:
                _pool.pop(other).close()
        reference = ReferenceWorker(problem, shapes, device, options, job)
        with _pool_lock:
            reference.users += 1
            reference.served += 1
            if not options.strict:
                _pool[key] = reference
        return reference


def _evictable(key: list, problem: Problem, device: str) -> bool:
    """Whether `key` is another problem's reference on the same GPU.

    The same problem's under other settings (a strict re-evaluation's) is kept.
    """
    return key[0] != problem.digest and same_gpu(key[2], device)


def end_idle(device: str) -> int:
    """End every reference on `device`'s GPU that no evaluation is using, whatever its problem; how many ended."""
    with _pool_lock:
        idle = [key for key, warm in _pool.items() if warm.users == 0 and same_gpu(json.loads(key)[2], device)]
        ended = [_pool.pop(key) for key in idle]
    close_together([reference.worker for reference in ended])
    return len(ended)


def discard(reference: ReferenceWorker) -> None:
    """End `reference` and forget it: the next evaluation of its problem starts another."""
    with _pool_lock:
        _forget(reference)
    reference.close()


def release(reference: ReferenceWorker) -> None:
    """One evaluation is done with `reference`; it stays warm for the next candidate of its problem.

    Unless it died, or was never kept (a strict run's): then it ends with its last user.
    """
    with _pool_lock:
        reference.users -= 1
        kept = any(warm is reference for warm in _pool.values())
        done = reference.users == 0 and not (reference.alive and kept)
        if done:
            _forget(reference)  # under the same lock: reference_for cannot close it a second time meanwhile
    if done:
        reference.close()


def _forget(reference: ReferenceWorker) -> None:
    for key in [k for k, warm in _pool.items() if warm is reference]:
        del _pool[key]


def close_all(wait: bool = True) -> None:
    """End every warm reference (at exit, without waiting for them, and in tests that want a cold start)."""
    with _pool_lock:
        close_together([reference.worker for reference in _pool.values()], wait)
        _pool.clear()


atexit.register(close_all, wait=False)
