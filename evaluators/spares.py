"""Pre-started candidate processes: Python, torch and the CUDA context are ready before a candidate arrives.

A spare has run no candidate code; it takes exactly one candidate and is then discarded, so each candidate still
runs in a fresh process. Taking one starts the next, so the start-up overlaps the evaluation in flight.
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


def candidate_worker(job: dict, source: str, options: EvalOptions, toolchain: str, device: str) -> Worker:
    """A fresh candidate process holding `job` and `source`: a waiting spare if one matches, else a new one."""
    key = f"{device}|{toolchain}|{options.model_dump_json(include=PROCESS_OPTIONS)}"
    with _lock:
        spare = _spares.pop(key, None)
        _spares[key] = Worker("candidate", options, toolchain, device)
    if spare is None or spare.proc.poll() is not None:
        spare = Worker("candidate", options, toolchain, device)
    spare.assign(job, source)
    return spare


@atexit.register
def close_all() -> None:
    """End every waiting spare (their control pipe closes and they exit)."""
    with _lock:
        for spare in _spares.values():
            spare.close()
        _spares.clear()
