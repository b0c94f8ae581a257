"""Red team: the reference's drain reads and their mark (worker/device_idle.py), the parent's guard after each
candidate stop (judge/timing_plan.py, judge/pause.py), and the path where the two sides are timed one after the other.

Built on the simulated device of test_redteam_timing_order.py (its Worker, Leftover, Stopper, `device` fixture and
physics constants): memory given back is cleared by the driver for SCRUB_S_PER_GIB a GiB after the call returns, and
meanwhile every large read runs SCRUB_SLOWDOWN slower (the drain's 256 MiB read included); the call itself costs
FREE_COST_S_PER_GIB of host time in the calling thread. Anything beyond that is marked "Assumed" in the docstring of
the test that needs it.

What the attacks here aim at:

- The mark, when this file was written, was the slowest of the three quickest reads the process ever timed: a mark set
  slow (the first reads made while memory was being cleared) came down only after three quiet reads, and the
  candidate decides which of the reference's drains are quiet (a shape has ~17 of them). It is now made of trusted
  reads alone (begun `clear_s` after the candidate's last stop; test_redteam_drain_quantile.py says why).
- A drain whose reads stayed slow for `clear_s` made them the mark.
- The guard after a stop is LINGER_PER_LAG times what the stop waited for the slowest thread: frees made at once in
  several processes leave a lag of one share and a clearing of the sum.
- Where the two sides do not fit side by side, the reference's check after each of the candidate's blocks gives its
  memory back (`last` is True for every block there), and nothing waits before the candidate's next block.

Each test asserts what the evaluator should do. Five of the attacks succeeded when the file was written (1.12-1.14x
with no flag, and an honest candidate read 0.88x timed apart); they are answered by the reference's wait before the
candidate's blocks too (its reads there are ones the candidate cannot keep slow without slowing its own block, so a
mark set slow comes down), by the stop's lag summed over the threads that were still running, and by the reference
keeping what its checks draw until the shape's last check.
"""

import pytest

from evaluators.judge.result import EvalResult
from tests.evaluators.redteam import test_redteam_timing_order as order
from tests.evaluators.redteam.test_redteam_timing_order import (
    CALL_MS,
    FREE_COST_S_PER_GIB,
    HARNESS_MS,
    SCRUB_S_PER_GIB,
    SCRUB_SLOWDOWN,
    Device,
    FreesBeforeTheReference,
    Leftover,
    Worker,
    block_index,
    codes,
    judged,
    made_while_clearing,
)

cuda_lock, device = order.cuda_lock, order.device  # the simulated device's fixtures


def not_fooled(result: EvalResult) -> bool:
    """The evaluator's answer to a candidate whose calls are as fast as the reference's: flagged, or no faster."""
    return bool(codes(result)) or result.speedup < 1.05


def clearing(device: Device, gib: float, host_s: float = 0.0) -> Leftover:
    """The driver's clearing of `gib` given back, starting once the call (`host_s` from now) returns."""
    return Leftover(device.now + host_s + gib * SCRUB_S_PER_GIB, False, SCRUB_SLOWDOWN, 0.0, False)


# --- 1. a mark set slow, and the candidate picks which reads are quiet ------------------------------------------------


def test_a_mark_set_while_memory_was_cleared_does_not_let_frees_in_the_span_through(tmp_path, cuda_lock, device):
    """FreesBeforeTheReference unchanged (frees inside its span in its rehearsal and 7 of its 16 blocks: the median
    over blocks never sees them), beside a reference whose drain made its first reads while memory given back
    was cleared (made_while_clearing). test_redteam_timing_order.py answers these frees only beside a reference with
    a quiet mark; a drain's reads made before any trusted one now set no mark.

    Assumed, for the precondition: a process that ends gives its memory back as cudaFree does (cleared after it is
    gone), and a new reference's drain is made within the clearing of what an ended process held: reference_for
    closes the device's idle references of other problems, then has a spare make the new one's drain at once
    (reference_pool.py, worker/reference.py), and _attempt starts an evaluation as soon as the last one's dismissed
    candidate has exited (process.wait_for_dismissed); a problem's first evaluation after another problem's on the
    same GPU, routine in a batch. (Or a candidate beside it, as made_while_clearing says.)"""
    reference = made_while_clearing(device)
    result = judged(tmp_path, reference, FreesBeforeTheReference(device, "candidate", CALL_MS, HARNESS_MS))
    assert not_fooled(result), (codes(result), result.speedup, order.device_mark())


# --- 2. reads slow for clear_s become the history ---------------------------------------------------------------------

# Three rounds of 100 GiB given back (0.5 ms/GiB of host time) and taken again (0.3 ms/GiB) in the rehearsal: 0.21 s
# of host time there; 0.6 s of clearing (2 ms/GiB) queued from the end of the first give-back, 0.44 s of it after the
# reply, more than the model's clear_s (140 GiB x 2.2 ms x 1.25 = 0.385 s).
BACKLOG_HOST_S, BACKLOG_S = 3 * 100 * 0.5e-3 + 2 * 100 * 0.3e-3, 0.44


class OutlastsClearS(FreesBeforeTheReference):
    """Inside its rehearsal (a command no one times or checks), gives 100 GiB back, takes it again, three rounds
    (BACKLOG_HOST_S of host time there, which nothing judges); then FreesBeforeTheReference's frees in its odd
    blocks, inside its span."""

    def after(self, command):
        if block_index(command) is None:
            until = self.device.now + BACKLOG_HOST_S + BACKLOG_S
            self.device.leftover = Leftover(until, False, SCRUB_SLOWDOWN, 0.0, False)
            return BACKLOG_HOST_S
        return super().after(command)


def test_reads_kept_slow_past_clear_s_do_not_become_the_mark(tmp_path, cuda_lock, device):
    """A warm reference whose mark is quiet. Assumed (beyond the listed physics): memory given back, taken again at
    once and given back again is cleared again, after the clearing already queued, so three rounds of 100 GiB queue
    ~0.6 s of clearing, more than clear_s (total GiB x 2.2 ms x 1.25 = 0.385 s here); no single give-back of all the
    device's memory could, and a give-back from a thread after the reply would be in the stop's lag (the guard). The
    drain before the reference's block 0 then times out and takes the slow reads as the history
    (device_idle.Drain.settle), and every later clearing passes it."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    quiet_mark = order.device_mark()
    result = judged(tmp_path, reference, OutlastsClearS(device, "candidate", CALL_MS, HARNESS_MS))
    assert not_fooled(result), (codes(result), result.speedup, quiet_mark, order.device_mark())


# --- 3. frees that end as the reply goes: nothing in the span, nothing for the stop to wait for ----------------------


class FreesEndingAtTheReply(Worker):
    """After its rehearsal, its warm-ups and each of its odd blocks (a reference block comes next), a child process
    of its own gives GIB back, started so that the call ends as the reply goes out: the host time overlaps the
    block's last repetitions and the harness's copies, in another process, and the stop finds it already done."""

    GIB = 16

    def __call__(self, command, event):
        reply = super().__call__(command, event)
        if command["cmd"] == "warm" or (command["cmd"] == "time" and self.frees(command)):
            self.device.leftover = clearing(self.device, self.GIB)
        return reply

    def frees(self, command) -> bool:
        index = block_index(command)
        return index is None or index % 2 == 1


def test_frees_that_end_as_the_candidate_replies_do_not_raise_the_baseline(tmp_path, cuda_lock, device):
    """Assumed (beyond the listed physics): a child process's cudaFree runs beside the candidate's main process on
    the host without lengthening its command (its own context, on another core), and the device's reads are slowed
    only once the call has returned. The mark was set while memory was cleared (made_while_clearing). Two shapes
    (or two evaluations of a warm reference): the mark never sees a quiet read, so the second shape is fooled too."""
    reference = made_while_clearing(device)
    attacker = FreesEndingAtTheReply(device, "candidate", CALL_MS, HARNESS_MS)
    results = [judged(tmp_path, reference, attacker) for _ in range(2)]
    assert all(not_fooled(result) for result in results), [(codes(r), r.speedup) for r in results]


def test_frees_that_end_as_the_candidate_replies_are_waited_out_by_a_quiet_mark(tmp_path, cuda_lock, device):
    """The control: the same candidate beside a reference whose mark was set on a quiet device."""
    result = judged(tmp_path, Worker(device, "reference", CALL_MS, HARNESS_MS),
                       FreesEndingAtTheReply(device, "candidate", CALL_MS, HARNESS_MS))  # fmt: skip
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), result.speedup


# --- 4. frees split across child processes after the reply: the guard is a share, the clearing the sum ---------------


class FreesSplitAcrossChildren(FreesBeforeTheReference):
    """After the reply, CHILDREN processes of its own give GIB back at once, each a share (8 GiB after its
    rehearsal, GIB after its odd blocks up to 13): the stop waits for the slowest of them (one share's host time),
    the driver clears the sum after. 32 GiB: the clearing lasts past the guard, the reference's two blocks and the
    check between them."""

    CHILDREN, GIB = 8, 32

    def gib(self, command) -> int:
        index = block_index(command)
        return 8 if index is None else self.GIB if index % 2 == 1 and index <= 13 else 0

    def after(self, command):
        gib = self.gib(command)
        if gib:
            share_s = gib / self.CHILDREN * FREE_COST_S_PER_GIB
            self.device.lag_s = share_s
            self.device.leftover = clearing(self.device, gib, share_s)
        return 0.0


def test_frees_split_across_children_are_waited_out_by_a_quiet_mark(tmp_path, cuda_lock, device):
    """Defended: the guard waits only 8 x one share (40 ms of an 85 ms clearing), but the drain's reads are slow until
    the clearing ends, and a quiet mark waits for them."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    result = judged(tmp_path, reference, FreesSplitAcrossChildren(device, "candidate", CALL_MS, HARNESS_MS))
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), result.speedup


def test_frees_split_across_children_are_waited_out_where_no_read_was_quiet(tmp_path, cuda_lock, device):
    """What test_memory_given_back_as_it_replies_is_waited_out_where_no_read_was_quiet answers with the guard alone
    (one thread's free, lag = its whole host time), split across 8 child processes. Assumed: frees in separate
    processes (separate contexts) run at once on the host, each at FREE_COST_S_PER_GIB, and the driver's clearing of
    their sum takes as long as one free of the sum. The model's 1.25 ms/GiB of host time against 2.5 ms/GiB of
    clearing needs more than 4 ways; at the listed 0.35-0.75 ms/GiB against 1.7-2.2 ms/GiB, 2 or 3 ways would do.
    Beside a quiet mark the drain still answers (the test above): the guard alone does not."""
    result = judged(tmp_path, made_while_clearing(device), FreesSplitAcrossChildren(device, "candidate", CALL_MS,
                                                                                        HARNESS_MS))  # fmt: skip
    assert not_fooled(result), (codes(result), result.speedup)


# --- 5. a free mostly inside the span, whose clearing runs into the reference's turn ----------------------------------


class FreesStraddlingTheReply(FreesBeforeTheReference):
    """FreesBeforeTheReference's frees from a thread started near the end of the block: 90 % of the call's host time
    in the span, the last 10 % after the reply (a small lag: the guard is its minimum), all of the clearing after."""

    def after(self, command):
        gib = self.gib(command)
        if gib:
            cost = gib * FREE_COST_S_PER_GIB
            self.device.lag_s = 0.1 * cost
            self.device.leftover = clearing(self.device, gib, cost)
            return 0.9 * cost
        return 0.0


def test_a_free_straddling_the_reply_is_waited_out_by_a_quiet_mark(tmp_path, cuda_lock, device):
    """Defended by the drain (the guard is MIN_GUARD_S here)."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    result = judged(tmp_path, reference, FreesStraddlingTheReply(device, "candidate", CALL_MS, HARNESS_MS))
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), result.speedup


# --- 6. timed one after the other: the reference's checks give memory back before the candidate's blocks ------------

# A memory-bound call on 28 GiB of inputs and a 2 GiB output: ~9 ms on an H100 (3.35 TB/s). Its one-call set (30 GiB
# plus the flush) is over half of what is left of ~75 GiB free, so the two are timed one after the other
# (worker/memory.timing_layout): one timing set, two held outputs on the device (10 blocks of 2 repetitions for 20).
BIG_CALL_MS, BIG_HARNESS_MS, BIG_GIB = 9.0, 11.0, 30
APART = {"side_by_side": False, "timing_sets": 1, "retained": 2, "retained_on_device": True}


class ReferenceThatGivesBack(Worker):
    """The reference as worker/reference.py serves it: a check with `last` (every check, timed apart) computes the
    picked repetitions' answers on inputs drawn again, then gives its allocator's cache back (release_cache): an input
    set and an output, BIG_GIB. Its probe (a command of another kind) gives back its timing set the same way."""

    def __call__(self, command, event):
        reply = super().__call__(command, event)
        if (command["cmd"] == "check_reps" and command["last"]) or command["cmd"] == "probe":
            cost = BIG_GIB * FREE_COST_S_PER_GIB
            self.device.now += cost
            self.device.leftover = clearing(self.device, BIG_GIB)
            reply.span += cost
        return reply


def test_timed_apart_an_honest_candidate_is_as_fast_as_a_reference_that_keeps_its_memory(tmp_path, cuda_lock,
                                                                                          device):  # fmt: skip
    """The control: the same shape timed apart, the reference giving nothing back."""
    result = judged(tmp_path, Worker(device, "reference", BIG_CALL_MS, BIG_HARNESS_MS),
                       Worker(device, "candidate", BIG_CALL_MS, BIG_HARNESS_MS), APART)  # fmt: skip
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.01), result.speedup


def test_timed_apart_an_honest_candidate_is_not_slowed_by_the_references_checks(tmp_path, cuda_lock, device):
    """Listed physics only (the check's 30 GiB cleared for 75 ms in the model, 51-66 ms at the listed 1.7-2.2 ms/GiB;
    the candidate's next block, 2 x 20 ms, runs in it: 9 of its 10 blocks slowed, the median with them).
    Assumed: the reference's allocator holds an input set and an output at the check's end (torch's caching
    allocator keeps the blocks of the inputs it drew), as its comment says of 45_Average_Pooling_2D's 17.5 GiB."""
    result = judged(tmp_path, ReferenceThatGivesBack(device, "reference", BIG_CALL_MS, BIG_HARNESS_MS),
                       Worker(device, "candidate", BIG_CALL_MS, BIG_HARNESS_MS), APART)  # fmt: skip
    assert codes(result) == [] and result.speedup == pytest.approx(1.0, abs=0.03), (codes(result), result.speedup)
