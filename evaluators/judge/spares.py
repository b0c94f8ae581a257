"""Pre-started worker processes: Python, torch and the CUDA context are ready before a job arrives.

A spare has run nothing of a problem's or a candidate's; it takes exactly one job and is then discarded, so each
candidate still runs in a fresh process. Candidate spares: an evaluation claims the oldest as it begins, before the
reference is ready, and starts one to take its place, so each has the evaluations ahead of it in the queue to get
ready. Reference spares: claimed when a problem's warm reference worker starts (its first evaluation in this
process), so in a suite each next problem finds its reference's process already started. Where a device's memory is
short, its waiting spares end (end_waiting): the next claims start others.
"""

from __future__ import annotations

import atexit
import threading
from collections import deque
from typing import TYPE_CHECKING

from evaluators.judge.process import Worker, close_together
from evaluators.judge.process_options import process_key
from evaluators.judge.toolchain import device_kind, same_gpu

if TYPE_CHECKING:
    from evaluators.judge.options import EvalOptions
    from evaluators.judge.process_options import ProcessOptions

# Spares kept waiting per role and device; the queue grows with the claims a process makes, so one that evaluates
# once (the CLI) starts one of each, not the full depth. Each waiting spare holds a CUDA context (about 0.5 GiB)
# and a process's memory. On an H100 host a worker took about 10 s to import torch and open its context, against
# 3-6 s for an evaluation: one candidate spare was still starting when the next evaluation claimed it, hence 3.
# A suite's evaluation starts one reference per problem; two waiting give each 10 s start two problems to finish.
# On the CPU one of each: the two-core machines the tests run on would only slow down under more.
DEPTH = {"candidate": {"cuda": 3, "cpu": 1}, "reference": {"cuda": 2, "cpu": 1}}

_spares: dict[str, deque[Worker]] = {}
_claims: dict[str, int] = {}
_lock = threading.Lock()
_replace_claimed = True


def evaluate_once() -> None:
    """Say that this process makes one evaluation (the CLI): a claim starts no spare to take its place.

    Spares started beside a cold evaluation only compete with its two workers for the cores, the disk and the lock
    each takes to open its CUDA context.
    """
    global _replace_claimed
    _replace_claimed = False


def prestart(options: ProcessOptions | EvalOptions, toolchain: str, device: str) -> None:
    """Start one reference and one candidate process now, for the evaluation this process is about to make.

    The CLI calls it as soon as its flags are read, with ProcessOptions (judge/process_options.py): the workers
    import torch (4-5 s on an H100 host) while the parent imports the rest of the evaluator and loads the problem.
    """
    with _lock:
        for role in ("reference", "candidate"):
            queue = _spares.setdefault(_key(role, options, toolchain, device), deque())
            if not queue:
                queue.append(Worker(role, options, toolchain, device))


def _depth(role: str, device: str) -> int:
    return DEPTH[role][device_kind(device)]


def _key(role: str, options: ProcessOptions | EvalOptions, toolchain: str, device: str) -> str:
    return f"{role}|{device}|{toolchain}|{process_key(options)}"


def claim(role: str, options: EvalOptions, toolchain: str, device: str) -> Worker:
    """A started process of `role` ("candidate" or "reference"): the oldest waiting spare, else a new one."""
    key = _key(role, options, toolchain, device)
    with _lock:
        queue = _spares.setdefault(key, deque())
        spare = queue.popleft() if queue else None
        _claims[key] = _claims.get(key, 0) + 1
        while _replace_claimed and len(queue) < min(_depth(role, device), _claims[key]):
            queue.append(Worker(role, options, toolchain, device, spare=True))
    if spare is not None and spare.proc.poll() is None:
        return spare
    if spare is not None:
        spare.close()  # it died waiting; its pipes and its directory are still the parent's to let go of
    return Worker(role, options, toolchain, device)


def give_back(worker: Worker, options: EvalOptions, toolchain: str, device: str) -> None:
    """A claimed process the evaluation did not use (it ended before giving it a job) waits again, if needed."""
    key = _key(worker.role, options, toolchain, device)
    with _lock:
        queue = _spares.setdefault(key, deque())
        if not worker.assigned and worker.proc.poll() is None and len(queue) < _depth(worker.role, device):
            queue.appendleft(worker)  # the oldest: it is the readiest
            return
    worker.close()


def end_waiting(device: str) -> int:
    """End every spare waiting on `device`'s GPU, each holding a CUDA context there; how many ended."""
    with _lock:
        ended = []
        for key, queue in _spares.items():
            if same_gpu(key.split("|")[1], device):
                ended += queue
                queue.clear()
    close_together(ended)
    return len(ended)


def close_all(wait: bool = True) -> None:
    """End every waiting spare (their control pipe closes and they exit); at exit, without waiting for them."""
    with _lock:
        close_together([spare for queue in _spares.values() for spare in queue], wait)
        _spares.clear()
        _claims.clear()


atexit.register(close_all, wait=False)
