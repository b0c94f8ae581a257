"""The device's timing lock: one process times on a GPU at a time, across every process of this machine.

The parent holds it around the timing commands it sends (so its clock around a command never includes a wait for
the lock); the profiler while it replays kernels. A starting worker holds it shared while it opens its CUDA context:
contexts open side by side, never while someone times.

The host lock spans the machine's GPUs. Every timing holds it alone, after its device's lock; a starting worker, a
candidate's correctness trials and the reference's expected outputs (a process's first calls of a problem's kernels)
hold it shared. With timings of two GPUs side by side, KernelBench level 2's first 50 problems, each its own
reference as candidate, read 0.56-1.21x of themselves on 2 H100s, against 0.989-1.031x on one GPU of the same machine;
with the lock held alone, 0.931-1.058x (docs/BENCHMARKS.md, "KernelBench levels in batch"). Other GPUs' timings
and kernel loading wait meanwhile, so several GPUs gain little on a suite whose time is mostly timing
(docs/CLUSTER.md).
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from evaluators.worker.devices import visible_gpus

HOST_WAIT_S = 30.0  # seconds a timing or a starting worker waits for the host's lock before going on without it


class LockTimeout(RuntimeError):
    """The lock was not free within the wait allowed."""


@contextmanager
def device_lock(cache_dir: Path, device_key: str, timeout_s: float | None = None, shared: bool = False):
    """Serialize timing per device across processes (flock: released even if the holder is killed).

    `shared` holders exclude only exclusive ones: two workers opening their contexts do not wait for each other.
    """
    with _held(_lock_file(cache_dir, f"{device_key}.lock"), shared, timeout_s, _deadline(timeout_s), "the device's"):
        yield


@contextmanager
def host_lock(cache_dir: Path, alone: bool = False, wait_s: float | None = None):
    """Shared by starting workers and first calls on every GPU of this machine; `alone`, by a timing, with none of them.

    Yields whether it was had within `wait_s` (HOST_WAIT_S by default). A legitimate holder keeps it for one shape's
    timing, one context's start or one shape's first calls, seconds. Past the wait, the holder is taken for a process
    that keeps it on purpose (a candidate can open the file too, or hang in its trials), and the caller goes on
    without it: the lock only makes a timing quieter, so no verdict waits on it. One waiting to be alone keeps the
    turnstile, so holders that come after it wait behind it: a steady stream of first calls on the other GPUs never
    starves a timing.
    """
    wait_s = HOST_WAIT_S if wait_s is None else wait_s
    deadline, held = _deadline(wait_s), ExitStack()
    try:
        with _held(_lock_file(cache_dir, "host.turnstile"), False, wait_s, deadline, "the host's"):
            held.enter_context(_held(_lock_file(cache_dir, "host.lock"), not alone, wait_s, deadline, "the host's"))
        had = True
    except LockTimeout:
        had = False
    with held:
        yield had


def _lock_file(cache_dir: Path, name: str) -> Path:
    path = cache_dir / "locks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _deadline(timeout_s: float | None) -> float | None:
    return None if timeout_s is None else time.monotonic() + timeout_s


@contextmanager
def _held(path: Path, shared: bool, timeout_s: float | None, deadline: float | None, whose: str):
    """Hold an flock on `path` until the block ends; LockTimeout past `deadline` (None: wait as long as it takes)."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with open(path, "a") as handle:
        if deadline is None:
            fcntl.flock(handle, mode)
        else:
            while True:
                try:
                    fcntl.flock(handle, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LockTimeout(f"{whose} timing lock ({path}) was held for over {timeout_s:g} s") from None
                    time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def device_key(device: str) -> str:
    """A name for the physical device, stable across CUDA_VISIBLE_DEVICES remappings (`cuda:N` is GPU N here)."""
    if not device.startswith("cuda"):
        return "cpu"
    index = int(device.split(":")[1]) if ":" in device else 0
    return f"cuda-{visible_gpus()[index].uuid}"


@contextmanager
def starting_worker_lock():
    """What a starting worker holds shared while it works on its GPU (its context, its kernels' first loads)."""
    cache_dir = Path(os.environ["KS_CACHE_DIR"])
    with device_lock(cache_dir, device_key("cuda"), shared=True), host_lock(cache_dir):
        yield
