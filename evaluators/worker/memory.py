"""Device-memory planning, from a problem's input and output sizes and the device's free memory, before allocating.

The plan says what fits at all (one input set, its outputs and the cache-flush buffer), whether the reference and
the candidate can be timed side by side (each with its own input sets, outputs and flush buffer), how many fresh
input sets the timing loop keeps alive, whether the reference keeps its outputs on the device (or computes them again
when comparing), whether the candidate's inputs are copied or fingerprinted for the in-place check, whether its
outputs are handed over on the device, and how many elements are compared at a time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

GIB = 1 << 30
# Room for the CUDA contexts of the other worker and of a spare starting beside them (about 0.5 GiB each on an
# H100), the allocator's slack and kernels' own workspaces.
RESERVE_BYTES = 2 * GIB
# Elements compared at a time: float64 working copies of 32 M elements take 256 MiB each.
COMPARE_CHUNK = 32 << 20
MAX_TIMING_SETS = 4
# Host memory the kept timed outputs may take when they do not stay on the device.
HOST_KEEP_BYTES = 16 * GIB


@dataclass
class ShapeSizes:
    """Bytes of one call's inputs and of its outputs at one shape."""

    name: str
    input_bytes: int
    output_bytes: int


@dataclass
class MemoryPlan:
    """Where an evaluation's tensors live; `fits` False carries a one-line reason naming the bytes."""

    fits: bool
    reason: str
    free_bytes: int
    total_bytes: int
    timing_sets: int = 1
    side_by_side: bool = True
    expected_on_device: bool = True
    copy_inputs: bool = True
    retained: int = 4
    retained_on_device: bool = True
    handoff_on_device: bool = False
    compare_chunk: int = COMPARE_CHUNK

    def to_json(self) -> dict:
        """The plan as the job files and reports carry it."""
        return asdict(self)


def plan_memory(
    sizes: list[ShapeSizes], free_bytes: int, total_bytes: int, flush_bytes: int, trials: int, retained: int
) -> MemoryPlan:
    """Plan for the largest shape; `free_bytes` is what the device had before this evaluation allocated."""
    largest = max(sizes, key=lambda s: s.input_bytes + s.output_bytes)
    one_call = largest.input_bytes + largest.output_bytes
    needed = one_call + flush_bytes + RESERVE_BYTES
    if needed > free_bytes:
        reason = (
            f"shape {largest.name} needs {needed:,} bytes (inputs {largest.input_bytes:,}, outputs "
            f"{largest.output_bytes:,}, cache flush {flush_bytes:,}, reserve {RESERVE_BYTES:,}) but the device has "
            f"{free_bytes:,} bytes free of {total_bytes:,}"
        )
        return MemoryPlan(False, reason, free_bytes, total_bytes)
    room = free_bytes - needed
    expected_bytes = trials * sum(s.output_bytes for s in sizes)
    # The reference's outputs stay on the device only when they leave the candidate most of the room; otherwise
    # it computes each trial's again when comparing it, in the room its one call has.
    expected_on_device = expected_bytes <= room // 8
    if expected_on_device:
        room -= expected_bytes
    copy_inputs = largest.input_bytes <= room // 2
    # The candidate's trial outputs of one shape, handed over on the device (CUDA IPC), are freed before timing
    # starts, so they share the room that the timing sets and kept outputs use later.
    handoff_on_device = trials * largest.output_bytes <= room // 2
    # The two are timed in turns of a few repetitions, both holding their timing tensors throughout, where a second
    # call's inputs, outputs and flush buffer take at most half the room; otherwise one after the other.
    side_by_side = one_call + flush_bytes <= room // 2
    if side_by_side:
        room -= one_call + flush_bytes
    sides = 2 if side_by_side else 1
    # Kept timed outputs stay on the device, fewer of them if need be: through the host, a multi-GiB output
    # costs seconds per repetition. Only when not one fits do they go to the host.
    fit_on_device = room // 4 // sides // max(largest.output_bytes, 1)
    retained_on_device = fit_on_device >= 1
    if retained_on_device:
        retained = int(min(retained, fit_on_device))
        room -= sides * retained * largest.output_bytes
    else:
        retained = int(max(1, min(retained, HOST_KEEP_BYTES // max(largest.output_bytes, 1))))
    # A quarter of what is left: the other worker keeps its own tensors meanwhile.
    extra_sets = room // 4 // sides // max(largest.input_bytes, 1)
    return MemoryPlan(
        True,
        "",
        free_bytes,
        total_bytes,
        timing_sets=int(max(1, min(MAX_TIMING_SETS, 1 + extra_sets))),
        side_by_side=side_by_side,
        expected_on_device=expected_on_device,
        copy_inputs=copy_inputs,
        retained=retained,
        retained_on_device=retained_on_device,
        handoff_on_device=handoff_on_device,
    )


def unbounded_plan(retained: int) -> MemoryPlan:
    """The CPU's plan: host memory is not planned (problems' cpu shapes are small)."""
    return MemoryPlan(True, "", 0, 0, timing_sets=2, retained=retained)
