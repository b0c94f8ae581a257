"""Red team: a shape's blocks given again where its band is wide (judge/timing_plan.more_runs).

A helper that had not seen the design attacked the extension from the code (2026-11-28, simulated device) while it
was decided from the band of both sides' block times, the candidate's being its claims:

- `tiny_claims`: claims read raw into the bootstrap. A time of 1e-310 ms is a duration and positive; the reference's
  10 ms over it overflowed to inf, and the parent's timing raised ZeroDivisionError: evaluate() raised, and batch.py
  read it as "not judged" (retried, never kept), turning a candidate already found wrong into that.
- `veto`: one claim of 0.0 (a duration the verdict accepts) kept the shape at its planned blocks, and one block
  claimed slow bought more. Its host clock sees the reference's turns (the gaps between its commands), so it kept the
  reference's slow blocks in its baseline exactly when they were there: a call as fast as the reference's read 1.25x
  beside a reference slow in two blocks of four, 1.5x and significant in three, and a mean 1.042x against 1.000x
  over 200 draws of passing episodes.

The class: what the candidate claims decided how long the shape was timed. The extension is now read from the
reference's blocks alone (its times, its issue times), each taken as RESOLUTION_MS at least; these tests hold it
there. Behaviour in the blocks given again (forging, wrong outputs, work left running) and the turn order after them
were caught as in the planned ones in that red team, and still are.

The simulated device is tests/evaluators/redteam/test_redteam_timing_order.py's; the fake processes are
tests/evaluators/test_side_by_side.py's.
"""

from __future__ import annotations

import random
import statistics

import pytest

from evaluators.judge import timing_plan
from evaluators.judge.timing_plan import TIMING_BLOCKS
from tests.evaluators.redteam import test_redteam_timing_order as order
from tests.evaluators.redteam.test_redteam_timing_order import (
    HARNESS_MS,
    Device,
    LeavesItRunning,
    Worker,
    block_index,
    codes,
    judged,
    simulated,
)
from tests.evaluators.test_side_by_side import Jolted, _blocks, _long_calls, _timed_blocks

cuda_lock, device = order.cuda_lock, order.device  # the simulated device's fixtures

LONG_MS = 10.0  # a 10 ms call: 20 repetitions, four blocks of five a side (test_side_by_side._long_calls)
TINY_MS = 1e-310  # a positive, finite duration: 10 ms over it overflows a float


def held_blocks(device, side: str) -> list:
    """A side's timed blocks on the simulated device, in order, of its last timing (judged() times a disputed shape
    again): its timing commands with repetitions after its last rehearsal (the first such, five at 0)."""
    timed = [e for e in device.log if e[:2] == (side, "time") and e[3]]
    rehearsals = [i for i, e in enumerate(timed) if e[2] == 0 and (i + 1 < len(timed) and timed[i + 1][2] == 0)]
    return timed[rehearsals[-1] + 1 :] if rehearsals else timed


# --- tiny_claims: the parent's bootstrap on raw claims ---------------------------------------------------------------


class TinyClaims(Jolted):
    """Claims TINY_MS a repetition in its held blocks numbered in `tiny`, its real times elsewhere."""

    def __init__(self, *args, tiny=(0, 1, 2), **kwargs):
        super().__init__(*args, **kwargs)
        self.tiny, self.seen = set(tiny), 0

    def __call__(self, command: dict, event: str):
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and command["hold"] and command["reps"]:
            if self.seen in self.tiny:
                reply.meta["times_ms"] = [TINY_MS] * command["reps"]
            # Its issue times claimed at 0 (a duration): a median over its times' reads as no host-bound call.
            reply.meta["issue_ms"] = [0.0] * command["reps"]
            self.seen += 1
        return reply


def test_tiny_positive_claims_do_not_crash_the_parents_timing(tmp_path, cuda_lock):
    """Smallest reproducer: three of four blocks claimed at 1e-310 ms. Honest: the timing ends (the claim is then
    judged as any other: floored at RESOLUTION_MS, disputed by the parent's clock)."""
    reference, candidate = Jolted("reference", [], 1e-2), TinyClaims("candidate", [], 1e-2)
    (_, timing), _ = _long_calls(tmp_path, reference, candidate)
    assert len(timing.blocks) >= 4


class FindsTheFirstBlockWrong(Jolted):
    """The reference, whose check of the candidate's first block finds a mismatch (a wrong candidate)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.checks = 0

    def mismatch(self, command: dict):
        self.checks += 1
        return [command["reps"][0], {"summary": "wrong", "details": ""}] if self.checks == 1 else None


def test_a_wrong_candidate_cannot_turn_its_verdict_into_a_parent_crash(tmp_path, cuda_lock):
    """Its first block already mismatched; its claims then crash the extension's bootstrap before the timing ends, so
    evaluate() raises instead of returning `incorrect` (batch.py: 'not judged', retried, never kept)."""
    reference, candidate = FindsTheFirstBlockWrong("reference", [], 1e-2), TinyClaims("candidate", [], 1e-2)
    (_, timing), _ = _long_calls(tmp_path, reference, candidate)
    assert timing.mismatch is not None


class TinyWorker(Worker):
    """On the simulated device: honest calls, a timer claiming TINY_MS in its first three held blocks."""

    def claims(self, command, real_ms):
        index = block_index(command)
        return [TINY_MS] * len(real_ms) if index is not None and index < 3 else real_ms

    def __call__(self, command: dict, event: str):
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and command["reps"]:
            reply.meta["issue_ms"] = [0.0] * command["reps"]
        return reply


def test_tiny_claims_through_the_verdict_are_disputed_not_a_crash(tmp_path, cuda_lock, device):
    """The same through judged() (time_side_by_side, the dispute's re-run, the verdict)."""
    reference = Worker(device, "reference", LONG_MS, HARNESS_MS)
    result = judged(tmp_path, reference, TinyWorker(device, "candidate", LONG_MS, HARNESS_MS))
    assert "timing_disputed" in codes(result) or result.speedup < 1.05, (codes(result), result.speedup)


# --- veto: the candidate sets whether more blocks come ---------------------------------------------------------------


class SlowIn(Worker):
    """Its held blocks numbered in `slow` run `by` slower (a passing episode on the device or the host)."""

    def __init__(self, *args, slow=(), by: float = 0.5, **kwargs):
        super().__init__(*args, **kwargs)
        self.slow, self.by = set(slow), by

    def __call__(self, command: dict, event: str):
        index = block_index(command) if command["cmd"] == "time" and command["reps"] else None
        slowed = index is not None and index in self.slow
        if slowed:
            self.call_ms *= 1 + self.by
        try:
            return super().__call__(command, event)
        finally:
            if slowed:
                self.call_ms /= 1 + self.by


class Peeker(SlowIn):
    """Honest calls and an honest timer, but it decides the extension from what its host clock saw of the reference.

    The gap between its rehearsal's reply and its block 0 holds the reference's block 0; the gap between its blocks 1
    and 2 holds the reference's blocks 1 and 2 (ABBA). Where the reference's three read over `over` of three of its
    own blocks (two of them slow, at +50 %: the median of four is raised), it claims 0.0 for one repetition of its last
    planned block (or, with `veto="host_bound"`, issue times over the call), which had kept more blocks from coming.
    """

    def __init__(self, *args, planned: int = 4, over: float = 1.25, veto="zero", **kwargs):
        super().__init__(*args, **kwargs)
        self.planned, self.over, self.veto = planned, over, veto
        self.starts, self.ends = {}, {}
        self.vetoed = False

    def decide(self) -> str | None:
        try:
            own = self.ends[0] - self.starts[0]
            seen = (self.starts[0] - self.ends[None]) + (self.starts[2] - self.ends[1])
        except KeyError:
            return None
        return "veto" if seen > self.over * 3 * own else None

    def __call__(self, command: dict, event: str):
        timed = command["cmd"] == "time" and command["reps"]
        index = block_index(command) if timed else None
        if timed:
            self.starts[index] = self.device.now
        decision = self.decide() if timed and index == self.planned - 1 else None
        reply = super().__call__(command, event)
        if timed:
            self.ends[index] = self.device.now
        if decision == "veto":
            self.vetoed = True
            if self.veto == "zero":
                reply.meta["times_ms"][0] = 0.0
            else:  # a host-bound claim: issue times over the call
                reply.meta["issue_ms"] = [2 * LONG_MS] * command["reps"]
        return reply


def test_an_honest_candidate_beside_a_reference_slow_in_two_of_four_blocks_gets_more_and_reads_as_fast(
    tmp_path, cuda_lock, device
):  # fmt: skip
    """The control: the reference's band is wide, both sides run eight blocks, the median sets the slow two aside."""
    reference = SlowIn(device, "reference", LONG_MS, HARNESS_MS, slow={1, 2})
    result = judged(tmp_path, reference, Worker(device, "candidate", LONG_MS, HARNESS_MS))
    assert len(held_blocks(device, "reference")) >= 8
    assert result.speedup == pytest.approx(1.0, abs=0.02), (codes(result), result.speedup)


@pytest.mark.parametrize("slow", [(1, 2), (0, 1, 2)], ids=["two_slow", "three_slow"])
@pytest.mark.parametrize("veto", ["zero", "host_bound"])
def test_a_candidate_cannot_keep_the_references_slow_blocks_by_vetoing_more(tmp_path, cuda_lock, device, veto, slow):
    """Smallest reproducer ('zero-two_slow'): the reference's blocks 1 and 2 run 50 % slow (an episode of its own); the
    candidate, as fast as it, sees them on its host clock and claims one repetition at 0.0 ms. Honest: the shape still
    gets its blocks again and reads about 1.0x. ('host_bound': issue times claimed over the call veto as well, at a
    host_bound flag. 'three_slow': the reference's blocks 0-2 slow, which the band of four calls significant.)"""
    reference = SlowIn(device, "reference", LONG_MS, HARNESS_MS, slow=set(slow))
    peeker = Peeker(device, "candidate", LONG_MS, HARNESS_MS, veto=veto)
    result = judged(tmp_path, reference, peeker)
    assert peeker.vetoed
    blocks = len(held_blocks(device, "reference"))
    assert result.speedup < 1.05, (blocks, codes(result), result.speedup, result.significant, result.speedup_band)


def _speedups(tmp_path, monkeypatch, make_candidate, runs: int, p: float) -> list[tuple[float, bool]]:
    """The speedup of a candidate as fast as the reference over `runs` draws of passing episodes: each held block of
    either side 50 % slow with probability `p`, independently."""
    out = []
    for seed in range(runs):
        rng = random.Random(seed)
        slow_ref = {b for b in range(TIMING_BLOCKS) if rng.random() < p}
        slow_cand = {b for b in range(TIMING_BLOCKS) if rng.random() < p}
        device = simulated(monkeypatch, Device())
        reference = SlowIn(device, "reference", LONG_MS, HARNESS_MS, slow=slow_ref)
        result = judged(tmp_path, reference, make_candidate(device, slow_cand))
        out.append((result.speedup, bool(result.significant) and result.speedup > 1 and not codes(result)))
    return out


def test_deciding_the_extension_from_the_host_clock_moves_no_figure_one_way(tmp_path, cuda_lock, monkeypatch):
    """Over many draws of passing episodes, a candidate that vetoes more blocks where it saw the reference slow reads
    no faster on average than one that leaves the decision to the band."""
    runs, p = 200, 0.25
    honest = _speedups(tmp_path, monkeypatch, lambda d, s: SlowIn(d, "candidate", LONG_MS, HARNESS_MS, slow=s), runs,
                       p)  # fmt: skip
    peeking = _speedups(tmp_path, monkeypatch, lambda d, s: Peeker(d, "candidate", LONG_MS, HARNESS_MS, slow=s), runs,
                        p)  # fmt: skip
    means = statistics.fmean(s for s, _ in honest), statistics.fmean(s for s, _ in peeking)
    wins = sum(a > b + 1e-9 for (a, _), (b, _) in zip(peeking, honest, strict=True))
    over = {"peeking": sum(s >= 1.05 for s, _ in peeking), "honest": sum(s >= 1.05 for s, _ in honest)}
    gains = {"peeking": sum(g for _, g in peeking), "honest": sum(g for _, g in honest)}  # significant, unflagged
    assert means[1] / means[0] < 1.01, (means, wins, over, gains)


# --- behaviour in the extended blocks --------------------------------------------------------------------------------


class ForgesWhenExtended(Worker):
    """Forges `share` of its calls in the blocks given again (beside a reference slow in a planned block), which it
    knows by their numbers."""

    def __init__(self, *args, share: float, planned: int = 4, **kwargs):
        super().__init__(*args, **kwargs)
        self.share, self.planned = share, planned

    def claims(self, command, real_ms):
        index = block_index(command)
        extended = index is not None and index >= self.planned
        return [t * self.share for t in real_ms] if extended else real_ms


@pytest.mark.parametrize("share", [0.5, 0.9, 0.97])
def test_forging_only_in_the_blocks_given_again_gains_no_more_than_the_allowance(tmp_path, cuda_lock, device, share):
    reference = SlowIn(device, "reference", LONG_MS, HARNESS_MS, slow={1})
    forger = ForgesWhenExtended(device, "candidate", LONG_MS, HARNESS_MS, share=share)
    result = judged(tmp_path, reference, forger)
    assert len(held_blocks(device, "candidate")) >= 8
    assert "timing_disputed" in codes(result) or result.speedup < 1.05, (codes(result), result.speedup)


class WrongWhenExtended(Jolted):
    """Wrong on every repetition of the blocks given again; `wrong` holds the repetitions the reference's check would
    find wrong."""

    def __init__(self, *args, wrong: set, **kwargs):
        super().__init__(*args, **kwargs)
        self.wrong, self.seen = wrong, 0

    def __call__(self, command: dict, event: str):
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and command["hold"] and command["reps"]:
            if self.seen >= 4:
                self.wrong.update(range(command["first"], command["first"] + command["reps"]))
            self.seen += 1
        return reply


class ChecksWrong(Jolted):
    """The reference, whose check finds the repetitions in `wrong`."""

    def __init__(self, *args, wrong: set, **kwargs):
        super().__init__(*args, **kwargs)
        self.wrong = wrong

    def mismatch(self, command: dict):
        bad = [r for r in command["reps"] if r in self.wrong]
        return [bad[0], {"summary": "wrong", "details": ""}] if bad else None


def test_wrong_outputs_only_in_the_blocks_given_again_are_found(tmp_path, cuda_lock):
    wrong: set = set()
    reference = ChecksWrong("reference", [], 1e-2, wrong=wrong, slow={0})
    candidate = WrongWhenExtended("candidate", [], 1e-2, wrong=wrong)
    (_, timing), log = _long_calls(tmp_path, reference, candidate)
    assert len(timing.blocks) == 8 and wrong
    assert timing.mismatch is not None and timing.mismatch[0] in wrong
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert [c["last"] for c in checks] == [False] * 7 + [True]


def test_turns_after_an_extension_of_an_odd_count_keep_abba(tmp_path, cuda_lock):
    """Five planned blocks (a 3.9 ms call: 25 repetitions) given again: ten, in turns that keep ABBA, numbered on."""
    slow = Jolted("reference", [], 3.9e-3, slow={0})
    (reference, candidate), log = _long_calls(tmp_path, slow, Jolted("candidate", [], 3.9e-3))
    assert len(reference.blocks) in (10, TIMING_BLOCKS), len(reference.blocks)
    names = [name for name, _ in _timed_blocks(log)]
    turns = [("reference", "candidate") if b % 2 == 0 else ("candidate", "reference") for b in range(len(names) // 2)]
    assert names == [n for pair in turns for n in pair]
    for side, timing in (("reference", reference), ("candidate", candidate)):
        firsts = [(c["first"], c["reps"]) for c in _blocks(log, side)]
        assert [f for f, _ in firsts] == [sum(r for _, r in firsts[:k]) for k in range(len(firsts))]
        assert len(timing.facts["times_ms"]) == timing.reps == sum(r for _, r in firsts)


class LeavesItRunningAndSlowsItsRehearsal(LeavesItRunning):
    """test_redteam_timing_order's SlowsItsRehearsal (few repetitions, every one pinned, each open credited as time for
    its work left running), beside a reference slow in four blocks, so the shape goes to sixteen blocks of five."""

    def after(self, command):
        return 0.3 if command["cmd"] == "time" and not command["hold"] and command["reps"] else 0.0


def test_work_left_running_through_sixteen_blocks_of_five_is_counted(tmp_path, cuda_lock, device):
    device.open_s = 0.35e-3
    leaver = LeavesItRunningAndSlowsItsRehearsal(device, "candidate", 0.2, 0.3, share=0.1)
    reference = SlowIn(device, "reference", 0.2, 0.3, pin_ms=0.05, slow={1, 2, 5, 6})
    result = judged(tmp_path, reference, leaver)
    assert len(held_blocks(device, "candidate")) > 4
    assert result.speedup < 1.1, (codes(result), result.speedup)


def test_the_checks_of_an_extended_shape_read_as_many_a_block_as_its_planned_ones(tmp_path, cuda_lock):
    """checked_per_block is set by the planned count: the blocks given again are read as the first were."""
    slow = Jolted("reference", [], 1e-2, slow={0})
    (_, candidate), log = _long_calls(tmp_path, slow, Jolted("candidate", [], 1e-2))
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert len(checks) == 8 and all(len(c["reps"]) == 5 for c in checks)
    assert timing_plan.checked_per_block(4) * 4 >= timing_plan.CHECKED_PER_BLOCK * TIMING_BLOCKS
