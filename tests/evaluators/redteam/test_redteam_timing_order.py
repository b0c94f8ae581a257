"""Red team: the timing stage's command order, the parent's clock and the reference's drain (judge/timing_plan.py,
judge/wall.py, worker/device_idle.py, worker/session.py).

The attacks here do not make the candidate's own timer lie about its calls in a way one command shows; they steer
what the parent compares it with:

- `free_before_reference` (answered: the reference's drain times a read of device memory until it is within 8 % of the
  device's mark of trusted reads (begun long enough after the candidate's last stop), and after a stop that waited for a
  system call the parent waits in proportion; worker/device_idle.py, judge/pause.py): memory a process gives back is
  cleared by the driver after the call returns, about 2 ms per GiB, and meanwhile another process's reads of device
  memory run 13-14 % slower (bench/probes/free_trace.py, H200). The drain's round trips do not see it (it is the
  driver's work, not a context's), and the candidate chooses when it happens: right after the last synchronize of its
  rehearsal and of its blocks that come just before the reference's (ABBA: block b odd is candidate then reference, and
  block b + 1 starts with the reference again). Giving 24 GiB back costs 9-23 ms of host time inside the candidate's
  span, but only in 7 of its 16 blocks: the parent's figure is the median over blocks, so it never sees that cost; 15 of
  the reference's 16 blocks ran slow (1.13x, no flag). Given back from a thread just after the reply, the host time is
  not in the span at all; made before every reply, so that no read is ever quiet, it is in every block's span.
- `few_reps_forge` (answered: the jitter is spread over the repetitions a call of the parent's figure is given): the
  candidate's warm-up span alone sets its repetitions (timing_plan.repetitions). A warm-up that sleeps 50 ms a call gets
  it min_reps = 20 repetitions, 2 blocks, and JITTER_MS / reps = 0.05 ms a call of allowance instead of 0.002 ms at 500;
  with HARNESS_SLACK's 15 % of the harness's work (the 512 MB flush, the draw, the copy: a few tenths of a ms a
  repetition) a short call's timer may claim a fraction of it.
- `outlast_the_drain` (answered: the reference is not timed beside work that outlasts its wait, and the candidate whose
  killing ends that work gets a runtime_error; test_device_busy.py): the drain gave up after DEADLINE_S (2 s). Work the
  candidate queues after the last synchronize of its command, sized to end just after that deadline plus the reference's
  block (a spin on the device's global timer), overlaps the reference's timing command and is gone before the
  candidate's next command: contrary to docs/CONTRACTS.md ("work that outlasts it falls into the candidate's next
  command"). Time-sliced, it barely moves the reference's events (a 20 ms leftover moved its median 0.25 % on an H100),
  but every repetition of the reference then waits for the candidate's time slice on the host's side: the reference's
  spans, from which the harness's cost per repetition is calibrated (wall.harness_ms), grow; the candidate's parent
  figure is its span less that harness, and HARNESS_SLACK grows with it, so a forged timer passes.

These drive the real time_side_by_side and verdicts with fake processes on a simulated device clock, as
test_redteam_strict_timing.py does: the physics (the scrub's 14 % for 60 ms, a time slice's wait per repetition)
is the model's, from the measurements named above or marked as assumed. The same attacks as candidates for a real
GPU are in timing/ and are run by the `gpu` tests at the end (not run here: no GPU).
"""

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from evaluators import EvalOptions, evaluate
from evaluators.judge import quiet_reads, timing_plan, verdicts, wall
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.timing_plan import DeviceBusy, time_side_by_side
from evaluators.worker import device_idle
from evaluators.worker.device_idle import DEADLINE_S
from tests.evaluators.conftest import PROBLEM, candidate
from tests.evaluators.redteam.test_redteam import false_accept
from tests.evaluators.test_side_by_side import Reply, where

HERE = Path(__file__).parent
# Each timing command's own cost (the pipe, the last sync, the reply), and of it the pipe's (a ping's): the medians of
# the reference's command with no repetition and of its ping on KernelBench's level 1 on an H100, within those of
# levels 2 and 3 (bench/identity_journals.py on bench/data/identity_l{1,2,3}_h100_904511c.jsonl.gz).
FIXED_S, PIPE_S = 0.306e-3, 0.091e-3
CHECK_S = 3e-3  # the reference's check of one block
OPEN_S = 0.25e-3  # assumed: the reference's IPC open of one repetition's outputs, in its pin of the candidate's
# bench/data/free_settle_h200.json: 24 GiB given back slowed a memory-bound sum by 13.7-13.9 % for 58-66 ms; the
# free itself took 9-23 ms of host time, taking it again 3-11 ms. Per GiB, taken as proportional (assumed):
SCRUB_S_PER_GIB, SCRUB_SLOWDOWN, FREE_COST_S_PER_GIB = 0.060 / 24, 1.14, 0.030 / 24
READ_MS = 0.06  # the drain's read of 256 MiB (worker/device_idle.py, READ_BYTES) on an H200, quiet
SWITCH_S = wall.SWITCH_MS * 1e-3  # the device's switch between the two contexts, as judge/wall.py credits it
SLICE_MS = 1.0  # assumed: what a repetition of the reference waits on the host for the other context's time slice


@dataclass
class Leftover:
    """Work on the device that a candidate's command left behind."""

    until: float  # on the simulated clock (s)
    seen_by_drain: bool  # a context's work (the drain's round trips come back slow) or the driver's (not)
    slowdown: float = 1.0  # of the device time of memory-bound repetitions that overlap it (events and spans)
    wait_ms: float = 0.0  # host time each overlapping repetition waits for it (spans only: time slicing)
    candidates: bool = True  # in the candidate's context: its next command's synchronize waits it out


@dataclass
class Device:
    now: float = 0.0
    leftover: Leftover | None = None
    lag_s: float = 0.0  # host time a candidate's thread spends in a system call after its reply (the stop waits it)
    open_s: float = OPEN_S  # the reference's IPC open of one repetition of the candidate's outputs
    deaths: list = field(default_factory=list)  # when a process of the candidate's ended (a timer's SIGKILL)
    log: list = field(default_factory=list)
    armed: "Worker | None" = None  # the reference, its watch armed on the candidate's marks (window_watch.start)

    def active(self) -> Leftover | None:
        return self.leftover if self.leftover and self.now < self.leftover.until else None


class Worker:
    """A worker on the simulated device: its spans are its calls and the harness, slowed by what overlaps them."""

    def __init__(self, device: Device, name: str, call_ms: float, harness_ms: float, warm_ms: float | None = None,
                 seal_ms: float = 0.0, pin_ms: float = 0.0):  # fmt: skip
        self.device, self.name, self.call_ms, self.harness_ms = device, name, call_ms, harness_ms
        self.warm_ms = call_ms if warm_ms is None else warm_ms  # what a warm-up call costs (its span)
        self.seal_ms = seal_ms  # its seal's work per repetition, beyond the pipe (the outputs' handoff)
        self.pin_ms = pin_ms  # as the reference: its pin's digest of one repetition's outputs (worker/pins.py)
        # The reference's wait for the device (worker/device_idle.Drain) timing its read on the simulated device:
        # slowed, as every read is, by the driver's clearing of memory given back (a leftover the drain's round trips
        # do not see). Made as the worker starts, on a quiet device.
        self.drain = device_idle.Drain(None, self.read, 140 * device_idle.CLEAR_S_PER_GIB * device_idle.CLEAR_MARGIN)
        self.watch_from: float | None = None  # as the reference: when its watch over the host windows began
        self.marked: bool | None = None  # as the reference, armed: whether the candidate's mark came

    def post(self, command: dict) -> None:
        """As the reference: a command with no reply, its watch (worker/window_watch.py), begun now; or, armed on the
        candidate's marks ("on"), as the candidate's mark of its block's end comes, else as the pin does."""
        self.device.log.append((self.name, command["cmd"], None, None, round(self.device.now, 4)))
        if "on" in command:
            self.device.armed, self.marked = self, False
        else:
            self.watch_from = self.device.now

    def watched(self, theirs: bool) -> dict:
        """The watch's end: what its watcher did not run, the candidate's work left on the device since it began (a
        context's, not the driver's) and, on the candidate's block, the switch from its context."""
        if self.watch_from is None:
            return {}
        left, start = self.device.leftover, self.watch_from
        marked, self.watch_from, self.marked = self.marked, None, None
        ran = max(0.0, min(left.until, self.device.now) - start) if left and left.candidates else 0.0
        seen = {"away_ms": (ran + (SWITCH_S if theirs else 0.0)) * 1e3}
        return seen if marked is None else seen | {"marked": marked}

    def read(self) -> float:
        left = self.device.active()
        ms = READ_MS * (left.slowdown if left and not left.seen_by_drain else 1.0)
        self.device.now += 2 * ms * 1e-3  # its untimed read, then the timed one
        return ms

    def claims(self, command: dict, real_ms: list[float]) -> list[float]:
        return real_ms

    def after(self, command: dict) -> float:
        """Host seconds spent after the command's repetitions, inside its span (and what it leaves on the device)."""
        return 0.0

    def before_mark(self, command: dict) -> float:
        """Host seconds between the repetitions' last synchronize and the block's mark of its end (an honest 0)."""
        return 0.0

    def marks(self) -> bool:
        """Whether it writes the mark of its block's end (an honest one does)."""
        return True

    def __call__(self, command: dict, event: str) -> Reply:
        device, cmd = self.device, command["cmd"]
        device.log.append((self.name, cmd, command.get("first"), command.get("reps"), round(device.now, 4)))
        started = device.now
        if cmd == "drain":
            left = device.active()
            outlasts = bool(left and left.seen_by_drain and left.until - device.now > DEADLINE_S)
            if left and left.seen_by_drain:
                device.now += min(left.until - device.now, DEADLINE_S)
            busy_ms = (device.now - started) * 1e3
            self.drain.reads, trusted = [], []
            if not outlasts:
                trusted = self.drain.settle(command["mark_ms"], command["quiet_since"])
            meta = {"waited_ms": (device.now - started) * 1e3, "busy_ms": busy_ms, "idle": not outlasts,
                    "reads_ms": self.drain.reads, "trusted_ms": trusted}  # fmt: skip
            return Reply("drained", meta, device.now - started)
        if cmd == "check_reps":
            device.now += CHECK_S
            return Reply("comparison", {"mismatch": None}, CHECK_S)
        if cmd == "pin":
            if self.marked is False and self.watch_from is None:  # armed, and no mark came: the pin wakes it
                self.device.armed, self.watch_from = None, device.now
            theirs = "reps" in command  # the candidate's outputs, opened through CUDA IPC; or its own ("own")
            pinned = len(command["reps"] if theirs else command["own"])
            opened_s = pinned * device.open_s if theirs else 0.0
            device.now += PIPE_S + opened_s  # the opens are the host's and the driver's: the device runs on meanwhile
            left = device.active()
            if theirs and left and left.candidates:  # its digests wait for the work the candidate left on the device
                device.now = left.until
            device.now += pinned * self.pin_ms * 1e-3
            meta = {"opened": pinned if theirs else 0, "opened_bytes": 0, "open_ms": opened_s * 1e3}
            return Reply("pinned", meta | self.watched(theirs), device.now - started)
        left = device.active()
        if left and left.candidates and self.name == "candidate":  # its first synchronize waits its own work out
            device.now = left.until
        if cmd == "warm":
            device.now += FIXED_S + command["calls"] * self.warm_ms * 1e-3
            return Reply("warmed", {}, device.now - started)
        if cmd == "probe":
            device.now += FIXED_S
            return Reply("probe", {"side_stream_ms": 0.0}, device.now - started)
        if cmd == "ping":
            device.now += PIPE_S
            return Reply("pong", {}, device.now - started)
        device.now += FIXED_S / 2 + (SWITCH_S if self.name == "candidate" and command["hold"] else 0.0)
        times = []
        for _ in range(command["reps"]):
            left = device.active()
            slow, wait = (left.slowdown, left.wait_ms) if left else (1.0, 0.0)
            times.append(self.call_ms * slow)
            device.now += (self.call_ms * slow + self.harness_ms * slow + wait) * 1e-3
        if command.get("mark"):
            device.now += self.before_mark(command)
            if device.armed is not None and self.name == "candidate" and self.marks():  # its mark wakes the watch
                device.armed.watch_from, device.armed.marked, device.armed = device.now, True, None
        device.now += FIXED_S / 2 + self.after(command)
        reps = command["reps"]
        meta = {
            "times_ms": self.claims(command, times),
            "handed": list(range(reps)) if command["hold"] else [],
            "label": "cuda-events",
            "issue_ms": [0.02] * reps,
            "prepare_ms": [0.04] * reps,
        }
        reply = Reply("timing", meta, device.now - started)
        if "then" in command:  # the seal, right behind: the pipe and its work per repetition
            sealing = PIPE_S + reps * self.seal_ms * 1e-3
            device.now += sealing
            reply.then = Reply("sealed", {"handed": meta.pop("handed")}, sealing)
        return reply


def block_index(command: dict) -> int | None:
    """Which block a timing command is (None: the rehearsal), as the candidate's process can tell from its plan."""
    return None if not command["hold"] else round(command["first"] / max(command["reps"], 1))


@pytest.fixture
def cuda_lock(monkeypatch):
    monkeypatch.setattr(timing_plan, "device_key", lambda device: "cuda-fake")


@pytest.fixture
def device(monkeypatch) -> Device:
    """The simulated device, whose clock the parent's and the reference's waits move."""
    return simulated(monkeypatch, Device())


def simulated(monkeypatch, device: Device) -> Device:
    """`device` made the clock of the parent's and the reference's waits."""

    def sleep(seconds: float) -> None:
        device.now += seconds

    monkeypatch.setattr(timing_plan, "_SLEEP", sleep)
    monkeypatch.setattr(timing_plan, "_CLOCK", lambda: device.now)
    monkeypatch.setattr(quiet_reads, "_reads", {})  # the parent's trusted reads: this device's alone
    monkeypatch.setattr(device_idle, "_SLEEP", sleep)
    monkeypatch.setattr(device_idle, "_NOW", lambda: device.now)
    return device


class Stopper:
    """judge/pause.py's Stopper on the simulated device: its stop waits out a thread's system call, and says so."""

    def __init__(self, device: Device):
        self.device, self.lag_s, self.ended = device, 0.0, 0
        self.stopped_at = 0.0

    def stop(self):
        self.device.now += self.device.lag_s
        self.lag_s, self.device.lag_s = self.device.lag_s, 0.0
        self.stopped_at = self.device.now

    def resume(self):
        """As judge/pause.py's: the processes that ended while stopped (the device's record of deaths) are counted."""
        self.ended += sum(self.stopped_at <= at < self.device.now for at in self.device.deaths)


CHANNEL = (1, 3)  # the candidate's marks, as process.Worker.marks names them (a serial, a descriptor; unread here)
SIDE_BY_SIDE = {"side_by_side": True, "timing_sets": 2, "retained": 64, "retained_on_device": True}


def timing_args(tmp_path, device: Device, layout: dict = SIDE_BY_SIDE, strict: bool = False) -> tuple:
    """The options, and time_side_by_side's arguments after the two processes, for one shape on the simulated "cuda"."""
    options = EvalOptions(cache_dir=tmp_path, strict=strict)
    memory = {"sizes": [{"name": "s", "input_bytes": 1 << 20, "output_bytes": 1 << 20}]}

    @contextmanager
    def quiet():
        stopper = Stopper(device)
        stopper.stop()
        yield stopper

    return options, (0, "cuda", options, memory, lambda: layout, quiet, where)


def judged(tmp_path, reference: Worker, candidate: Worker, layout: dict = SIDE_BY_SIDE,
           strict: bool = False) -> EvalResult:  # fmt: skip
    """One shape timed on "cuda" as evaluate() does (again where disputed), and its verdict."""
    options, args = timing_args(tmp_path, reference.device, layout, strict)
    timings = time_side_by_side(reference, candidate, *args, post=reference.post, channel=CHANNEL)
    if wall.judge_timing(timings[1], timings[0], timing_plan.honest_reps("cuda", options), "cuda").disputed:
        timings = time_side_by_side(reference, candidate, *args, post=reference.post, channel=CHANNEL)
    reference_timing, timing = timings
    result = EvalResult(status="correct", device="cuda")
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    meta = {"shapes": [{"roofline": None, "dtype": "fp32"}], "device_name": "NVIDIA H200"}
    assert verdicts.apply_shape_timing(result, 0, timing, reference_timing, meta, options)
    return verdicts.summarize(result, options)


def codes(result: EvalResult) -> list[str]:
    return [f.code for f in result.flags]


# --- free_before_reference ------------------------------------------------------------------------------------------

CALL_MS, HARNESS_MS = 0.2, 0.3  # a 0.2 ms memory-bound kernel on both sides; 500 repetitions, 16 blocks


class FreesBeforeTheReference(Worker):
    """Honest calls and an honest timer; gives memory back after the last synchronize of its rehearsal (8 GiB: the
    reference's block 0 comes next) and of its odd blocks up to 13 (16 GiB: the reference's blocks b and b + 1 come
    next). 7 of 16 blocks pay for the free: under half, so the median over blocks never sees its cost. The sizes are
    what a real candidate would tune from the host time between its own commands."""

    def gib(self, command) -> int:
        index = block_index(command)
        return 8 if index is None else 16 if index % 2 == 1 and index <= 13 else 0

    def after(self, command):
        gib = self.gib(command)
        if gib:
            cost = gib * FREE_COST_S_PER_GIB
            self.device.leftover = Leftover(self.device.now + cost + gib * SCRUB_S_PER_GIB, False, SCRUB_SLOWDOWN,
                                            0.0, False)  # fmt: skip
            return cost
        return 0.0


class FreesAsItReplies(FreesBeforeTheReference):
    """The same frees, from a thread, just after the reply: their host time falls in the stop, not the span."""

    def after(self, command):
        gib = self.gib(command)
        if gib:
            cost = gib * FREE_COST_S_PER_GIB
            self.device.lag_s = cost
            self.device.leftover = Leftover(self.device.now + cost + gib * SCRUB_S_PER_GIB, False, SCRUB_SLOWDOWN,
                                            0.0, False)  # fmt: skip
        return 0.0


class FreesBeforeEveryReply(FreesBeforeTheReference):
    """16 GiB given back before every reply, so that no read the reference's drain times is ever quiet."""

    def gib(self, command) -> int:
        return 16


def device_mark() -> float | None:
    """The mark the parent keeps for the simulated device (judge/quiet_reads.py)."""
    return quiet_reads.mark("cuda-fake")


def made_while_clearing(device: Device) -> Worker:
    """The reference, its drain's first reads made while memory the candidate gave back as it loaded is cleared."""
    device.leftover = Leftover(1e9, False, SCRUB_SLOWDOWN, 0.0, False)
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    device.leftover = None
    return reference


def test_an_honest_candidate_as_fast_as_the_reference_reads_as_fast(tmp_path, cuda_lock, device):
    result = judged(tmp_path, Worker(device, "reference", CALL_MS, HARNESS_MS),
                    Worker(device, "candidate", CALL_MS, HARNESS_MS))  # fmt: skip
    assert codes(result) == [] and result.speedup == pytest.approx(1.0)


@pytest.mark.parametrize("attacker", [FreesBeforeTheReference, FreesAsItReplies])
def test_memory_given_back_before_the_references_blocks_does_not_raise_the_baseline(tmp_path, cuda_lock, device,
                                                                                    attacker):  # fmt: skip
    """Before the answer (the guard after a stop that waited, and the drain's reads): 1.13x, no flag."""
    result = judged(tmp_path, Worker(device, "reference", CALL_MS, HARNESS_MS),
                    attacker(device, "candidate", CALL_MS, HARNESS_MS))  # fmt: skip
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), (
        result.speedup, result.baseline_ms, result.runtime_ms)  # fmt: skip
    reads = [entry for entry in device.log if entry[:2] == ("reference", "drain")]
    assert reads


def test_memory_given_back_before_every_reply_costs_more_than_it_gains(tmp_path, cuda_lock, device):
    """Every read slow from the reference's start (its mark then is too): the frees' host time, in every block
    now, is what the parent's clock puts in the candidate's figure."""
    result = judged(tmp_path, made_while_clearing(device), FreesBeforeEveryReply(device, "candidate", CALL_MS,
                                                                                  HARNESS_MS))  # fmt: skip
    assert codes(result) == ["timing_disputed"] and result.speedup < 1.0, (codes(result), result.speedup)


def test_memory_given_back_as_it_replies_is_waited_out_where_no_read_was_quiet(tmp_path, cuda_lock, device):
    """Every read the drain times is slow, its mark too, and nothing of the frees is in the candidate's span:
    the parent's wait after a stop that waited for a system call is what answers (1.12x without it)."""
    result = judged(tmp_path, made_while_clearing(device), FreesAsItReplies(device, "candidate", CALL_MS, HARNESS_MS))
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), result.speedup


# --- few_reps_forge -------------------------------------------------------------------------------------------------

SHORT_MS, SHORT_HARNESS_MS = 0.1, 0.4  # a 0.1 ms kernel; the flush, the draw, the copy and the digest 0.4 ms


class Forger(Worker):
    """Runs its calls at their real speed, its timer claims `share` of them."""

    def __init__(self, *args, share: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.share = share

    def claims(self, command, real_ms):
        return [t * self.share for t in real_ms]


def test_a_forger_with_an_honest_warm_up_is_disputed(tmp_path, cuda_lock, device):
    reference = Worker(device, "reference", SHORT_MS, SHORT_HARNESS_MS)
    result = judged(tmp_path, reference, Forger(device, "candidate", SHORT_MS, SHORT_HARNESS_MS, share=0.2))
    assert codes(result) == ["timing_disputed"]


def test_a_slow_warm_up_does_not_widen_what_the_parents_clock_allows(tmp_path, cuda_lock, device):
    reference = Worker(device, "reference", SHORT_MS, SHORT_HARNESS_MS)
    forger = Forger(device, "candidate", SHORT_MS, SHORT_HARNESS_MS, warm_ms=50.0, share=0.2)
    result = judged(tmp_path, reference, forger)
    # Its warm-up no longer sets its count: its rehearsal does, held to the parent's clock (0.9 ms a repetition).
    assert len(forger_blocks(device)) >= timing_plan.TIMING_BLOCKS
    assert "timing_disputed" in codes(result) or result.speedup < 1.2, (codes(result), result.speedup)


def forger_blocks(device: Device) -> list:
    return [entry for entry in device.log if entry[0] == "candidate" and entry[1] == "time" and entry[2] is not None
            and entry[3] and entry[3] > 5]  # fmt: skip


class AnswersFaster(Forger):
    """Answers each timing command `saved_s` sooner than the reference's process does (the command's own work, all
    but the pipe, skipped in its own process), its timer claiming `share` of its calls."""

    def __init__(self, *args, saved_s: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.saved_s = saved_s

    def after(self, command):
        return -self.saved_s if command["cmd"] == "time" and command["hold"] and command["reps"] else 0.0


def _parent_ms(tmp_path, device, candidate: Worker) -> float:
    """The parent's figure per call for `candidate`'s timing beside an honest reference (judge/wall.py)."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    options, args = timing_args(tmp_path, device)
    ours, theirs = time_side_by_side(reference, candidate, *args, post=reference.post, channel=CHANNEL)
    return wall.judge_timing(theirs, ours, timing_plan.honest_reps("cuda", options), "cuda").parent_ms


def test_a_candidate_answering_commands_faster_is_credited_no_more_than_a_share_of_its_calls(tmp_path, cuda_lock,
                                                                                            device):  # fmt: skip
    """Skipping all of a command's own work takes the parent's figure below the real call by CREDIT_SHARE at most.

    Before, the reference's whole fixed cost was taken off each block: with 2 ms saved a command, this 0.2 ms call's
    timer could claim 40 % of it unflagged (2.5x).
    """
    honest = _parent_ms(tmp_path, device, Worker(device, "candidate", CALL_MS, HARNESS_MS))
    faster = _parent_ms(tmp_path, device, AnswersFaster(device, "candidate", CALL_MS, HARNESS_MS,
                                                        saved_s=FIXED_S - PIPE_S, share=1.0))  # fmt: skip
    assert honest == pytest.approx(CALL_MS, rel=0.05)
    # Its real calls are honest's: the figure may fall below them by the share, and no further.
    assert faster >= (1 - wall.CREDIT_SHARE) * CALL_MS - 1e-9, (honest, faster)
    forger = AnswersFaster(device, "candidate", CALL_MS, HARNESS_MS, saved_s=FIXED_S - PIPE_S, share=0.4)
    result = judged(tmp_path, Worker(device, "reference", CALL_MS, HARNESS_MS), forger)
    assert "timing_disputed" in codes(result), (codes(result), result.speedup)


# --- heavy_harness: the harness's own work, credited at the reference's cost ----------------------------------------

# level1/19_ReLU on an H200 (bench/data/identity_l1_h200_7422b3e.jsonl.gz, `harness_ms` and `seal_ms`): a 3.04 ms
# call, 3.39 ms of harness work a repetition left in the timing command (drawing a 6 GiB input, the flush), and a seal
# of 3.55 ms a repetition when it digested as large an output, now the reference's pin's per repetition pinned; the
# seal itself now hands the outputs over only (assumed: 0.02 ms a repetition). Before, on an H100 (904511c), the
# harness had backed out at 11.1 ms a repetition beside a 4.44 ms call, with the copy and the digest in the timing
# command; each output is now held as made (worker/trials.hold_as_made), and the copy is gone.
HEAVY_CALL_MS, HEAVY_HARNESS_MS, SEAL_MS, PIN_MS = 3.04, 3.39, 0.02, 3.55


HEAVY_ALLOWANCE = pytest.mark.xfail(strict=True, reason="open: wall.slack_ms allows a timer HARNESS_SLACK (5 %) of "
                                    "the harness's work per repetition, which on KernelBench's memory-bound shapes is "
                                    "about the call's: a timer claiming 0.86 of the call reads 1.16x with no flag "
                                    "(at 15 %, with the copy and the digest in the command, 1.79x on an H100's "
                                    "figures; red team of 2026-11-28)")  # fmt: skip


def heavy_reference(device: Device) -> Worker:
    return Worker(device, "reference", HEAVY_CALL_MS, HEAVY_HARNESS_MS, seal_ms=SEAL_MS, pin_ms=PIN_MS)


@HEAVY_ALLOWANCE
def test_a_timer_forging_within_the_allowance_beside_a_heavy_harness_is_disputed(tmp_path, cuda_lock, device):
    """Real calls as fast as the reference's, a timer claiming 0.86 of them."""
    forger = Forger(device, "candidate", HEAVY_CALL_MS, HEAVY_HARNESS_MS, seal_ms=SEAL_MS, share=0.86)
    result = judged(tmp_path, heavy_reference(device), forger)
    assert "timing_disputed" in codes(result) or result.speedup < 1.1, (codes(result), result.speedup)


def test_an_honest_candidate_beside_a_heavy_harness_reads_as_fast(tmp_path, cuda_lock, device):
    """Its seal as the reference's, its outputs pinned as the reference's are, with IPC opens on top."""
    honest = Worker(device, "candidate", HEAVY_CALL_MS, HEAVY_HARNESS_MS, seal_ms=SEAL_MS)
    result = judged(tmp_path, heavy_reference(device), honest)
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), (codes(result), result.speedup)


class FinishesInTheSeal(Worker):
    """Its calls do `share` of the work and its timer says so; the rest is done in the seal."""

    def __init__(self, *args, share: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.seal_ms += (1 - share) * self.call_ms
        self.call_ms *= share


@pytest.mark.parametrize("share", [0.5, 0.11])
def test_work_moved_out_of_the_calls_into_the_seal_counts_as_theirs(tmp_path, cuda_lock, device, share):
    """At 0.11, with the digest taken in the candidate's own seal, the seal had the reference's digest as room: its
    kernel finishing the answers took the digest as it wrote them, and read 9.1x with no flag."""
    mover = FinishesInTheSeal(device, "candidate", HEAVY_CALL_MS, HEAVY_HARNESS_MS, seal_ms=SEAL_MS, share=share)
    result = judged(tmp_path, heavy_reference(device), mover)
    assert "timing_disputed" in codes(result) or result.speedup < 1.1, (codes(result), result.speedup)


class LeavesItRunning(Worker):
    """Its calls do `share` of the work and its timer says so; kernels it queued before its seal's reply finish the
    answers on the device meanwhile, so the outputs the check reads are right."""

    def __init__(self, *args, share: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.rest_ms = (1 - share) * self.call_ms
        self.call_ms *= share

    def __call__(self, command: dict, event: str) -> Reply:
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and command["hold"] and command["reps"]:
            rest_s = command["reps"] * self.rest_ms * 1e-3
            self.device.leftover = Leftover(self.device.now + rest_s, True)
        return reply


@pytest.mark.parametrize("open_s", [OPEN_S, 20e-3])
@pytest.mark.parametrize("share", [0.5, 0.11])
def test_work_left_running_past_the_seal_delays_the_pin_and_counts_as_the_calls(tmp_path, cuda_lock, device, share,
                                                                                open_s):  # fmt: skip
    """The reference's pin of the picked outputs comes right behind the seal and its digests wait for that work: the
    pin's span beyond the reference's pin of its own is the candidate's (judge/wall.py). Outputs that take the
    reference 20 ms each to open (huge allocations, say) hide the work behind the opens, which are credited no more
    than honest ones take."""
    device.open_s = open_s
    leaver = LeavesItRunning(device, "candidate", HEAVY_CALL_MS, HEAVY_HARNESS_MS, seal_ms=SEAL_MS, share=share)
    result = judged(tmp_path, heavy_reference(device), leaver)
    assert "timing_disputed" in codes(result) or result.speedup < 1.1, (codes(result), result.speedup)


class SlowsItsRehearsal(LeavesItRunning):
    """As LeavesItRunning, with a rehearsal slowed to a 60 ms repetition: given 20 repetitions, blocks of five, every
    one pinned; each IPC open the reference's pin credits is time its work runs on (a red team of the pin)."""

    def after(self, command):
        return 0.3 if command["cmd"] == "time" and not command["hold"] and command["reps"] else 0.0


@pytest.mark.parametrize("strict", [False, True])
def test_work_hidden_behind_the_opens_of_whole_blocks_is_credited_as_an_honest_calls_are(tmp_path, cuda_lock, device,
                                                                                          strict):  # fmt: skip
    """Every repetition pinned (few repetitions, or a strict run pinning all) credited an open each, 0.35 ms in which
    90 % of a 0.2 ms call left running finished: 3.1x unflagged, and 5x in a strict run. A strict run now pins as many
    as any run, and the opens are credited only for as many repetitions as an honest call of the block's length has
    pinned."""
    device.open_s = 0.35e-3
    leaver = SlowsItsRehearsal(device, "candidate", CALL_MS, HARNESS_MS, share=0.1)
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS, pin_ms=0.05)
    result = judged(tmp_path, reference, leaver, strict=strict)
    blocks = [entry for entry in device.log if entry[:2] == ("candidate", "time") and entry[3] and entry[2] is not None]
    assert len(blocks) <= 2 * 4 + 2  # its slowed rehearsal bought it few repetitions: blocks of five
    # Disputed or not (its timer may claim what the parent's clock will see), the parent's figure is the real one.
    assert result.speedup < 1.1, (codes(result), result.speedup)


class QueuesBeforeItsReply(LeavesItRunning):
    """As LeavesItRunning, but the rest is queued after its block's last synchronize, before its reply: the harness
    runs in its own process, so it can (a red team of 2026-11-28, from the code)."""

    def after(self, command):
        if command["cmd"] == "time" and command["hold"] and command["reps"]:
            self.device.leftover = Leftover(self.device.now + command["reps"] * self.rest_ms * 1e-3, True)
        return 0.0

    def __call__(self, command: dict, event: str) -> Reply:
        return Worker.__call__(self, command, event)


@pytest.mark.parametrize("leaver", [LeavesItRunning, QueuesBeforeItsReply], ids=["after_its_seal", "before_its_reply"])
def test_work_left_through_the_host_windows_counts_as_the_calls(tmp_path, cuda_lock, device, leaver):
    """Work left on the device runs through the block's host windows (the end of its command, its seal, the pipes
    and the pin's opens), where the device idles in the reference's own blocks. Seen only where it delayed the pin,
    and then only in the parent's figure, below which a timer may claim the allowance, 0.18 of this 0.2 ms call's
    work read 1.22x with no flag (a red team read 1.07-2.5x by where the work is queued and the call's length). The
    reference's watch over the windows sees it, and it counts into the calls' times (judge/wall.watch_counted_ms)."""
    device.open_s = wall.OPEN_MS * 1e-3
    candidate = leaver(device, "candidate", CALL_MS, HARNESS_MS, share=0.82)
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS, pin_ms=0.05)
    result = judged(tmp_path, reference, candidate)
    assert result.speedup < 1.05 and "side_stream" in codes(result), (codes(result), result.speedup)


class FinishesBeforeTheWatch(Worker):
    """Its calls do `share` of the work and its timer says so; right after its block's last synchronize it queues the
    rest, sized to end within the end of its own command (the harness reading its events, writing the reply) and the
    watch's jitter: begun by the parent as the reply arrived, the watch never saw that window (a red team of
    2026-11-28, from the code; on an H200 a 0.5 ms spin there went unseen in every block, bench/probes/window_reach.py).
    The watch is now armed on its marks before the block and begins at the block's mark."""

    def __init__(self, *args, share: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.rest_ms = (1 - share) * self.call_ms
        self.call_ms *= share

    def after(self, command):
        if command["cmd"] == "time" and command["hold"] and command["reps"]:
            self.device.leftover = Leftover(self.device.now + command["reps"] * self.rest_ms * 1e-3, True)
        return 0.0


WINDOW_CALL_MS, WINDOW_REPS = 0.05, 31  # a 0.05 ms call: 500 repetitions, 31 a block


def _window_share() -> float:
    """The share of its work a candidate does in its calls when the rest fits the end of its command and the jitter."""
    unseen_ms = FIXED_S / 2 * 1e3 + wall.WATCH_JITTER_MS
    return 1 - 0.95 * unseen_ms / (WINDOW_CALL_MS * WINDOW_REPS)


def test_work_that_ends_before_the_reply_counts_as_the_calls(tmp_path, cuda_lock, device):
    """Before the mark, it read 1.14x unflagged here (the red team 1.19-1.57x on 0.03-0.05 ms calls on an H200)."""
    reference = Worker(device, "reference", WINDOW_CALL_MS, HARNESS_MS, pin_ms=0.05)
    candidate = FinishesBeforeTheWatch(device, "candidate", WINDOW_CALL_MS, HARNESS_MS, share=_window_share())
    result = judged(tmp_path, reference, candidate)
    assert result.speedup < 1.05 or codes(result), (codes(result), result.speedup)


class DelaysItsMark(FinishesBeforeTheWatch):
    """As FinishesBeforeTheWatch, but it queues the rest before its mark and marks the block's end only once the rest
    is done: the watch then never sees it, and the wait is in the block's span on the parent's clock."""

    def before_mark(self, command):
        return command["reps"] * self.rest_ms * 1e-3 if command["hold"] and command["reps"] else 0.0

    def after(self, command):
        return 0.0


def test_a_mark_delayed_past_the_work_gains_no_more_than_a_forged_claim(tmp_path, cuda_lock, device):
    """The mark's delay is the span's, so the parent's figure holds the work: what it may still gain is the
    allowance a timer claiming the same share has below that figure (HEAVY_ALLOWANCE, still open), and no more."""
    share = _window_share()
    reference = Worker(device, "reference", WINDOW_CALL_MS, HARNESS_MS, pin_ms=0.05)
    delayed = judged(tmp_path, reference, DelaysItsMark(device, "candidate", WINDOW_CALL_MS, HARNESS_MS, share=share))
    reference = Worker(device, "reference", WINDOW_CALL_MS, HARNESS_MS, pin_ms=0.05)
    forged = judged(tmp_path, reference, Forger(device, "candidate", WINDOW_CALL_MS, HARNESS_MS, share=share))
    assert delayed.speedup <= forged.speedup * 1.005, (codes(delayed), delayed.speedup, forged.speedup)


def test_an_honest_candidate_watched_through_its_host_windows_reads_as_fast(tmp_path, cuda_lock, device):
    """Its watch sees the switch from its context and nothing else: no work counted, no flag."""
    device.open_s = wall.OPEN_MS * 1e-3
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS, pin_ms=0.05)
    result = judged(tmp_path, reference, Worker(device, "candidate", CALL_MS, HARNESS_MS))
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), (codes(result), result.speedup)
    assert result.shapes[0].wall.watch_excess_ms == pytest.approx(0.0, abs=1e-9)


# --- outlast_the_drain ----------------------------------------------------------------------------------------------

LONG_MS, LONG_HARNESS_MS = 1.0, 0.3  # a 1 ms kernel: the slow warm-up's allowance alone does not pass the forger


class OutlastsTheDrain(Forger):
    """A slow warm-up (2 blocks), a timer claiming half, and after its rehearsal and its block 1 (the ones the
    reference's blocks follow) a spin that ends DEADLINE_S plus the reference's block later."""

    cover_s = 0.1  # about the reference's block (a real candidate: its own block's span)

    def after(self, command):
        if block_index(command) in (None, 1):
            self.device.leftover = Leftover(self.device.now + 1e-3 + DEADLINE_S + self.cover_s, True, 1.0, SLICE_MS)
        return 0.0


def test_a_forger_claiming_half_of_a_long_call_is_disputed_even_with_a_slow_warm_up(tmp_path, cuda_lock, device):
    reference = Worker(device, "reference", LONG_MS, LONG_HARNESS_MS)
    forger = Forger(device, "candidate", LONG_MS, LONG_HARNESS_MS, warm_ms=50.0, share=0.5)
    assert codes(judged(tmp_path, reference, forger)) == ["timing_disputed"]


def test_work_that_outlasts_the_drain_is_not_timed_beside(tmp_path, cuda_lock, device):
    """The reference's wait gives up at DEADLINE_S with the work still there: no reference block is timed beside it
    (judge/evaluate.py then kills the candidate's processes and weighs whose work it was: test_device_busy.py)."""
    reference = Worker(device, "reference", LONG_MS, LONG_HARNESS_MS)
    forger = OutlastsTheDrain(device, "candidate", LONG_MS, LONG_HARNESS_MS, warm_ms=50.0, share=0.5)
    with pytest.raises(DeviceBusy):
        judged(tmp_path, reference, forger)
    drains = [i for i, entry in enumerate(device.log) if entry[:2] == ("reference", "drain")]
    assert not any(entry[:2] == ("reference", "time") for entry in device.log[drains[-1] + 1 :])


# --- the same attacks on a GPU --------------------------------------------------------------------------------------

TIMING = HERE / "timing"


# Attacks that are another's with one line changed, and files appended after it: (its file, the line, the line in its
# place, the files).
VARIANTS = {
    "finish_before_watch": ("leave_through_windows", "SHARE = 0.5", "SHARE = 0.86", ()),
    "flood_the_marks": ("leave_through_windows", "SHARE = 0.5", "SHARE = 0.86", ("flood_the_marks",)),
}


FORGED_TIMERS = ["few_reps_forge", "outlast_the_drain", "leave_through_windows", "finish_before_watch",
                 "flood_the_marks", "unheld_room", "defer_into_hold"]  # fmt: skip


def _honest_and_attacked(cache_dir, attack: str):
    """good_triton, and good_triton with timing/shared.py and the attack appended: they differ only in the attack."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    name, line, changed, after = VARIANTS.get(attack, (attack, "", "", ()))
    code = (TIMING / f"{name}.py").read_text()
    if line:
        assert line in code, (name, line)
        code = code.replace(line, changed)
    parts = [candidate("good_triton"), (TIMING / "shared.py").read_text(), code]
    parts += [(TIMING / f"{more}.py").read_text() for more in after]
    options = EvalOptions(cache_dir=cache_dir, timeout_s=300)
    return [evaluate(str(PROBLEM), source, "cuda", options) for source in (parts[0], "\n\n".join(parts))]


def _raised_baselines(honest, attacked) -> list[tuple]:
    """The shapes whose reference baseline read 5 % or more above the honest run's, beside the attack."""
    return [
        (shape.name, clean.baseline_ms, shape.baseline_ms)
        for clean, shape in zip(honest.shapes, attacked.shapes, strict=True)
        if clean.baseline_ms and shape.baseline_ms >= 1.05 * clean.baseline_ms
    ]


@pytest.mark.gpu
@pytest.mark.parametrize("attack", ["free_before_reference", "copy_engine_after_reply"])
def test_gpu_work_left_for_the_references_block_does_not_raise_the_baseline(cache_dir, attack):
    honest, attacked = _honest_and_attacked(cache_dir, attack)
    assert honest.status == attacked.status == "correct", attacked.message
    assert not false_accept(attacked) or attacked.speedup < 1.05 * honest.speedup, (honest.speedup, attacked.speedup)
    assert not _raised_baselines(honest, attacked), _raised_baselines(honest, attacked)


@pytest.mark.gpu
@pytest.mark.parametrize("attack", FORGED_TIMERS)
def test_gpu_a_forged_timer_is_not_believed(cache_dir, attack):
    """Not correct (outlast_the_drain's work ends with its processes: a runtime_error), flagged, or no faster than the
    same kernel honestly timed."""
    honest, attacked = _honest_and_attacked(cache_dir, attack)
    believed = attacked.status == "correct" and false_accept(attacked)
    assert not believed or attacked.runtime_ms >= 0.9 * honest.runtime_ms, (
        attacked.status, honest.runtime_ms, attacked.runtime_ms, [f.code for f in attacked.flags])  # fmt: skip


@pytest.mark.gpu
def test_gpu_a_helper_killed_by_its_timer_while_stopped_is_flagged_or_harmless(cache_dir):
    """timing/timer_killed_child.py: the helpers' deaths fall in the reference's turn, after its drain."""
    honest, attacked = _honest_and_attacked(cache_dir, "timer_killed_child")
    assert honest.status == attacked.status == "correct", attacked.message
    flagged = "side_stream" in {flag.code for flag in attacked.flags}
    raised = _raised_baselines(honest, attacked)
    assert flagged or not raised, raised
