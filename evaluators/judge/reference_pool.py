"""Warm reference workers: one per (problem, device, settings), reused by every candidate of that problem.

The reference's outputs for every shape and trial, and its timings, are the same for every candidate; computing
them once takes the reference's start-up, CUDA context and work off each evaluation's critical path. A new
problem's reference takes a pre-started process (spares), so its start-up is off the path too once one waits. Reference
workers never run candidate code, so keeping one alive costs no isolation. At most two stay warm per device.
"""

from __future__ import annotations

import atexit
import json
import threading

from evaluators.judge import spares
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import Reply, WorkerFailure
from evaluators.judge.timing_plan import ShapeTiming, timing_commands
from evaluators.judge.toolchain import toolchain_key
from kernels.problem import Problem, ProblemError

WARM_PER_DEVICE = 2
# The options that change what the reference computes or how it is timed.
REFERENCE_OPTIONS = {
    "seed", "trials", "atol", "rtol", "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps",
    "max_result_mb", "retained", "strict", "cache_dir", "pid_namespace", "timeout_s", "compile_baseline",
}  # fmt: skip


class EnvironmentFailure(RuntimeError):
    """The machine, not the problem or the candidate, failed the evaluation (e.g. the reference ran out of memory)."""


class ReferenceWorker:
    """One warm reference process; requests are serialized, its timings kept per shape and repetition plan."""

    def __init__(self, device: str, options: EvalOptions, job: dict):
        self.device, self.options = device, options
        self.worker = spares.claim("reference", options, toolchain_key(), device)
        self.lock = threading.Lock()
        self.timings: dict[tuple[int, bool], ShapeTiming] = {}
        with self.lock:
            self.ready = self._checked(lambda: self.worker.assign(job | {"role": "reference"}, None, "reference"))
        self.ready = self.ready.meta

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
                raise EnvironmentFailure(f"the reference ran out of device memory in {meta['stage']}: {first}")
            raise ProblemError(f"the reference failed in {meta['stage']}: {first}")
        return got

    def request(self, command: dict, event: str, stage: str = "compare") -> Reply:
        """Send one command and wait for its reply."""
        with self.lock:
            return self._checked(lambda: self.worker.call(command, event, stage))

    def timing(self, shape: int, strict: bool, again: bool = False) -> ShapeTiming:
        """The reference timed at `shape` by the routine the candidate will be timed with, measured once.

        `again` measures it anew (a candidate's timing was disputed: the parent's clock gets a second opinion).
        """
        with self.lock:
            key = (shape, strict)
            if again or key not in self.timings:
                self.timings[key] = timing_commands(
                    lambda command, event: self._checked(lambda: self.worker.call(command, event, _stage(command))),
                    shape,
                    self.device,
                    self.options,
                    self.ready["memory"],
                    strict,
                )
            return self.timings[key]

    @property
    def alive(self) -> bool:
        """Whether the process still runs (a failed request kills it)."""
        return self.worker.proc.poll() is None

    def close(self) -> None:
        """End the process and remove its scratch directory."""
        self.worker.close()


def _stage(command: dict) -> str:
    """torch.compile of the reference may take minutes: the build stage's limit applies to it."""
    return "build" if command["cmd"] == "time_compiled" else "timing"


_pool: dict[str, ReferenceWorker] = {}
_starting: dict[str, threading.Lock] = {}
_pool_lock = threading.Lock()


def reference_for(problem: Problem, device: str, options: EvalOptions, job: dict) -> ReferenceWorker:
    """The warm reference for this problem, device and settings, started (and waited for) when there is none."""
    key = json.dumps(
        [problem.digest, str(problem.path), device, options.model_dump(include=REFERENCE_OPTIONS, mode="json")]
    )
    with _pool_lock:
        starting = _starting.setdefault(key, threading.Lock())
    with starting:
        with _pool_lock:
            warm = _pool.get(key)
            if warm is not None and warm.alive:
                return warm
            _pool.pop(key, None)
        reference = ReferenceWorker(device, options, job)
        with _pool_lock:
            _pool[key] = reference
            _evict(device, keep=key)
        return reference


def _evict(device: str, keep: str) -> None:
    same_device = [key for key in _pool if json.loads(key)[2] == device and key != keep]
    for key in same_device[: max(0, len(same_device) + 1 - WARM_PER_DEVICE)]:
        _pool.pop(key).close()


def discard(reference: ReferenceWorker) -> None:
    """Forget a reference that failed, so the next evaluation starts a fresh one."""
    with _pool_lock:
        for key, warm in list(_pool.items()):
            if warm is reference:
                del _pool[key]
    reference.close()


@atexit.register
def close_all() -> None:
    """End every warm reference (at exit, and in tests that want a cold start)."""
    with _pool_lock:
        for reference in _pool.values():
            reference.close()
        _pool.clear()
