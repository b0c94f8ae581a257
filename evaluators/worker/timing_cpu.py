"""The CPU core that times: the same one for the reference's process and the candidate's, next to the GPU.

A reference made of several small launches is timed at the speed its host thread launches them (each repetition
ends with the device idle). Two processes left to the scheduler ran that thread on different cores, migrated it
mid-loop, and timed the same code 0.83-3.5x of itself on an H100 (bench/reference_against_itself.py --no-pin).
Pinned, for the length of each timing command, to one core of the GPU's own NUMA node, both run their launches on
equal terms. The timing lock keeps the two from ever timing at once, so they never share the core.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import torch


def timing_cpu(device: str) -> int | None:
    """The core this process times on, the same in every worker on this GPU; None off a GPU or where not allowed.

    Each GPU of the host gets its own core (counted from the last: the first cores of a node take most interrupts
    and the parent's own threads), so evaluations timing on two GPUs at once never share one.
    """
    if device != "cuda" or not hasattr(os, "sched_setaffinity"):
        return None  # the CPU's interpreter timings launch nothing: a pinned thread only loses the idle core
    allowed = sorted(os.sched_getaffinity(0))
    near, rank = _gpu_placement()
    pool = [cpu for cpu in allowed if cpu in near] or allowed
    return pool[-1 - rank % len(pool)] if len(pool) > 1 else None


def _gpu_placement() -> tuple[set[int], int]:
    """The cores of the GPU's NUMA node, and the GPU's rank among the host's GPUs by PCI address (sysfs)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return set(), 0
    address = f"{getattr(props, 'pci_domain_id', 0):04x}:{bus:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"
    gpus = sorted(
        name for driver in ("nvidia", "amdgpu") for name in _listdir(f"/sys/bus/pci/drivers/{driver}") if ":" in name
    )
    rank = gpus.index(address) if address in gpus else 0
    try:
        text = Path(f"/sys/bus/pci/devices/{address}/local_cpulist").read_text().strip()
    except OSError:
        return set(), rank
    return parse_cpulist(text), rank


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def parse_cpulist(text: str) -> set[int]:
    """`0-3,8,10-11` as a set of core numbers."""
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


@contextmanager
def pinned(cpu: int | None):
    """Run the calling thread on `cpu` for the block (nothing when None), then where it was allowed before."""
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
