"""Pre-started candidate processes: Python, torch and the CUDA context are ready before a candidate arrives.

A spare has run no candidate code; it takes exactly one candidate and is then discarded, so each candidate still
runs in a fresh process. An evaluation claims the oldest spare as it begins, before the reference is ready, and
starts one to take its place: each spare has the evaluations ahead of it in the queue to get ready.
"""

from __future__ import annotations

import atexit
import threading
from collections import deque

from evaluators.options import EvalOptions
from evaluators.sandbox import Worker
from evaluators.toolchain import device_kind

# The options that shape a worker's process and environment (what a spare must have been started with).
PROCESS_OPTIONS = {"cache_dir", "pid_namespace", "output_cap_kb", "timeout_s", "build_timeout_s", "lock_timeout_s"}
# Spares kept waiting per device. On an H100 host a worker took about 10 s to import torch and open its context,
# against 3-6 s for an evaluation: one spare was still starting when the next evaluation claimed it. Each waiting
# spare holds a CUDA context (about 0.5 GiB) and a process's memory. On the CPU one does: the two-core machines
# the tests run on would only slow down under more.
# The queue grows with the claims a process makes, so one that evaluates once (the CLI, a Ray task's fresh worker
# process) starts one spare, not three.
DEPTH = {"cuda": 3, "cpu": 1}

_spares: dict[str, deque[Worker]] = {}
_claims: dict[str, int] = {}
_lock = threading.Lock()


def _key(options: EvalOptions, toolchain: str, device: str) -> str:
    return f"{device}|{toolchain}|{options.model_dump_json(include=PROCESS_OPTIONS)}"


def claim(options: EvalOptions, toolchain: str, device: str) -> Worker:
    """A started candidate process for the evaluation beginning now: the oldest waiting spare, else a new one."""
    key = _key(options, toolchain, device)
    with _lock:
        queue = _spares.setdefault(key, deque())
        spare = queue.popleft() if queue else None
        _claims[key] = _claims.get(key, 0) + 1
        while len(queue) < min(DEPTH[device_kind(device)], _claims[key]):
            queue.append(Worker("candidate", options, toolchain, device))
    if spare is None or spare.proc.poll() is not None:
        spare = Worker("candidate", options, toolchain, device)
    return spare


def give_back(worker: Worker, options: EvalOptions, toolchain: str, device: str) -> None:
    """A claimed process the evaluation did not use (it ended before the candidate ran) waits again, if needed."""
    key = _key(options, toolchain, device)
    with _lock:
        queue = _spares.setdefault(key, deque())
        if not worker.assigned and worker.proc.poll() is None and len(queue) < DEPTH[device_kind(device)]:
            queue.appendleft(worker)  # the oldest: it is the readiest
            return
    worker.close()


@atexit.register
def close_all() -> None:
    """End every waiting spare (their control pipe closes and they exit)."""
    with _lock:
        for queue in _spares.values():
            for spare in queue:
                spare.close()
        _spares.clear()
        _claims.clear()
