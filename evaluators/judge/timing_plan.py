"""The timing commands the parent sends for one shape, the same for the reference and the candidate.

A first warm-up call, timed by the parent, sizes the rest of the warm-up and the repetitions. The reference is also
timed with no repetition, so the parent can tell its fixed cost from its cost per repetition and calibrate its
clock around the candidate's command (judge/wall.py). Seeds, the sketch key and the repetitions to hold are drawn
here, by the parent, once the process is loaded, correct and warm. The parent holds the device's timing lock
around the commands, so its clock never counts a wait for it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from evaluators.judge.options import EvalOptions
from evaluators.judge.toolchain import device_kind
from evaluators.judge.wall import Span
from evaluators.worker.device_lock import device_key, device_lock

# Every timed output is held (and the parent picks which to check after the timing) when they fit in this much;
# beyond it the parent picks them before the timing and the sketches alone cover the rest.
HOLD_ALL_BYTES = 256 << 20
REHEARSAL_REPS = 5
_RANDOM = secrets.SystemRandom()


@dataclass
class ShapeTiming:
    """One shape's timing as the parent commanded and saw it."""

    reps: int
    hold: list[int] | None  # the repetitions held, None for every one
    nonce: int
    sketch_key: int
    facts: dict = field(default_factory=dict)  # the process's reply: times_ms, sketches, label
    span: Span | None = None
    side_stream_ms: float = 0.0
    compiled: dict | None = None
    fixed_s: float = 0.0  # the reference's timing command with no repetition, on the parent's clock
    baseline_times_ms: list[float] | None = None  # a fuller run's repetitions (from the cache) behind the median


def repetitions(estimate_ms: float, device: str, options: EvalOptions, memory: dict, shape: int, strict: bool):
    """(repetitions, hold every output?) for a call of `estimate_ms`."""
    if device_kind(device) == "cpu":
        return options.cpu_reps, True
    reps = int(min(max(options.rep_ms / estimate_ms, options.min_reps), options.max_reps))
    if strict:
        return min(reps, max(memory["retained"], 3)), True
    sizes = memory.get("sizes") or []
    output_bytes = sizes[shape]["output_bytes"] if shape < len(sizes) else 0
    return reps, reps * output_bytes <= HOLD_ALL_BYTES


def plan_timing(reps: int, hold_all: bool, retained: int) -> ShapeTiming:
    """Fresh seeds, key and held repetitions for one timing command."""
    hold = None if hold_all else sorted(_RANDOM.sample(range(reps), min(retained, reps)))
    return ShapeTiming(reps, hold, secrets.randbits(30), secrets.randbits(62))


def chosen_after(timing: ShapeTiming, retained: int, strict: bool) -> list[int]:
    """The held repetitions the parent checks element-wise, picked after the timing where every one was held."""
    if timing.hold is not None:
        return timing.hold
    if strict:
        return list(range(timing.reps))
    return sorted(_RANDOM.sample(range(timing.reps), min(retained, timing.reps)))


def warm_up(call, shape: int, device: str, options: EvalOptions, seed: int) -> tuple[float, int]:
    """Warm the process up at `shape`: (seconds per call on the parent's clock, warm-up calls made).

    A first call sizes the rest of the warm-up (on a GPU; the CPU's interpreter makes one). Each warm-up command's
    span also holds an input draw and the pipe: the difference of the two spans is calls alone.
    """
    first = call({"cmd": "warm", "shape": shape, "calls": 1, "seed": seed}, "warmed")
    warm = int(min(max(options.warmup_ms / max(first.span * 1e3, 1e-3), 1), 1000))
    if warm <= 1 or device_kind(device) == "cpu":
        return first.span, 1
    rest = call({"cmd": "warm", "shape": shape, "calls": warm - 1, "seed": seed}, "warmed")
    per_call = (rest.span - first.span) / (warm - 2) if warm > 2 else 0.0
    return (per_call if per_call > 0 else rest.span / (warm - 1)), warm


def timing_commands(call, shape: int, device: str, options: EvalOptions, memory: dict, strict: bool, reference=None):
    """Warm up, time and probe one shape; `reference` is None when this is the reference.

    `call(command, event)` sends one command and returns its Reply.
    """
    seed = secrets.randbits(30)
    with device_lock(options.cache_dir, device_key(device), options.lock_timeout_s):
        per_call, warm = warm_up(call, shape, device, options, seed)
        reps, hold_all = repetitions(max(per_call * 1e3, 1e-3), device, options, memory, shape, strict)
        timing = plan_timing(reps, hold_all, memory["retained"])
        command = {
            "cmd": "time",
            "shape": shape,
            "reps": reps,
            "nonce": timing.nonce,
            "sketch_key": timing.sketch_key,
            "hold": timing.hold,
            "last": reference is not None,  # the reference's last is the one with no repetition, below
        }
        # On a GPU, a rehearsal first, unchecked and untimed by anyone: the allocator's blocks, the events and the
        # sketch's weights exist before the parent's clock starts, on both sides alike.
        if device_kind(device) == "cuda":
            rehearsal = {"reps": min(reps, REHEARSAL_REPS), "nonce": secrets.randbits(30), "hold": [], "last": False}
            call(command | rehearsal, "timing")
        reply = call(command, "timing")
        timing.facts, timing.span = reply.meta, Span(reply.span, reps)
        if reference is None:
            timing.fixed_s = call(command | {"reps": 0, "hold": [], "last": True}, "timing").span
        if device_kind(device) == "cuda":
            probe = call({"cmd": "probe", "shape": shape, "seed": secrets.randbits(30)}, "probe")
            timing.side_stream_ms = probe.meta.get("side_stream_ms")
        if reference is None and options.compile_baseline:
            compiled = command | {"cmd": "time_compiled", "calls": warm, "seed": seed}
            timing.compiled = call(compiled, "compiled").meta
    return timing
