"""The timing commands the parent sends for one shape, the same for the reference and the candidate.

The reference's own estimate sizes the repetitions, and the candidate is timed with the same count and warm-up, so
the parent can calibrate its clock around the candidate's command by the reference's (judge/wall.py). Seeds,
the sketch key and the repetitions to hold are drawn here, by the parent, once the process is loaded and ready.
The parent holds the device's timing lock around the commands, so its clock never counts a wait for it.
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
_RANDOM = secrets.SystemRandom()


@dataclass
class ShapeTiming:
    """One shape's timing as the parent commanded and saw it."""

    reps: int
    warm_calls: int
    hold: list[int] | None  # the repetitions held, None for every one
    nonce: int
    sketch_key: int
    facts: dict = field(default_factory=dict)  # the process's reply: times_ms, sketches, label
    span: Span | None = None
    side_stream_ms: float = 0.0
    compiled: dict | None = None


def repetitions(estimate_ms: float, device: str, options: EvalOptions, memory: dict, shape: int, strict: bool):
    """(repetitions, warm-up calls, hold every output?) for a call of `estimate_ms`."""
    if device_kind(device) == "cpu":
        return options.cpu_reps, 1, True
    reps = int(min(max(options.rep_ms / estimate_ms, options.min_reps), options.max_reps))
    warm = int(min(max(options.warmup_ms / estimate_ms, 1), 1000))
    if strict:
        return min(reps, max(memory["retained"], 3)), warm, True
    sizes = memory.get("sizes") or []
    output_bytes = sizes[shape]["output_bytes"] if shape < len(sizes) else 0
    return reps, warm, reps * output_bytes <= HOLD_ALL_BYTES


def plan_timing(reps: int, warm: int, hold_all: bool, retained: int) -> ShapeTiming:
    """Fresh seeds, key and held repetitions for one timing command."""
    hold = None if hold_all else sorted(_RANDOM.sample(range(reps), min(retained, reps)))
    return ShapeTiming(reps, warm, hold, secrets.randbits(30), secrets.randbits(62))


def chosen_after(timing: ShapeTiming, retained: int, strict: bool) -> list[int]:
    """The held repetitions the parent checks element-wise, picked after the timing where every one was held."""
    if timing.hold is not None:
        return timing.hold
    if strict:
        return list(range(timing.reps))
    return sorted(_RANDOM.sample(range(timing.reps), min(retained, timing.reps)))


def timing_commands(call, shape: int, device: str, options: EvalOptions, memory: dict, strict: bool, plan=None):
    """Warm up, time and probe one shape; `plan` is the reference's timing (None: this is the reference).

    `call(command, event)` sends one command and returns its Reply.
    """
    if plan is None:
        estimate = call({"cmd": "estimate", "shape": shape, "seed": secrets.randbits(30)}, "estimate").meta["ms"]
        reps, warm, hold_all = repetitions(float(estimate), device, options, memory, shape, strict)
    else:
        reps, warm, hold_all = plan.reps, plan.warm_calls, plan.hold is None
    timing = plan_timing(reps, warm, hold_all, memory["retained"])
    with device_lock(options.cache_dir, device_key(device), options.lock_timeout_s):
        call({"cmd": "warm", "shape": shape, "calls": warm, "seed": secrets.randbits(30)}, "warmed")
        command = {
            "cmd": "time",
            "shape": shape,
            "reps": reps,
            "nonce": timing.nonce,
            "sketch_key": timing.sketch_key,
            "hold": timing.hold,
        }
        reply = call(command, "timing")
        timing.facts, timing.span = reply.meta, Span(reply.span, reps)
        if device_kind(device) == "cuda":
            probe = call({"cmd": "probe", "shape": shape, "seed": secrets.randbits(30)}, "probe")
            timing.side_stream_ms = probe.meta.get("side_stream_ms")
        if plan is None and options.compile_baseline:
            compiled = {"cmd": "time_compiled", "shape": shape, "seed": secrets.randbits(30)}
            timing.compiled = call(compiled | command | {"cmd": "time_compiled", "calls": warm}, "compiled").meta
    return timing
