"""Red team: the mark of the reference's drain (worker/device_idle.Drain: `mark`, `settle`, its history) and the
waits the parent asks for before each timing command (judge/timing_plan.py, `drain`/`asked`).

Built on the simulated device of test_redteam_timing_order.py (its Worker, Leftover, Stopper, `device` fixture and
physics constants) and the helpers of test_redteam_drain_reads.py. Every candidate here has calls exactly as fast as
the reference's and an honest timer; what it does is give device memory back so that the driver's clearing slows the
drain's reads.

The mark holds while more than MARK_AT's complement (75 %) of the last HISTORY first reads are slow. The module's
claim is that "the candidate ... can make only the waits before the reference's blocks slow". It can also make the
waits before its OWN blocks slow, and it pays nothing for them:

- while the mark is quick, the drain before its block waits its clearing out on the reference's clock, outside the
  candidate's span;
- while the mark is slow, that drain returns at its first slow read, so its block starts in the clearing; but the
  clearing can be sized to end just after that read (the candidate measures the gap from its reply to its next
  command on its own host clock), so only its first repetitions are slowed, and a median does not see a few.

So once the mark is slow the candidate keeps it slow for as long as it likes (every first read slow), and every
reference block runs in a clearing: about 1.12x, no flag. The tests below reach a slow mark three ways: made while
memory was cleared (made_while_clearing, as test_redteam_drain_reads.py assumes), the clear_s reset
(OutlastsClearS's backlog), and, with no precondition and no assumption beyond the listed physics and the
child-process free of test_redteam_drain_reads.py, a shape timed apart: there the candidate's blocks come after all
the reference's, each behind a wait it can slow, and their count follows its own warm-up (a fast one asks for up to
max_reps repetitions, retained a block), so they alone fill the history.

Written against the drain whose mark was the 25th percentile of its waits' first reads (f0f62d7), where four of the
five got 1.08-1.14x with no flag; the first three ways also fooled the quickest-three mark before it (8f1edcf). The
class: the mark was made of reads the candidate could place. Answered by marking only trusted reads, begun `clear_s`
or more after the candidate's last stop (worker/device_idle.py): the attacks now read 1.0x.

Each test asserts what the evaluator should do: a successful attack is a failing test.
"""

import pytest

from tests.evaluators.redteam import test_redteam_timing_order as order
from tests.evaluators.redteam.test_redteam_drain_reads import (
    APART,
    BACKLOG_HOST_S,
    BACKLOG_S,
    BIG_CALL_MS,
    BIG_HARNESS_MS,
    clearing,
    not_fooled,
)
from tests.evaluators.redteam.test_redteam_timing_order import (
    CALL_MS,
    FREE_COST_S_PER_GIB,
    HARNESS_MS,
    SCRUB_S_PER_GIB,
    SCRUB_SLOWDOWN,
    Leftover,
    Worker,
    block_index,
    codes,
    judged,
    made_while_clearing,
)

cuda_lock, device = order.cuda_lock, order.device  # the simulated device's fixtures


class SlowsEveryRead(Worker):
    """After every reply (warm-ups, rehearsal, every block), a child process of its own gives memory back, timed to
    end as the reply goes (FreesEndingAtTheReply's assumption: its host time overlaps the command's end in another
    process, neither in the span nor in the stop's lag). The size makes the clearing last MARGIN_S into its own next
    command: the gap from its reply to its next command the last time it replied to a command of the same kind
    (block parity tells whether two reference blocks come between, or only the reference's check), as its own host
    clock saw it; the first time, a guess from its own span. Every drain's first read is then slow, the ones before
    its own blocks included; its own blocks lose only their first margin_s of repetitions."""

    MAX_GIB = 120

    def __init__(self, *args, margin_s: float = 3e-3, **kwargs):
        super().__init__(*args, **kwargs)
        self.margin_s = margin_s
        self.gaps: dict = {}
        self.replied, self.kind = None, None
        self.frees = 0

    def key(self, command) -> tuple:
        index = block_index(command) if command["cmd"] == "time" else None
        return command["cmd"], command.get("calls"), command.get("hold"), None if index is None else index % 2

    def __call__(self, command, event):
        if self.replied is not None:
            self.gaps[self.kind] = self.device.now - self.replied
        reply = super().__call__(command, event)
        self.kind, self.replied = self.key(command), self.device.now
        self.give_back(command, reply, min((self.gap(reply) + self.margin_s) / SCRUB_S_PER_GIB, self.MAX_GIB))
        return reply

    def gap(self, reply) -> float:
        return self.gaps.get(self.kind, 2 * reply.span + 10e-3)

    def give_back(self, command, reply, gib: float) -> None:
        self.device.leftover = clearing(self.device, gib)


def shapes(tmp_path, reference: Worker, candidate: Worker, count: int = 2) -> list:
    """`count` shapes (or evaluations of a warm reference) timed side by side, one reference process throughout."""
    return [judged(tmp_path, reference, candidate) for _ in range(count)]


def summary(results) -> list:
    return [(codes(r), round(r.speedup, 4)) for r in results]


# --- 1. a slow mark is kept: the reads before the candidate's own blocks are its to slow too --------------------------


def test_a_slow_mark_is_not_kept_by_slowing_the_reads_before_the_candidates_own_blocks(tmp_path, cuda_lock, device):
    """test_a_mark_set_while_memory_was_cleared_does_not_let_frees_in_the_span_through is answered because the drains
    before the candidate's blocks read quick and bring the mark down. Here those reads are slow as well: the
    candidate's clearing runs through the check and the drain's first read and ends margin_s into its own block.
    Precondition as there (made_while_clearing); the child's free as FreesEndingAtTheReply assumes. Got 1.12x, no
    flag, on every shape: the mark never comes down."""
    reference = made_while_clearing(device)
    results = shapes(tmp_path, reference, SlowsEveryRead(device, "candidate", CALL_MS, HARNESS_MS), 3)
    assert all(not_fooled(result) for result in results), (summary(results), order.device_mark())


def test_slowing_every_read_gains_nothing_beside_a_quiet_mark(tmp_path, cuda_lock, device):
    """The control (passes): from a quiet mark, at most the waits after the candidate's replies are slow, 18 of a
    shape's 35, under the 75 % the mark needs; the drains wait each clearing out."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    results = shapes(tmp_path, reference, SlowsEveryRead(device, "candidate", CALL_MS, HARNESS_MS), 3)
    assert all(codes(r) == [] and r.speedup == pytest.approx(1.0, abs=0.01) for r in results), summary(results)


# --- 2. the clear_s reset makes the history one slow read, and slow first reads keep it ------------------------------


class ResetsThenSlowsEveryRead(SlowsEveryRead):
    """OutlastsClearS's backlog in its rehearsal (100 GiB given back and taken again, three rounds; host time in the
    rehearsal, which no one judges), then SlowsEveryRead's child frees after every other reply."""

    def __call__(self, command, event):
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and block_index(command) is None and not self.gaps.get("reset"):
            self.gaps["reset"] = True
            self.device.now += BACKLOG_HOST_S
            reply.span += BACKLOG_HOST_S
            self.replied = self.device.now
            self.device.leftover = Leftover(self.device.now + BACKLOG_S, False, SCRUB_SLOWDOWN, 0.0, False)
        return reply


def test_the_clear_s_reset_is_not_kept_slow_by_slowing_every_read(tmp_path, cuda_lock, device):
    """A warm reference with a quiet mark. Assumed as test_reads_kept_slow_past_clear_s_do_not_become_the_mark
    assumes (memory given back, taken and given back again queues its clearing after the first: 0.44 s after the
    reply, more than clear_s) and the child's free as above. The drain before the reference's block 0 times out and
    its last read becomes the whole history (device_idle.Drain.settle); with every later first read slow, no quick
    read ever joins it. Got 1.12x, no flag, on the first shape and the next."""
    reference = Worker(device, "reference", CALL_MS, HARNESS_MS)
    results = shapes(tmp_path, reference, ResetsThenSlowsEveryRead(device, "candidate", CALL_MS, HARNESS_MS), 2)
    assert all(not_fooled(result) for result in results), (summary(results), order.device_mark())


# --- 3. timed apart, the waits before the candidate's blocks alone fill the history --------------------------------


def test_a_shape_timed_apart_does_not_let_the_candidate_fill_the_history(tmp_path, cuda_lock, device):
    """A warm reference with a quiet mark, no precondition, no reset. Shape 1 does not fit side by side (APART,
    test_redteam_drain_reads.py's 9 ms call on 30 GiB): the reference's rehearsal and blocks come first, then the
    candidate's warm-up, rehearsal and blocks, each block behind a drain that follows the candidate's own reply (and
    the reference's check). The candidate's warm-up calls are quick (a warm command is told by its "calls", and
    nothing checks or times a warm-up's outputs): its repetitions are then max_reps, and its blocks
    max_reps / retained = 250, each first read slow, waited out on the reference's clock. The history is all slow
    reads. Shape 2, side by side, a 0.2 ms call: SlowsEveryRead keeps it so. Got 1.0x on shape 1, then 1.12x, no
    flag, on shape 2 (1.14x). Assumed besides: the candidate predicts the gap from its reply to its next block's
    drain to within 0.5 ms (margin_s; a block of 2 repetitions starts 1 ms into the command), else its own first
    repetition of each block is slowed too (0.93x on shape 1 at 3 ms)."""
    reference = Worker(device, "reference", BIG_CALL_MS, BIG_HARNESS_MS)
    attacker = SlowsEveryRead(device, "candidate", BIG_CALL_MS, BIG_HARNESS_MS, warm_ms=0.05, margin_s=0.5e-3)
    first = judged(tmp_path, reference, attacker, APART)
    mark_after_apart = order.device_mark()
    for worker in (reference, attacker):
        worker.call_ms = worker.warm_ms = CALL_MS
        worker.harness_ms = HARNESS_MS
    second = judged(tmp_path, reference, attacker)
    assert not_fooled(first) and not_fooled(second), (summary([first, second]), mark_after_apart)


def test_an_honest_warm_up_timed_apart_does_not_let_the_candidate_fill_the_history(tmp_path, cuda_lock, device):
    """The same with an honest warm-up (20 repetitions; retained 1 a block, an output too large to keep two): 21 slow
    first reads behind the reference's 22 quick ones, 11 of them still in the history. The next shape's waits, half
    of them slow even while the drain waits each clearing out (the ones after the candidate's replies), push the older
    quick reads out: from its 7th wait the mark is slow, and SlowsEveryRead keeps it. Got 1.0x, then 1.12x, no flag."""
    reference = Worker(device, "reference", BIG_CALL_MS, BIG_HARNESS_MS)
    attacker = SlowsEveryRead(device, "candidate", BIG_CALL_MS, BIG_HARNESS_MS)
    first = judged(tmp_path, reference, attacker, APART | {"retained": 1})
    for worker in (reference, attacker):
        worker.call_ms = worker.warm_ms = CALL_MS
        worker.harness_ms = HARNESS_MS
    second = judged(tmp_path, reference, attacker)
    assert not_fooled(first) and not_fooled(second), summary([first, second])


# --- 4. the same without a child process: frees in 7 of its blocks' spans, or after replies no reference block follows


class SlowsReadsFromItsOwnProcess(SlowsEveryRead):
    """SlowsEveryRead's sizes, given back from its own process (listed physics only: FREE_COST_S_PER_GIB of host time
    in the calling thread). After its rehearsal and its odd blocks up to 13 (a reference block comes next): inside
    its span, as FreesBeforeTheReference (7 of 16 blocks, so the parent's median over blocks never sees it). After its
    even blocks (only the reference's check and its own next block's drain come next): from a thread after the reply,
    so the host time is in the stop's lag, whose guard is overwritten by its own next stop before the reference times
    anything. Nothing after its warm-ups and its block 15 (the guard would wait those out)."""

    def give_back(self, command, reply, gib):
        if command["cmd"] != "time" or not (command["hold"] or command["reps"]):
            return
        index, cost = block_index(command), gib * FREE_COST_S_PER_GIB
        if index is None or (index % 2 == 1 and index <= 13):
            self.device.now += cost
            reply.span += cost
            self.replied = self.device.now
            self.device.leftover = clearing(self.device, gib)
        elif index % 2 == 0:
            self.device.lag_s = cost
            self.device.leftover = clearing(self.device, gib, cost)


def test_a_slow_mark_is_not_kept_by_frees_from_the_candidates_own_process(tmp_path, cuda_lock, device):
    """As test 1 (made_while_clearing), with no assumption beyond the listed physics (and the candidate's prediction
    of its gaps from the last ones). Got 1.08x then 1.09x, no flag: a few reads are quick (after its warm-ups and
    block 15), under the quarter the mark allows; its own blocks lose ~5 % on the first repetitions."""
    reference = made_while_clearing(device)
    results = shapes(tmp_path, reference, SlowsReadsFromItsOwnProcess(device, "candidate", CALL_MS, HARNESS_MS), 3)
    assert all(not_fooled(result) for result in results), (summary(results), order.device_mark())
