"""The trusted reads of each device, kept by the parent: the mark every reference process's drain waits against.

A reference's drain (worker/device_idle.py) times a read of device memory until it is as quick as the mark, or until
its reads are trusted: begun long enough after the candidate's last stop that nothing it gave back can still be
cleared. Only trusted reads make the mark. Kept here, in the parent, they outlive the reference processes: in a batch
each problem has its own, and each would otherwise wait once for trusted reads of its own (0.38 s on an H200, 37 s
over level 1 of KernelBench). A reference process is trusted code, and its buffer's placement moves its reads by up
to 2 % (bench/probes/placement_spread.py), which the drain's tolerance covers.
"""

from __future__ import annotations

import threading
from collections import deque

HISTORY, MARK_AT = 32, 0.25

_lock = threading.Lock()
_reads: dict[str, deque[float]] = {}


def mark(device: str) -> float | None:
    """The MARK_AT quantile of the device's last HISTORY trusted reads (ms); None before the first."""
    with _lock:
        reads = sorted(_reads.get(device, ()))
    return reads[int(MARK_AT * (len(reads) - 1))] if reads else None


def add(device: str, trusted_ms: list[float]) -> None:
    """A drain's trusted reads (ms): finite and positive, or not kept."""
    kept = [ms for ms in trusted_ms if isinstance(ms, float) and 0.0 < ms < float("inf")]
    with _lock:
        _reads.setdefault(device, deque(maxlen=HISTORY)).extend(kept)
