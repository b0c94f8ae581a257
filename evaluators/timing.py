"""Worker-side timing: clocks bound before candidate code, cache flush, input rotation, side-stream probe.

The same routine times the reference (in its own process) and the candidate, so their ratio is fair.
"""

from __future__ import annotations

import fcntl
import statistics
import time
from contextlib import contextmanager
from pathlib import Path

import torch


class Clocks:
    """Timer and synchronization functions captured before the candidate is imported.

    A candidate that later replaces time.perf_counter or torch.cuda.Event.elapsed_time changes nothing here;
    one that reaches into this object is caught by the parent's wall-clock cross-check.
    """

    def __init__(self, device: str):
        self.now = time.perf_counter
        self.device = device
        if device == "cuda":
            self.Event = torch.cuda.Event
            self.record = torch.cuda.Event.record
            self.elapsed = torch._C._CudaEventBase.elapsed_time
            self.wait_event = torch._C._CudaEventBase.synchronize
            self.sync = torch._C._cuda_synchronize
        else:
            self.sync = lambda: None


@contextmanager
def device_lock(cache_dir: Path, device_key: str):
    """Serialize timing per device across processes (flock: released even if the holder is killed)."""
    path = cache_dir / "locks" / f"{device_key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def device_key(device: str) -> str:
    """A name for the physical device, stable across CUDA_VISIBLE_DEVICES remappings."""
    if device != "cuda":
        return "cpu"
    return f"cuda-{torch.cuda.get_device_properties(0).uuid}"


def time_calls(call, n_sets: int, job: dict, clocks: Clocks, mark) -> tuple[dict, dict[int, object]]:
    """Time `call(i)` (a run on input set i % n_sets); returns timing facts and the last output of every set."""
    if clocks.device == "cuda":
        return _time_cuda(call, n_sets, job, clocks, mark)
    return _time_interpreter(call, n_sets, job, clocks, mark)


def _time_interpreter(call, n_sets, job, clocks, mark):
    last = {k: call(k) for k in range(n_sets)}  # warm-up, and an output of every set for the reference's check
    times = []
    for i in range(job["cpu_reps"]):
        start = clocks.now()
        last[i % n_sets] = call(i)
        times.append((clocks.now() - start) * 1e3)
    wall_calls = 2
    mark("wall:begin")
    for i in range(wall_calls):
        last[i % n_sets] = call(i)
    mark("wall:end")
    return {"times_ms": times, "side_stream_ms": 0.0, "wall_calls": wall_calls, "label": "interpreter"}, last


def _time_cuda(call, n_sets, job, clocks, mark):
    # Zeroing a buffer twice the largest last-level cache (MI300X: 256 MB Infinity Cache) evicts every input.
    flush = torch.empty(job["flush_mb"] << 20, dtype=torch.int8, device="cuda")
    last = {}
    clocks.sync()
    start = clocks.now()
    for i in range(max(5, n_sets)):  # also leaves an output of every set for the reference's check
        flush.zero_()
        last[i % n_sets] = call(i)
    clocks.sync()
    estimate_ms = max((clocks.now() - start) * 1e3 / max(5, n_sets), 1e-3)
    for i in range(max(1, int(job["warmup_ms"] / estimate_ms))):
        last[i % n_sets] = call(i)
    reps = min(max(int(job["rep_ms"] / estimate_ms), job["min_reps"]), job["max_reps"])
    starts = [clocks.Event(enable_timing=True) for _ in range(reps)]
    ends = [clocks.Event(enable_timing=True) for _ in range(reps)]
    clocks.sync()
    for i in range(reps):
        flush.zero_()
        clocks.record(starts[i])
        last[i % n_sets] = call(i)
        clocks.record(ends[i])
    clocks.sync()
    times = [clocks.elapsed(s, e) for s, e in zip(starts, ends, strict=True)]
    side_stream_ms = _side_stream_probe(call, flush, clocks)
    wall_calls = min(max(int(50 / estimate_ms), 3), 500)
    clocks.sync()
    mark("wall:begin")
    for i in range(wall_calls):
        last[i % n_sets] = call(i)
    clocks.sync()
    mark("wall:end")
    facts = {"times_ms": times, "side_stream_ms": side_stream_ms, "wall_calls": wall_calls, "label": "cuda-events"}
    return facts, last


def _side_stream_probe(call, flush, clocks) -> float:
    """Milliseconds of device work still running after the timed stream's end event: work on other streams."""
    idle = []
    for _ in range(5):
        start = clocks.now()
        clocks.sync()
        idle.append(clocks.now() - start)
    leftover = []
    for i in range(5):
        flush.zero_()
        end = clocks.Event(enable_timing=True)
        call(i)
        clocks.record(end)
        clocks.wait_event(end)
        start = clocks.now()
        clocks.sync()
        leftover.append(clocks.now() - start)
    return max(0.0, (statistics.median(leftover) - statistics.median(idle)) * 1e3)
