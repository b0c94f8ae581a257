"""The worker's timing loop on a GPU: the stream held after each repetition's draw and flush and released once its
call returns, its host times reported; the hold's fallback to a spin; the side-stream probe's reading.

Run with stand-ins for the device (CPU tensors, events that only log), so the order of what is queued is checked
on any machine; what the hold does to the timing is measured by bench/probes/launch_bound.py and
bench/reference_against_itself.py on a GPU, and the hold itself by tests/evaluators/test_stream_hold.py there.
"""

from contextlib import nullcontext
from types import SimpleNamespace

import pytest
import torch

from evaluators.worker import stream_hold
from evaluators.worker.device_handoff import HeldOutputs
from evaluators.worker.session import Session
from evaluators.worker.timing import Clocks, InputPool, TimingPlan, _loop, probe_reading


class LoggingClocks:
    """A GPU's clocks that queue nothing: each call is logged in order; the host clock ticks 1 us a reading."""

    device = "cuda"

    def __init__(self, log: list):
        self.log, self.tick = log, 0.0

    def now(self) -> float:
        self.tick += 1e-6
        return self.tick

    hold_kind = "logged"

    def hold_stream(self, cap_ms: float) -> None:
        self.log.append(f"hold {cap_ms}")

    def release_stream(self) -> None:
        self.log.append("release")

    def record(self, event) -> None:
        self.log.append(f"record {event}")

    def elapsed(self, start, end) -> float:
        return 0.25

    def sync(self) -> None:
        self.log.append("sync")


class Flush:
    def __init__(self, log: list):
        self.log = log

    def zero_(self) -> None:
        self.log.append("flush")


def _looped(lead_ms: float, reps: int = 3):
    log: list[str] = []

    def fresh_inputs(seed: int) -> list:
        log.append("draw")
        return [torch.full((4,), float(seed))]

    def call(args):
        log.append("call")
        return args[0] * 2

    plan = TimingPlan(0, reps, nonce=7, hold=False, flush_mb=1, timing_sets=2, held_device="cpu", lead_ms=lead_ms)
    starts, ends = [f"start{i}" for i in range(reps)], [f"end{i}" for i in range(reps)]
    facts, held = _loop(
        call, InputPool(fresh_inputs, 2), plan, LoggingClocks(log), 0, lambda on_device: nullcontext(), Flush(log),
        starts, ends, range(reps),
    )  # fmt: skip
    return facts, log


def test_the_stream_is_held_after_the_draw_and_flush_and_released_once_the_call_returns():
    """Draw, flush, hold, start, call, release, end: the device draws and flushes while the host issues the call,
    reaches the start event only once the call's launches are queued (no host gap of the call's between the events),
    and runs the call while the host holds the outputs. What a process that never holds, or releases early, overlaps is
    what every process overlaps, so the reference's harness credits none of it as room."""
    facts, log = _looped(lead_ms=0.2)
    for i in range(3):
        rep = log[i * 8 : (i + 1) * 8]
        assert rep == ["draw", "flush", "hold 0.2", f"record start{i}", "call", "release", f"record end{i}", "sync"]
    assert facts["times_ms"] == [0.25] * 3
    assert facts["stream_hold"] == "logged"
    # Host times per repetition: the call's issue (one tick), its preparation (draw, flush, hold, start).
    assert facts["issue_ms"] == pytest.approx([1e-3] * 3) and all(p > 0 for p in facts["prepare_ms"])


def test_no_lead_no_hold():
    facts, log = _looped(lead_ms=0.0)
    assert not [entry for entry in log if entry.startswith(("hold", "release"))]
    assert len(facts["issue_ms"]) == len(facts["prepare_ms"]) == 3


class LoggedHold:
    def __init__(self, log: list):
        self.log = log

    def hold(self, cap_ms: float) -> None:
        self.log.append(f"hold {cap_ms}")

    def release(self) -> None:
        self.log.append("release")


def test_clocks_load_the_released_hold_once_and_use_it(monkeypatch):
    log: list[str] = []
    loads = []
    monkeypatch.setattr(stream_hold, "load", lambda: loads.append(1) or LoggedHold(log))
    clocks = Clocks("cpu")
    for _ in range(2):
        clocks.hold_stream(0.5)
        clocks.release_stream()
    assert log == ["hold 0.5", "release"] * 2 and len(loads) == 1 and clocks.hold_kind == "released"


def test_clocks_spin_for_the_cap_where_the_hold_cannot_load(monkeypatch):
    """A ROCm build or a driver that cannot load the kernel: the cap is spun in full, as before the hold."""
    log: list[str] = []
    monkeypatch.setattr(stream_hold, "load", lambda: None)
    clocks = Clocks("cpu")
    clocks.spin_cycles = lambda ms: int(ms * 1000)
    clocks.spin = lambda cycles: log.append(f"spin {cycles}")
    clocks.hold_stream(0.5)
    clocks.release_stream()
    assert log == ["spin 500"] and clocks.hold_kind == "spin"


def test_side_stream_probe_reads_past_host_delays_but_not_past_work():
    idle = [10e-6, 11e-6, 10e-6, 40e-6, 10e-6, 12e-6, 10e-6]
    # An honest one-stream call: three of seven readings lengthened by the host alone (preempted, driver busy),
    # which a median would have counted as 30 us of work on another stream.
    delayed = [10e-6, 45e-6, 11e-6, 40e-6, 10e-6, 41e-6, 12e-6]
    assert probe_reading(idle, delayed) == 0.0
    # Work still running on another stream after the end event lengthens every reading.
    working = [t + 0.2e-3 for t in delayed]
    assert probe_reading(idle, working) == pytest.approx(0.2)


def _session() -> Session:
    """A worker's session on the CPU with a problem of one input; only what its timing command reads."""
    session = Session.__new__(Session)
    session.device, session.timing_cpu, session.timing_tensors = "cpu", None, None
    session.job = {"flush_mb": 1, "role": "candidate"}
    session.clocks, session.held, session.handed, session.copying = Clocks("cpu"), HeldOutputs("cpu"), [], set()
    session.counts = []
    session.runtime = SimpleNamespace(inputs=lambda seed, dist: [torch.full((4,), float(seed))])
    return session


def _time(session: Session, shape: int, first: int) -> None:
    command = {"cmd": "time", "shape": shape, "first": first, "reps": 2, "nonce": 1, "hold": True,
               "timing_sets": 4, "held_on_device": True}  # fmt: skip
    session.begin(command)
    session.time(lambda x: x * 2, command)


def test_a_shapes_input_sets_live_through_its_timing_commands_and_go_at_the_next_of_another_kind():
    """Made afresh for each block, 8 GiB of them went back to the driver between blocks and read 12 % slow in
    stretches on an H200 (docs/BENCHMARKS_HISTORY.md, level1/47). Given back inside the last block, they slowed the
    other side's block after it: they go as the side's next command of another kind begins."""
    session = _session()
    _time(session, 0, 0)
    shape, (pool, _flush) = session.timing_tensors
    kept = list(pool.alive)
    for between in ("drain", "check_reps"):  # the reference's, between its blocks
        session.begin({"cmd": between, "shape": 0})
    _time(session, 0, 2)
    assert session.timing_tensors[1][0] is pool and any(a is b for a in kept for b in pool.alive)
    _time(session, 0, 4)
    assert session.timing_tensors[1][0] is pool  # still held after the last: the other side's block may come next
    session.begin({"cmd": "probe", "shape": 0})
    assert session.timing_tensors is None
    _time(session, 0, 0)
    _time(session, 1, 0)  # another shape: its own sets
    assert session.timing_tensors[0] == 1 and session.timing_tensors[1][0] is not pool
    session.begin({"cmd": "room", "shape": 1})  # a timing cut short: nothing left for the next evaluation
    assert session.timing_tensors is None
