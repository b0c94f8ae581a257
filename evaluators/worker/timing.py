"""Worker-side timing: clocks bound before candidate code, cache flush, fresh inputs every repetition.

The same routine times the reference (in its own process) and the candidate, so the parent can calibrate its own
clock around the candidate's timing command by the reference's (judge/wall.py).
Every timed repetition gets inputs drawn anew from the nonce the parent sent with its block's command (new contents,
new allocations, a few sets alive in a shuffled order), so no cache keyed on pointers, shapes or sampled elements can
replay an earlier answer. Every timed repetition's outputs are held for the reference's check (judge/timing_plan.py
says when): nothing in this process decides or knows how an output will be checked. They are held as the call made
them, copied only where the call reuses a buffer or returns a view, and then inside the repetition's time
(trials.hold_as_made). The block's seal, the command right behind it, hands them over; on the device the reference then
pins the ones it will check (worker/pins.py).

On a GPU each repetition draws the inputs, flushes, then holds the stream, so the call's launches are queued before
the device reaches the start event and the events time the device's work. The host releases the hold as soon as the
call returns (worker/stream_hold.py), then holds the outputs and queues the end event while the device works; the
parent's `lead_ms` caps it, and is spun in full where that hold cannot load. Unheld, a call that issues slower than
the device runs it is timed at its host thread's speed, and that speed differed up to 2.6x between fresh processes on
one pinned core of an H100 host (bench/probes/launch_bound.py): the same reference, in two processes, 1.6-1.8x
apart. Work the call starts on a stream of its own can run from the draw's end to the start event: the flush, and the
hold's wait for the rest of the call's issue, host time on the parent's clock (docs/CONTRACTS.md).
Each call's host times are reported beside its time: issuing the call, preparing it (the draw, the flush, the hold and
the start event), holding its outputs up to the end event, and the whole repetition to its last synchronize.
"""

from __future__ import annotations

import gc
import random
import time
from dataclasses import dataclass

import torch

from evaluators.worker import stream_hold
from evaluators.worker.integrity import check
from evaluators.worker.trials import OutputReused, flatten_outputs, hold_as_made


class Clocks:
    """Timer and synchronization functions captured before the candidate is imported.

    A candidate that later replaces time.perf_counter or torch.cuda.Event.elapsed_time changes nothing here; one
    that reaches into this object can change what its process reports, never the parent's clock around it.
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
            self.spin = torch.cuda._sleep  # a kernel that busy-waits for a number of the device's clock cycles
            self.cycles_per_ms: float | None = None
        else:
            self.sync = lambda: None
        self.stream_hold: stream_hold.StreamHold | None = None
        self.hold_kind: str | None = None  # "released" (worker/stream_hold.py) or "spin", once the first hold is made

    def hold_stream(self, cap_ms: float) -> None:
        """Hold the stream until `release`, or for `cap_ms` at most; a spin of `cap_ms` where the hold cannot load."""
        if self.hold_kind is None:
            self.stream_hold = stream_hold.load()
            self.hold_kind = "released" if self.stream_hold else "spin"
        if self.stream_hold:
            self.stream_hold.hold(cap_ms)
        else:
            self.spin(self.spin_cycles(cap_ms))

    def release_stream(self) -> None:
        """End the hold: the repetition's launches and its end event are queued."""
        if self.stream_hold:
            self.stream_hold.release()

    def spin_cycles(self, ms: float) -> int:
        """Clock cycles of the device's spin that last about `ms` (calibrated once by events)."""
        if self.cycles_per_ms is None:
            start, end = self.Event(enable_timing=True), self.Event(enable_timing=True)
            self.spin(10_000)  # its first launch loads the kernel
            self.record(start)
            self.spin(1_000_000)
            self.record(end)
            self.wait_event(end)
            self.cycles_per_ms = 1_000_000 / max(self.elapsed(start, end), 1e-3)
        return int(ms * self.cycles_per_ms)


@dataclass
class TimingPlan:
    """One block of a shape's timing, as the parent commanded it: its repetitions, their nonce, whether to hold."""

    first: int  # the first repetition's number: a shape's repetitions come in blocks, numbered throughout
    reps: int
    nonce: int  # this block's: its repetitions' inputs follow from it
    hold: bool  # every repetition's outputs copied and held (False: the rehearsal's and other unchecked runs)
    flush_mb: int
    timing_sets: int
    held_device: str  # where held outputs live ("cpu" when the device has no room)
    lead_ms: float = 0.0  # the cap of the stream's hold before each repetition's call (cuda; 0: no hold)
    copy_all: bool = False  # every held output copied: the call reuses its buffers (trials.hold_as_made)


def rep_seed(nonce: int, shape: int, offset: int) -> int:
    """The seed of the inputs of its block's repetition `offset`: the reference redraws them to check the output."""
    return (nonce * 1_000_003 + shape * 10_007 + offset) % (2**31 - 1)


class InputPool:
    """Fresh input sets, never drawn before in this evaluation; a few stay alive so addresses come from a pool."""

    def __init__(self, fresh_inputs, sets: int):
        self.fresh_inputs, self.sets = fresh_inputs, sets
        self.alive: list[list] = []
        self.rng = random.Random()

    def draw(self, seed: int) -> list:
        if len(self.alive) >= self.sets:
            self.alive.pop(self.rng.randrange(len(self.alive)))
        args = self.fresh_inputs(seed)
        self.alive.append(args)
        return args


def warm_up(call, fresh_inputs, clocks: Clocks, calls: int, seed: int) -> None:
    """`calls` calls on one input set: compilation, autotuning and clocks settle before anything is timed."""
    args = fresh_inputs(seed)
    for _ in range(calls):
        call(args)
        check()
    clocks.sync()


def flush_size(asked_mb: int | None, device: str) -> int:
    """The cache flush's megabytes: `asked_mb`, or twice the device's L2 as torch reports it (512 on ROCm).

    Twice the cache is what evicting it takes. More is harness work the parent credits at the reference's cost, which
    a candidate that flushes only the cache, in its own process, would be credited and not pay: 512 MB (sized for
    MI300X's 256 MB Infinity Cache, which torch does not report) took 0.16 ms a repetition on an H200, whose L2 is
    50 MB (docs/CONTRACTS.md).
    """
    if asked_mb is not None or device != "cuda":
        return asked_mb or 0
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
    return 512 if torch.version.hip or not l2 else -(-2 * l2 // (1 << 20))


def timing_tensors(fresh_inputs, plan: TimingPlan, device: str) -> tuple[InputPool, torch.Tensor | None]:
    """A shape's input sets and its cache-flush buffer (None off the GPU), for all of its timing commands.

    A worker keeps them from a shape's first timing command to its last (worker/session.py). Made anew for each
    command, they went back to the driver between blocks whenever the pool of held copies was released (its
    torch.cuda.empty_cache), and were allocated again for the next block: on an H200, level1/47's 8 GiB input then
    read 12 % slow in stretches, in either process (docs/BENCHMARKS_HISTORY.md).
    """
    flush = torch.empty(plan.flush_mb << 20, dtype=torch.int8, device="cuda") if device == "cuda" else None
    return InputPool(fresh_inputs, plan.timing_sets), flush


def time_reps(call, fresh_inputs, plan: TimingPlan, clocks: Clocks, shape: int, keep, tensors=None, ended=None):
    """Time `call(args)` once per repetition on fresh inputs; (facts, {rep: outputs} held for the parent's check).

    `keep(on_device)` is the context a held copy, where one is made, is made in (the pool of held outputs); `tensors`,
    the shape's timing_tensors where the caller keeps them across commands (made here otherwise). `ended()`, where
    given, is called on a GPU right after the last repetition's synchronize (the block's end marked to the parent).
    """
    pool, flush = tensors if tensors is not None else timing_tensors(fresh_inputs, plan, clocks.device)
    cuda = flush is not None
    starts = [clocks.Event(enable_timing=True) for _ in range(plan.reps)] if cuda else []
    ends = [clocks.Event(enable_timing=True) for _ in range(plan.reps)] if cuda else []
    numbers = range(plan.first, plan.first + plan.reps)
    clocks.sync()
    # No collector pauses inside the parent's clock: a process holding many objects (the candidate's, with its
    # integrity snapshot) would pay more for them than the reference's does.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            return _loop(call, pool, plan, clocks, shape, keep, flush, starts, ends, numbers, ended)
        except OutputReused:
            pass  # the outputs held as made go with the exception, before the block is timed again
        # The block again, every output copied: its first run stays in the side's span on the parent's clock, a slow
        # block of one shape for a call that reuses its buffers (the worker copies all at the shape from then on).
        plan.copy_all = True
        clocks.sync()
        return _loop(call, pool, plan, clocks, shape, keep, flush, starts, ends, numbers, ended)
    finally:
        if collecting:
            gc.enable()


def _loop(call, pool: InputPool, plan: TimingPlan, clocks: Clocks, shape: int, keep, flush, starts, ends,
          numbers: range, ended=None):  # fmt: skip
    """The repetitions themselves (see time_reps)."""
    cuda = flush is not None
    lead = cuda and plan.lead_ms > 0
    times, issued, prepared, holding, whole, held = [], [], [], [], [], {}
    spans = None if plan.copy_all else []  # the memory of the outputs held as made (trials.hold_as_made)

    def copy(tensor):
        with keep(plan.held_device != "cpu"):
            return flatten_outputs([tensor], plan.held_device)[0]

    for i, rep in enumerate(numbers):
        began = clocks.now()
        args = pool.draw(rep_seed(plan.nonce, shape, i))
        if cuda:
            flush.zero_()
            if lead:
                # Held after the draw and the flush, released as the call returns: the device draws and flushes while
                # the host issues the call, and runs the call while the host holds its outputs, on both sides. The
                # hold's word is in the candidate's process, so a side may release it early or never queue the hold;
                # what that overlaps must be overlapped by every side, or the parent credits the reference's serial
                # harness as room: held before the draw, a red team that queued no hold read 1.5-1.6x on a call of
                # 0.98x; held to the end event, an honest copy of a reused buffer read timing_disputed.
                clocks.hold_stream(plan.lead_ms)
            clocks.record(starts[i])
            calling = clocks.now()
            output = call(args)
            returned = clocks.now()
            if lead:
                clocks.release_stream()
            issued.append((returned - calling) * 1e3)
            prepared.append((calling - began) * 1e3)
            made, kept = _held_now(output, plan, spans, copy)
            clocks.record(ends[i])
            holding.append((clocks.now() - returned) * 1e3)
        else:
            calling = clocks.now()
            output = call(args)
            made, kept = _held_now(output, plan, spans, copy)
            times.append((clocks.now() - calling) * 1e3)
        if plan.hold:
            # Held to the end of the loop on both sides, so each repetition's outputs are new allocations in either.
            held[rep] = [tensor if tensor is not None else copy(out) for tensor, out in zip(kept, made, strict=True)]
        del output
        # Each repetition ends with the device idle: a candidate that synchronizes inside its call then costs the
        # parent's clock what the reference's does, whatever the overlap of the harness's own work would have been.
        clocks.sync()
        if cuda:
            whole.append((clocks.now() - began) * 1e3)
    if cuda and ended is not None:
        # Before anything else: the reference's watch over the block's host windows begins at this mark, so work
        # queued from here on runs while it watches (worker/window_watch.py, wait_for_mark).
        ended()
    # On a GPU the shape's probe, after its last block, checks (side_stream_ms): inside a timing command the check's
    # host time was a fixed cost per command the parent credits at the reference's (judge/wall.py), which a candidate
    # that empties its watch would be credited and not pay. Off the GPU no flag rests on the parent's clock.
    if not cuda:
        check()
    if cuda:
        times = [clocks.elapsed(s, e) for s, e in zip(starts, ends, strict=True)]
    if not cuda:
        return {"times_ms": times, "label": "interpreter"}, held
    host = {"issue_ms": issued, "prepare_ms": prepared, "hold_ms": holding, "whole_ms": whole}
    return {"times_ms": times} | host | {"stream_hold": clocks.hold_kind, "label": "cuda-events"}, held


def _held_now(output, plan: TimingPlan, spans: list | None, copy) -> tuple[list, list]:
    """(the call's outputs, what is held of them before its time is taken: trials.hold_as_made), empty unheld."""
    if not plan.hold:
        return [], []
    made = flatten_outputs(output, copy=False)
    return made, hold_as_made(made, plan.held_device, spans, copy)


PROBE_SAMPLES = 7


def side_stream_ms(call, inputs: list, clocks: Clocks, flush_mb: int) -> float:
    """Milliseconds of device work still running after the timed stream's end event: work on other streams."""
    flush = torch.empty(flush_mb << 20, dtype=torch.int8, device="cuda")
    idle = []
    for _ in range(PROBE_SAMPLES):
        start = clocks.now()
        clocks.sync()
        idle.append(clocks.now() - start)
    leftover = []
    for _ in range(PROBE_SAMPLES):
        flush.zero_()
        end = clocks.Event(enable_timing=True)
        call(inputs)
        clocks.record(end)
        clocks.wait_event(end)
        start = clocks.now()
        clocks.sync()
        leftover.append(clocks.now() - start)
    check()
    return probe_reading(idle, leftover)


def probe_reading(idle_s: list[float], leftover_s: list[float]) -> float:
    """Work left on other streams (ms), from the synchronize's host time when idle and right after the end event.

    The least of each: a host delay (the thread preempted, the driver busy) only lengthens a reading, while work
    still running on another stream lengthens every one. Medians of five read up to 29 us on honest one-stream
    references on an H100 (docs/BENCHMARKS_HISTORY.md, "The side-stream probe's floor"), enough to count as work.
    """
    return max(0.0, (min(leftover_s) - min(idle_s)) * 1e3)
