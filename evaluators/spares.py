"""Pre-started candidate processes: Python, torch and the CUDA context are ready before a candidate arrives.

A spare has run no candidate code; it takes exactly one candidate and is then discarded, so each candidate still
runs in a fresh process. An evaluation claims its spare as it begins, before the reference is ready, and that
starts the next one: the next evaluation's start-up overlaps the whole of this one, reference start included.
"""

from __future__ import annotations

import atexit
import threading

from evaluators.options import EvalOptions
from evaluators.sandbox import Worker

# The options that shape a worker's process and environment (what a spare must have been started with).
PROCESS_OPTIONS = {"cache_dir", "pid_namespace", "output_cap_kb", "timeout_s", "build_timeout_s", "lock_timeout_s"}

_spares: dict[str, Worker] = {}
_lock = threading.Lock()


def _key(options: EvalOptions, toolchain: str, device: str) -> str:
    return f"{device}|{toolchain}|{options.model_dump_json(include=PROCESS_OPTIONS)}"


def claim(options: EvalOptions, toolchain: str, device: str) -> Worker:
    """A started candidate process for the evaluation beginning now: the waiting spare if one matches, else new."""
    key = _key(options, toolchain, device)
    with _lock:
        spare = _spares.pop(key, None)
        _spares[key] = Worker("candidate", options, toolchain, device)
    if spare is None or spare.proc.poll() is not None:
        spare = Worker("candidate", options, toolchain, device)
    return spare


def give_back(worker: Worker, options: EvalOptions, toolchain: str, device: str) -> None:
    """A claimed process the evaluation did not use (it ended before the candidate ran) waits again, if needed."""
    key = _key(options, toolchain, device)
    with _lock:
        if not worker.assigned and worker.proc.poll() is None and key not in _spares:
            _spares[key] = worker
            return
    worker.close()


@atexit.register
def close_all() -> None:
    """End every waiting spare (their control pipe closes and they exit)."""
    with _lock:
        for spare in _spares.values():
            spare.close()
        _spares.clear()
