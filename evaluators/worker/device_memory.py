"""The device's memory as the memory plan reads it: what the whole device has free, and this process's own cache.

On CUDA the reading is the driver's (torch.cuda.mem_get_info): every process on the device counts, not only this
one, and blocks torch's caching allocator keeps but no tensor uses count as taken. Each worker therefore gives its
cache back (release_cache) where a stage ends and before any reading: on an H100, a candidate's process held 15.5 GiB
that way when its timing ran out of memory, and an honest kernel failed for the harness's sake.

A worker on the CPU plans no memory, unless KS_SIMULATED_DEVICE names a simulated device, on which tests stand CPU
problems in for a GPU's: a directory holding `device.json` ({"capacity": bytes, "context": bytes}) and one entry per
live process of what it holds (its context, its allocations, its cache). An entry counts while its process holds the
lock on it, so a process that dies gives its memory back, as the driver does.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from pathlib import Path

import torch

SIMULATED = "KS_SIMULATED_DEVICE"
# A killed process's memory comes back as the driver tears its context down, after its parent saw it go.
SETTLE_READS, SETTLE_S = 8, 0.5
_simulated: dict | None = None  # this process's entry: its lock, its file and what it holds


def planned(device: str) -> bool:
    """Whether memory is planned on `device`: a GPU, or the CPU standing in for a simulated one."""
    return device == "cuda" or (device == "cpu" and bool(os.environ.get(SIMULATED)))


def reading(device: str) -> tuple[int, int]:
    """(free, total) bytes of the whole device now; (0, 0) where memory is not planned."""
    if device == "cuda":
        return torch.cuda.mem_get_info()
    if not planned(device):
        return 0, 0
    directory = Path(os.environ[SIMULATED])
    capacity = json.loads((directory / "device.json").read_text())["capacity"]
    return capacity - sum(_live_holdings(directory)), capacity


def settled_reading(device: str) -> tuple[int, int]:
    """reading(), once processes ended just before have given their memory back: read until it stops growing."""
    free, total = reading(device)
    for _ in range(SETTLE_READS):
        time.sleep(SETTLE_S)
        again, total = reading(device)
        if again <= free:
            break
        free = again
    return free, total


def release_cache(device: str) -> None:
    """Give the blocks this process's allocator keeps, unused, back to the device."""
    if device == "cuda":
        torch.cuda.empty_cache()
    elif planned(device):
        simulate(cached=0)


def own_bytes(device: str) -> int:
    """What this process holds on the device (its context aside): its allocator's blocks, used or cached."""
    if device == "cuda":
        return torch.cuda.memory_reserved()
    if not planned(device):
        return 0
    held = _entry()["held"]
    return held["allocated"] + held["cached"]


def open_simulated() -> None:
    """At a worker's start on a simulated device, its context's share of it (nothing without one)."""
    if planned("cpu"):
        _entry()


def simulate(allocated: int | None = None, cached: int | None = None) -> None:
    """Set what this process holds on the simulated device; an allocation beyond its free memory runs out, as torch's.

    Tests' candidates and problems call it to stand in for tensors they keep, or blocks their allocator caches.
    """
    entry = _entry()
    held = dict(entry["held"])
    if allocated is not None:
        free, _ = reading("cpu")
        if allocated - held["allocated"] > free:
            raise torch.OutOfMemoryError(f"simulated device out of memory: {allocated:,} bytes asked, {free:,} free")
        held["allocated"] = allocated
    if cached is not None:
        held["cached"] = cached
    entry["held"] = held
    _write(entry)


def _entry() -> dict:
    """The entry of this process on the simulated device, made (with its context's bytes) on first use."""
    global _simulated
    directory = Path(os.environ[SIMULATED])
    if _simulated is None or (_simulated["pid"], _simulated["path"].parent) != (os.getpid(), directory):
        context = json.loads((directory / "device.json").read_text()).get("context", 0)
        name = secrets.token_hex(8)
        # Locked before it is named as an entry: a reader that found it unlocked would take it for a dead one's.
        lock = open(directory / f"{name}.locking", "w")  # held, and locked, for the life of the process
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.rename(directory / f"{name}.locking", directory / f"{name}.lock")
        _simulated = {"pid": os.getpid(), "lock": lock, "path": directory / f"{name}.json"}
        _simulated["held"] = {"context": context, "allocated": 0, "cached": 0}
        _write(_simulated)
    return _simulated


def _write(entry: dict) -> None:
    partial = entry["path"].with_suffix(".partial")
    partial.write_text(json.dumps(entry["held"]))
    partial.replace(entry["path"])


def _live_holdings(directory: Path) -> list[int]:
    """Bytes held by each process whose entry is still locked; a dead process's entry is removed."""
    held = []
    for lock_path in directory.glob("*.lock"):
        with open(lock_path) as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # its process lives
                try:
                    held.append(sum(json.loads(lock_path.with_suffix(".json").read_text()).values()))
                except (FileNotFoundError, json.JSONDecodeError):
                    pass  # it is writing its first entry: its context counts from the next reading
                continue
        lock_path.with_suffix(".json").unlink(missing_ok=True)
        lock_path.unlink(missing_ok=True)
    return held
