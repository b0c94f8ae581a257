"""The device's timing lock: one process times on a GPU at a time, across every process of this machine.

The parent holds it around the timing commands it sends (so its clock around a command never includes a wait for
the lock); the profiler while it replays kernels. A starting worker holds it shared while it opens its CUDA context:
contexts open side by side, never while someone times.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path

from evaluators.worker.devices import visible_gpus


class LockTimeout(RuntimeError):
    """The lock was not free within the wait allowed."""


@contextmanager
def device_lock(cache_dir: Path, device_key: str, timeout_s: float | None = None, shared: bool = False):
    """Serialize timing per device across processes (flock: released even if the holder is killed).

    `shared` holders exclude only exclusive ones: two workers opening their contexts do not wait for each other.
    """
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    path = cache_dir / "locks" / f"{device_key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        if timeout_s is None:
            fcntl.flock(handle, mode)
        else:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(handle, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LockTimeout(f"the device's timing lock was held for over {timeout_s:g} s") from None
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


def starting_worker_lock():
    """The lock a starting worker holds shared while it works on its GPU (its context, its kernels' first loads)."""
    return device_lock(Path(os.environ["KS_CACHE_DIR"]), device_key("cuda"), shared=True)
