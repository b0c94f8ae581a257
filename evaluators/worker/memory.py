"""Device-memory planning, from a problem's input and output sizes and the device's free memory, before allocating.

The plan, made as the reference starts, says what fits at all (one input set, its outputs, the cache-flush buffer
and the reference itself), whether the reference keeps its outputs on the device (or computes them again when
comparing), whether the candidate's inputs are copied or fingerprinted for the in-place check, whether its outputs
are handed over on the device, and how many elements are compared at a time. Each shape's timing is laid out later,
on the free memory read just before it (timing_layout): whether the reference and the candidate are timed side by
side (each with its own input sets, outputs and flush buffer), how many fresh input sets the timing loop keeps alive,
and how many timed outputs are held on the device.
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
    expected_on_device: bool = True
    copy_inputs: bool = True
    handoff_on_device: bool = False
    compare_chunk: int = COMPARE_CHUNK

    def to_json(self) -> dict:
        """The plan as the job files and reports carry it."""
        return asdict(self)


@dataclass
class TimingLayout:
    """One shape's timing in the room the device has: both sides at once or in turn, input sets, held outputs."""

    side_by_side: bool
    timing_sets: int
    retained: int
    retained_on_device: bool

    def to_json(self) -> dict:
        """The layout as the timing commands carry it."""
        return asdict(self)


def gib(n: int) -> str:
    """Bytes as a message gives them."""
    return f"{n / GIB:,.4g} GiB"


def plan_memory(
    sizes: list[ShapeSizes], free_bytes: int, total_bytes: int, flush_bytes: int, trials: int, reference_bytes: int = 0
) -> MemoryPlan:
    """Plan for the largest shape; `free_bytes` is what the device had free besides what the reference holds.

    `reference_bytes` is what the reference's process itself keeps (its model, its library's workspaces).
    """
    largest = max(sizes, key=lambda s: s.input_bytes + s.output_bytes)
    one_call = largest.input_bytes + largest.output_bytes
    needed = one_call + flush_bytes + reference_bytes + RESERVE_BYTES
    if needed > free_bytes:
        reason = (
            f"shape {largest.name} needs ~{gib(needed)} for one call's inputs ({gib(largest.input_bytes)}) and "
            f"outputs ({gib(largest.output_bytes)}), the cache flush ({gib(flush_bytes)}), the reference "
            f"({gib(reference_bytes)}) and a reserve ({gib(RESERVE_BYTES)}); the device has {gib(free_bytes)} free "
            f"of {gib(total_bytes)}"
        )
        return MemoryPlan(False, reason, free_bytes, total_bytes)
    room = free_bytes - needed
    expected_bytes = trials * sum(s.output_bytes for s in sizes)
    # The reference's outputs stay on the device only when they leave the candidate most of the room; otherwise
    # it computes each trial's again when comparing it, in the room its one call has.
    expected_on_device = expected_bytes <= room // 8
    if expected_on_device:
        room -= expected_bytes
    # The candidate's trial outputs of one shape, handed over on the device (CUDA IPC), are freed before timing
    # starts: the timing is laid out afterwards, on the memory free then (timing_layout).
    return MemoryPlan(
        True,
        "",
        free_bytes,
        total_bytes,
        expected_on_device=expected_on_device,
        copy_inputs=largest.input_bytes <= room // 2,
        handoff_on_device=trials * largest.output_bytes <= room // 2,
    )


def least_timing_bytes(sizes: ShapeSizes, flush_bytes: int) -> int:
    """What timing a shape needs free, one side at a time with one input set: a call's tensors, the flush, a reserve."""
    return sizes.input_bytes + sizes.output_bytes + flush_bytes + RESERVE_BYTES


def timing_layout(sizes: ShapeSizes, free_bytes: int, flush_bytes: int, retained: int) -> TimingLayout | None:
    """The timing of one shape in `free_bytes`; None where even the least (least_timing_bytes) does not fit.

    `free_bytes` is read with both workers' caches given back, their models and the reference's outputs alive.
    """
    room = free_bytes - least_timing_bytes(sizes, flush_bytes)
    if room < 0:
        return None
    one_call = sizes.input_bytes + sizes.output_bytes + flush_bytes
    # The two are timed in turns of a few repetitions, both holding their timing tensors throughout, where a second
    # call's inputs, outputs and flush buffer take at most half the room; otherwise one after the other.
    side_by_side = one_call <= room // 2
    if side_by_side:
        room -= one_call
    sides = 2 if side_by_side else 1
    # Kept timed outputs stay on the device, fewer of them if need be: through the host, a multi-GiB output costs
    # seconds per repetition. Only when not one fits do they go to the host. Both sides keep theirs until the
    # reference has checked them (the reference's are its answers to that check), even when timed one after the other.
    # Several take at most a quarter of the room; one a side, half of it: level1/34's 7 GiB output went to the host
    # under the quarter, and its evaluation took 53 s on an H100, 11 s of it the handoff and 13 s the check.
    output = max(sizes.output_bytes, 1)
    fit_on_device = max(room // 4 // 2 // output, 1 if 2 * output <= room // 2 else 0)
    retained_on_device = fit_on_device >= 1
    if retained_on_device:
        retained = int(min(retained, fit_on_device))
        room -= 2 * retained * sizes.output_bytes
    else:
        retained = int(max(1, min(retained, HOST_KEEP_BYTES // max(sizes.output_bytes, 1))))
    # A quarter of what is left: the device's other processes may grow meanwhile.
    extra_sets = room // 4 // sides // max(sizes.input_bytes, 1)
    return TimingLayout(
        side_by_side=side_by_side,
        timing_sets=int(max(1, min(MAX_TIMING_SETS, 1 + extra_sets))),
        retained=retained,
        retained_on_device=retained_on_device,
    )


def unbounded_plan() -> MemoryPlan:
    """The CPU's plan: host memory is not planned (problems' cpu shapes are small)."""
    return MemoryPlan(True, "", 0, 0)


def unbounded_layout(retained: int) -> TimingLayout:
    """The CPU's timing layout, where memory is not planned: both sides at once, two input sets."""
    return TimingLayout(side_by_side=True, timing_sets=2, retained=retained, retained_on_device=True)
