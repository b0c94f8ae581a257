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
from evaluators.judge.channel import ChannelError
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import WorkerFailure
from evaluators.judge.reports import WorkerReport
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
    """One warm reference process; requests are serialized, its timings cached per shape."""

    def __init__(self, device: str, options: EvalOptions, job: dict):
        self.worker = spares.claim("reference", options, toolchain_key(), device)
        self.worker.assign(job | {"role": "reference"})
        self.lock = threading.Lock()
        self.timings: dict[int, tuple[WorkerReport, dict]] = {}
        self.ready = self._next("ready").meta

    def _next(self, event: str) -> WorkerReport:
        """The reference's next report; failures there are the problem's or the machine's, never the candidate's."""
        worker = self.worker
        try:
            got = WorkerReport.read(worker.next_blob())
        except WorkerFailure as failure:
            worker.kill()
            tail = failure.output.strip().splitlines()[-1:] or [""]
            raise EnvironmentFailure(f"the reference process failed: {failure.message}: {tail[0][:300]}") from None
        except ChannelError as exc:
            worker.kill()
            raise EnvironmentFailure(f"the reference process sent {exc}") from None
        if got.event == "error":
            worker.kill()
            meta = got.meta
            first = meta["message"].splitlines()[0]
            if meta.get("out_of_memory"):
                raise EnvironmentFailure(f"the reference ran out of device memory in {meta['stage']}: {first}")
            raise ProblemError(f"the reference failed in {meta['stage']}: {first}")
        if got.event != event:
            worker.kill()
            raise EnvironmentFailure(f"the reference sent {got.event!r} where {event!r} was expected")
        return got

    def request(self, command: dict, event: str) -> WorkerReport:
        """Send one command and wait for its report."""
        with self.lock:
            self.worker.tell(command)
            return self._next(event)

    def timing(self, shape: int) -> tuple[WorkerReport, dict]:
        """The reference's timing facts and wall-clock marks at `shape`, measured once."""
        with self.lock:
            if shape not in self.timings:
                self.worker.marks.clear()
                self.worker.tell({"cmd": "time", "shape": shape})
                report = self._next("timing")
                self.timings[shape] = (report, dict(self.worker.marks))
            return self.timings[shape]

    @property
    def alive(self) -> bool:
        """Whether the process still runs (a failed request kills it)."""
        return self.worker.proc.poll() is None

    def close(self) -> None:
        """End the process and remove its scratch directory."""
        self.worker.close()


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
