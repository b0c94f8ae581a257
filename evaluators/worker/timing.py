"""Worker-side timing: clocks bound before candidate code, cache flush, fresh inputs every repetition.

The same routine times the reference (in its own process) and the candidate, so their ratio is fair. Every timed
repetition gets inputs drawn anew (new contents, new allocations, a few sets alive in a shuffled order), so no
cache keyed on pointers, shapes or sampled elements can replay an earlier answer; a reservoir sample of the
repetitions' outputs, drawn after each one ran, is kept for the reference to check on those very inputs.
"""

from __future__ import annotations

import fcntl
import random
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from evaluators.worker.integrity import check
from evaluators.worker.trials import flatten_outputs


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


@dataclass
class TimingPlan:
    """One shape's timing: budgets from the job and the memory plan's limits."""

    warmup_ms: float
    rep_ms: float
    min_reps: int
    max_reps: int
    cpu_reps: int
    flush_mb: int
    timing_sets: int
    retain: int  # outputs kept for the after-the-fact check; 0 for the reference
    retain_all: bool = False  # strict: every timed output is kept (the repetition count is capped to fit)
    retained_device: str = "cpu"


def rep_seed(nonce: int, shape: int, rep: int) -> int:
    """The seed of repetition `rep`'s inputs: the reference redraws them from it to check the output."""
    return (nonce * 1_000_003 + shape * 10_007 + rep) % (2**31 - 1)


def time_calls(call, fresh_inputs, plan: TimingPlan, clocks: Clocks, mark, nonce: int, shape: int, keep):
    """Time `call(args)` on fresh inputs per repetition; returns timing facts and {rep: outputs} kept for checking.

    `keep(on_device)` is the context the kept copies are made in (the candidate's pool of held outputs).
    """
    timer = _CudaTimer if clocks.device == "cuda" else _InterpreterTimer
    return timer(call, fresh_inputs, plan, clocks, mark, nonce, shape, keep).run()


class _Reservoir:
    """A uniform sample of `size` repetitions' outputs, kept for the reference to check.

    On the device each output is kept or not only after it was produced (reservoir sampling). Kept on the host,
    every copy costs a transfer, so the repetitions are drawn at random when timing starts instead (from the OS's
    entropy, which nothing the candidate saw decides): exactly `size` copies.
    """

    def __init__(self, size: int, keep_all: bool, device: str, reps: int, on_host: bool, keep):
        self.size, self.keep_all, self.device, self.keep = size, keep_all, device, keep
        self.kept: dict[int, list[torch.Tensor]] = {}
        self.rng = random.Random()  # seeded from the OS
        self.chosen = set(self.rng.sample(range(reps), min(size, reps))) if on_host and not keep_all else None
        self.seen = 0

    def offer(self, rep: int, output) -> None:
        self.seen += 1
        if self.chosen is not None:
            if rep in self.chosen:
                self._store(rep, output)
            return
        if self.keep_all or len(self.kept) < self.size:
            self._store(rep, output)
            return
        slot = self.rng.randrange(self.seen)
        if slot < self.size:
            del self.kept[self.rng.choice(list(self.kept))]
            self._store(rep, output)

    def _store(self, rep: int, output) -> None:
        with self.keep(self.device != "cpu"):
            self.kept[rep] = flatten_outputs(output, self.device)


class _Timer:
    def __init__(self, call, fresh_inputs, plan: TimingPlan, clocks: Clocks, mark, nonce: int, shape: int, keep):
        self.call, self.fresh_inputs, self.plan, self.clocks, self.mark = call, fresh_inputs, plan, clocks, mark
        self.nonce, self.shape, self.keep = nonce, shape, keep
        self.alive: list[list] = []  # input sets kept allocated, so addresses come from a shuffled pool
        self.rng = random.Random()
        self.drawn = 0
        self.seed = 0

    def next_inputs(self) -> list:
        """A fresh input set, never drawn before in this evaluation, dropping a random older one; its seed in .seed."""
        if len(self.alive) >= self.plan.timing_sets:
            self.alive.pop(self.rng.randrange(len(self.alive)))
        self.seed = rep_seed(self.nonce, self.shape, self.drawn)
        self.drawn += 1
        args = self.fresh_inputs(self.seed)
        self.alive.append(args)
        return args

    def wall_window(self, calls: int) -> None:
        """Calls between two marks the parent timestamps: its own clock cross-checks ours."""
        sets = self.alive or [self.next_inputs()]
        self.clocks.sync()
        self.mark("wall:begin")
        for i in range(calls):
            self.call(sets[i % len(sets)])
        self.clocks.sync()
        self.mark("wall:end")
        check()


class _InterpreterTimer(_Timer):
    def run(self):
        reservoir = _Reservoir(
            max(self.plan.retain, self.plan.cpu_reps), True, "cpu", self.plan.cpu_reps, False, self.keep
        )
        times, seeds = [], []
        self.call(self.next_inputs())  # warm-up (the interpreter's first call parses the kernel)
        for rep in range(self.plan.cpu_reps):
            args = self.next_inputs()
            seeds.append(self.seed)
            start = self.clocks.now()
            output = self.call(args)
            times.append((self.clocks.now() - start) * 1e3)
            check()
            if self.plan.retain:
                reservoir.offer(rep, output)
        wall_calls = 2
        self.wall_window(wall_calls)
        facts = {"times_ms": times, "side_stream_ms": 0.0, "wall_calls": wall_calls, "label": "interpreter"}
        return facts | {"seeds": seeds}, reservoir.kept


class _CudaTimer(_Timer):
    def run(self):
        plan, clocks = self.plan, self.clocks
        # Zeroing a buffer twice the largest last-level cache (MI300X: 256 MB Infinity Cache) evicts every input.
        flush = torch.empty(plan.flush_mb << 20, dtype=torch.int8, device="cuda")
        estimate_ms = self._estimate(flush)
        for _ in range(max(1, int(plan.warmup_ms / estimate_ms))):
            self.call(self.alive[-1])
        reps = min(max(int(plan.rep_ms / estimate_ms), plan.min_reps), plan.max_reps)
        if plan.retain_all:
            reps = min(reps, max(plan.retain, 3))
        seeds = []
        on_host = plan.retained_device == "cpu"
        reservoir = _Reservoir(plan.retain, plan.retain_all, plan.retained_device, reps, on_host, self.keep)
        starts = [clocks.Event(enable_timing=True) for _ in range(reps)]
        ends = [clocks.Event(enable_timing=True) for _ in range(reps)]
        clocks.sync()
        for rep in range(reps):
            args = self.next_inputs()
            seeds.append(self.seed)
            flush.zero_()
            clocks.record(starts[rep])
            output = self.call(args)
            clocks.record(ends[rep])
            check()  # nothing the candidate left behind may run in the next draw or flush, untimed
            if plan.retain:
                reservoir.offer(rep, output)
            del output
        clocks.sync()
        times = [clocks.elapsed(s, e) for s, e in zip(starts, ends, strict=True)]
        side_stream_ms = self._side_stream_probe(flush)
        wall_calls = min(max(int(50 / estimate_ms), 3), 500)
        self.wall_window(wall_calls)
        facts = {"times_ms": times, "side_stream_ms": side_stream_ms, "wall_calls": wall_calls, "label": "cuda-events"}
        return facts | {"seeds": seeds}, reservoir.kept

    def _estimate(self, flush) -> float:
        """Milliseconds per call from a few event-timed calls (each on fresh inputs): sizes the warm-up and reps."""
        clocks = self.clocks
        spans = []
        for _ in range(3):
            args = self.next_inputs()
            flush.zero_()
            start, end = clocks.Event(enable_timing=True), clocks.Event(enable_timing=True)
            clocks.record(start)
            self.call(args)
            clocks.record(end)
            clocks.sync()
            spans.append(clocks.elapsed(start, end))
        return max(statistics.median(spans), 1e-3)

    def _side_stream_probe(self, flush) -> float:
        """Milliseconds of device work still running after the timed stream's end event: work on other streams."""
        clocks = self.clocks
        idle = []
        for _ in range(5):
            start = clocks.now()
            clocks.sync()
            idle.append(clocks.now() - start)
        leftover = []
        for i in range(5):
            flush.zero_()
            end = clocks.Event(enable_timing=True)
            self.call(self.alive[i % len(self.alive)])
            clocks.record(end)
            clocks.wait_event(end)
            start = clocks.now()
            clocks.sync()
            leftover.append(clocks.now() - start)
        return max(0.0, (statistics.median(leftover) - statistics.median(idle)) * 1e3)
