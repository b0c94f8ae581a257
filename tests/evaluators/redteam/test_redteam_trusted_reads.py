"""Red team: the reference's trusted reads (worker/device_idle.Drain.settle, judge/quiet_reads.py) and the waits the
parent asks for before each timing command (judge/timing_plan.py: `drain`, `asked`, `reference_timed`, `stopped`, the
guard).

Built on the simulated device of test_redteam_timing_order.py (its Worker, Leftover, Stopper, physics constants) and
the helpers of test_redteam_drain_reads.py. Every candidate here has calls exactly as fast as the reference's and an
honest timer. Each test asserts what the evaluator should do: a successful attack is a failing test.

The premise the drain rests on: from `quiet_since` on, the candidate's processes are stopped, so nothing they do can
START slowing the device after it; whatever they began before ends within `clear_s`. Two ways round it:

- Acting while stopped. A POSIX timer armed before the stop (timer_create with SIGEV_SIGNAL and SIGKILL) kills the
  process it belongs to at the armed time although the process is SIGSTOPped: checked on this machine's Linux (a
  child stopped with SIGSTOP, its timer armed for 0.3 s, died of signal 9 0.25 s after the stop). A child process of
  the candidate that holds device memory and dies so gives that memory back at a moment the candidate chose, after the
  stop. Assumed (not measured): a process's exit gives its device memory back as cudaFree does, and the driver clears
  it at the same rate with the same slowing of reads (SCRUB_S_PER_GIB, SCRUB_SLOWDOWN). Its GPU form is
  timing/timer_killed_child.py (run by test_redteam_timing_order.py under `-m gpu`). The earlier red teams already
  assume child processes (FreesEndingAtTheReply); static.py flags `fork`/`Process`/`Popen` by name only (os.posix_spawn
  or getattr(os, "fo" + "rk") are not seen), and a timer is not flagged.
- The guard: after a stop whose threads were still running, the parent waits LINGER_PER_LAG times their summed lag, up
  to GUARD_CAP_S = 1 s, before the reference's drain. Once that wait is past `clear_s`, the drain's FIRST read is
  already trusted (begun >= quiet_since + clear_s), whatever the device is doing. Threads in a long non-interruptible
  system call unrelated to device memory (a large read from the page cache, a munmap of a large touched mapping) make
  the lag for free: it falls after the reply, in no span.

And one property of the mark itself: it is the MARK_AT quantile of the trusted reads, and trusted reads are only made
by a drain whose reads did not come within QUIET_TOL of the mark. Once the mark is slow, every quick read is within
tolerance of it, so no drain ever makes trusted reads again: a slow mark is kept for the life of the parent (a batch,
every later problem and candidate on that device), whatever the device does since.

All four got through when written (1.135x and 1.14x with no flag, a mark kept slow, 33.8 s against 1.05 s). Answered:
each resume counts the candidate's processes that ended while stopped (judge/pause.py), which flags `side_stream` and
keeps that stop's trusted reads out of the mark (judge/timing_plan.py); a read well under the mark is trusted (no
candidate makes a read quicker); the waits' time spent on other work past verdicts.BUSY_MS a shape flags `side_stream`.
"""

from dataclasses import dataclass, field

import pytest

from evaluators.judge import timing_plan
from evaluators.worker import device_idle
from tests.evaluators.redteam import test_redteam_timing_order as order
from tests.evaluators.redteam.test_redteam_drain_reads import FreesEndingAtTheReply, not_fooled
from tests.evaluators.redteam.test_redteam_timing_order import (
    CALL_MS,
    CHECK_S,
    FIXED_S,
    HARNESS_MS,
    READ_MS,
    SCRUB_SLOWDOWN,
    Device,
    Leftover,
    Worker,
    block_index,
    codes,
    judged,
)

cuda_lock = order.cuda_lock  # the simulated device's lock fixture


@dataclass
class Timed(Leftover):
    """A leftover that begins later: the clearing of a stopped child's memory once its timer kills it."""

    start: float = 0.0


@dataclass
class TimedDevice(Device):
    """The simulated device, with leftovers that begin at a set time (a child's death while stopped)."""

    timed: list = field(default_factory=list)

    def active(self) -> Leftover | None:
        left = super().active()
        if left:
            return left
        return next((t for t in self.timed if t.start <= self.now < t.until), None)


@pytest.fixture
def device(monkeypatch) -> TimedDevice:
    """test_redteam_timing_order.device, on a TimedDevice."""
    return order.simulated(monkeypatch, TimedDevice())


def summary(results) -> list:
    return [(codes(r), round(r.speedup, 4)) for r in results]


# --- 1. a child killed by its own timer while stopped: memory given back inside the reference's block ----------------


class DiesInTheReferencesBlocks(Worker):
    """Before replying to its rehearsal and to each odd block (the reference's block b comes next, then the check and
    its block b + 1), arms the SIGKILL timers of two child processes that hold device memory: one to die just after
    the reference's drain before block b (the guard's MIN_GUARD_S and one quick read: 2.5 ms after the reply), one
    just after the drain before block b + 1 (its own span later, plus the check). Each holds what clears in about its
    own span (~8 GiB here). The candidate predicts these moments from its own span and the gaps it saw from its
    replies to its next commands, as SlowsEveryRead does; nothing of it is in its span or its stop's lag."""

    lead_s = 2.5e-3

    def __call__(self, command, event):
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and (command["hold"] or command["reps"]):
            index = block_index(command)
            if index is None or index % 2 == 1:
                span = reply.span
                first = self.device.now + self.lead_s
                self.die(first, span)
                if index is not None and index < 15:
                    # block b ran ~SCRUB_SLOWDOWN slow; then the check, the next drain's quick read and a margin
                    self.die(first + span * SCRUB_SLOWDOWN + CHECK_S + 1e-3, span)
        return reply

    def die(self, at: float, span: float) -> None:
        clearing_s = span * SCRUB_SLOWDOWN - FIXED_S
        self.device.timed.append(Timed(at + clearing_s, False, SCRUB_SLOWDOWN, 0.0, False, start=at))
        self.device.deaths.append(at)


def test_a_child_killed_by_its_timer_while_stopped_does_not_slow_the_references_blocks(tmp_path, cuda_lock, device):
    """The drain is before the block; what starts after it, the drain never sees. The reference's mark is quiet (a
    fresh device), its drains all return at their first read. Got 1.135x, no flag."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    result = judged(tmp_path, reference, DiesInTheReferencesBlocks(device, "candidate", CALL_MS, HARNESS_MS))
    assert not_fooled(result), (codes(result), result.speedup, result.baseline_ms, result.runtime_ms)


# --- 2. the guard past clear_s: the drain's first read is trusted, and a child's death makes it slow ------------------

LAG_S = 0.06  # summed over a few threads in long system calls after the reply: the guard is 8 x 60 ms = 0.48 s


class PoisonsTheTrustedReads(Worker):
    """After each odd block b (the reference's blocks b and b + 1 come next, then its own b + 1): threads of its own
    left in long system calls (the stop's lag, LAG_S), so the guard before the reference's drain (0.48 s) is past
    clear_s (0.385 s here) and that drain's first read is trusted at once, as are the next two drains' (the reference's
    before block b + 1, and the one before its own block b + 1: all begun past quiet_since + clear_s). And a child's
    SIGKILL timer armed to die 1 ms before the first of them, holding what clears in about two of its block spans
    and the check (~16 GiB): every read of the three drains, all trusted, is slow, and so are the reference's two
    blocks; its own block b + 1 loses at most its first millisecond. Two rounds make the mark slow (the first drain's
    four quick reads against 24 slow), and from then on no quick read is ever trusted again."""

    def __init__(self, *args, rounds: int = 8, **kwargs):
        super().__init__(*args, **kwargs)
        self.rounds = rounds

    def __call__(self, command, event):
        reply = super().__call__(command, event)
        index = block_index(command) if command["cmd"] == "time" and command["hold"] else None
        if index is not None and index % 2 == 1 and self.rounds:
            self.rounds -= 1
            self.device.lag_s = LAG_S
            at = self.device.now + LAG_S + timing_plan.LINGER_PER_LAG * LAG_S - 1e-3
            clearing_s = 2 * reply.span * SCRUB_SLOWDOWN + CHECK_S + 2e-3
            self.device.timed.append(Timed(at + clearing_s, False, SCRUB_SLOWDOWN, 0.0, False, start=at))
            self.device.deaths.append(at)
        return reply


def test_the_guard_past_clear_s_does_not_let_a_timed_death_into_the_trusted_reads(tmp_path, cuda_lock, device):
    """A warm reference with a quiet mark. Shape 1: the poisoning (its own speedup, and the mark after). Shape 2 (or
    the next evaluation on this device in the batch): FreesEndingAtTheReply's child frees, which a quiet mark waits
    out (test_frees_that_end_as_the_candidate_replies_are_waited_out_by_a_quiet_mark). Got: the mark 1.14x the quiet
    read; 1.14x, no flag, on shape 1 and again on shape 2."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    first = judged(tmp_path, reference, PoisonsTheTrustedReads(device, "candidate", CALL_MS, HARNESS_MS))
    poisoned = order.device_mark()
    second = judged(tmp_path, reference, FreesEndingAtTheReply(device, "candidate", CALL_MS, HARNESS_MS))
    assert poisoned <= READ_MS * (1 + device_idle.QUIET_TOL / 2), (poisoned, summary([first, second]))
    assert not_fooled(first) and not_fooled(second), (summary([first, second]), poisoned)


# --- 3. a slow mark is kept forever: quick reads never make trusted ones ---------------------------------------------


def test_a_slow_mark_comes_down_once_the_device_is_quick_again(tmp_path, cuda_lock, device):
    """However the trusted reads came to be slow (the timed deaths above; or an honest episode: a device slower for a
    while, which the module says "becomes the mark as its trusted reads come"), a device quick again should bring the
    mark back. Shape 1 poisons it (PoisonsTheTrustedReads, 4 rounds); then three honest candidates on quiet device.
    Every read they cause is quick, so within QUIET_TOL of the slow mark: no drain makes trusted reads again and the
    mark stays slow for the rest of the parent's life on that device. Got: the honest ones 1.0x, the mark still 1.14x
    the quiet read after them."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    judged(tmp_path, reference, PoisonsTheTrustedReads(device, "candidate", CALL_MS, HARNESS_MS, rounds=4))
    poisoned = order.device_mark()
    honest = [judged(tmp_path, reference, Worker(device, "candidate", CALL_MS, HARNESS_MS)) for _ in range(3)]
    assert all(codes(r) == [] and r.speedup == pytest.approx(1.0, abs=0.01) for r in honest), summary(honest)
    assert order.device_mark() <= READ_MS * (1 + device_idle.QUIET_TOL / 2), (poisoned, order.device_mark())


# --- 4. work queued to end just before DEADLINE_S, after every reply: every drain waits ~2 s -------------------------


class KeepsTheDrainWaiting(Worker):
    """After every reply to a timing command, a kernel of its own that spins on the device's clock for DEADLINE_S
    less a margin (queued after its last synchronize, before the reply: a context's work, which the drain's round
    trips see). Every drain, the reference's before its blocks and the one before the candidate's own blocks, waits
    it out: no DeviceBusy, nothing in its span (the drain before its block has waited it out before its command), no
    flag. Its rehearsal and blocks: 1 + 16 + the reference's fixed command; a disputed timing doubles it."""

    def after(self, command):
        if command["cmd"] == "time":
            self.device.leftover = Leftover(self.device.now + device_idle.DEADLINE_S - 0.05, True, 1.0, 0.0)
        return 0.0


def test_work_left_after_every_reply_does_not_multiply_the_timing_stage(tmp_path, cuda_lock, device):
    """Should: flagged, charged to the candidate, or bounded near the honest cost. Compared on the simulated clock.
    Got 33.8 s against 1.05 s for the honest candidate (32x), 1.0x, no flag."""
    started = device.now
    honest = judged(tmp_path, Worker(device, "reference", CALL_MS, HARNESS_MS),
                    Worker(device, "candidate", CALL_MS, HARNESS_MS))  # fmt: skip
    honest_s, started = device.now - started, device.now
    result = judged(tmp_path, Worker(device, "reference", CALL_MS, HARNESS_MS),
                    KeepsTheDrainWaiting(device, "candidate", CALL_MS, HARNESS_MS))  # fmt: skip
    attacked_s = device.now - started
    assert codes(honest) == []
    assert codes(result) or attacked_s < 5 * honest_s + 2.0, (codes(result), result.speedup, honest_s, attacked_s)
