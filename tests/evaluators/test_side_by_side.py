"""The reference and the candidate timed in turns: the commands each process gets, the replies joined, the probes,
and the reference's check of each block while the candidate is stopped."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from evaluators import EvalOptions
from evaluators.judge import bands, timing_plan, verdicts
from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.judge.timing_plan import (
    CALIBRATION_READINGS,
    TIMING_BLOCKS,
    Block,
    ShapeTiming,
    Span,
    honest_reps,
    split,
    time_side_by_side,
)
from evaluators.judge.wall import SWITCH_MS, judge_timing, side_stream_counted
from evaluators.worker.device_lock import LockTimeout, device_lock

CALL_S = 1e-4  # each fake call: a 0.1 ms kernel
FIXED_S = 2e-3  # each fake timing command's cost beside its calls


@dataclass
class Reply:
    event: str
    meta: dict
    span: float
    then: Reply | None = None  # the seal's reply, where the command carried one (judge/timing_plan.Side.block)


def sealed(reply: Reply, command: dict, span: float) -> Reply:
    """`reply` with the seal's behind it where `command` asked for one: the handoff moves there."""
    if "then" in command:
        reply.then = Reply("sealed", {"handed": reply.meta.pop("handed")}, span)
    return reply


def pinned(command: dict, span: float) -> Reply:
    """The reference's pin (worker/pins.py), of its own block's outputs or of the candidate's, taking `span`."""
    return Reply("pinned", {"opened": len(command.get("reps", [])), "opened_bytes": 0, "open_ms": 0.0}, span)


class Process:
    """A worker answering the timing commands, recording them in one log shared with the other process."""

    def __init__(self, name: str, log: list, call_s: float = CALL_S, issue_ms: float = 0.02):
        self.name, self.log, self.call_s, self.issue_ms = name, log, call_s, issue_ms
        # A candidate's block begins with the device's switch from the reference's context (judge/wall.block_ms).
        self.switch_s = SWITCH_MS * 1e-3 if name == "candidate" else 0.0

    def __call__(self, command: dict, event: str) -> Reply:
        self.log.append((self.name, command))
        if command["cmd"] == "check_reps":
            return Reply("comparison", {"mismatch": self.mismatch(command)}, 0.0)
        if command["cmd"] == "drain":
            return Reply("drained", {"waited_ms": 0.0}, 0.0)
        if command["cmd"] == "warm":
            return Reply("warmed", {}, FIXED_S + command["calls"] * self.call_s)
        if command["cmd"] == "probe":
            return Reply("probe", {"side_stream_ms": 0.0}, FIXED_S)
        if command["cmd"] == "ping":
            return Reply("pong", {}, FIXED_S)  # all of a command's cost the pipe's: judge/wall.py credits it in full
        if command["cmd"] == "pin":
            return pinned(command, FIXED_S)
        first, reps = command["first"], command["reps"]
        meta = {
            "times_ms": [self.call_s * 1e3] * reps,
            "handed": [100 + first + k for k in range(reps)] if command["hold"] else [],  # a descriptor per output
            "label": "fake",
            "issue_ms": [self.issue_ms] * reps,
            "prepare_ms": [0.04] * reps,
        }
        switch_s = self.switch_s if command["hold"] and reps else 0.0
        return sealed(Reply("timing", meta, FIXED_S + switch_s + reps * self.call_s), command, FIXED_S)

    def mismatch(self, command: dict):
        """The reference's check: every candidate output matches."""
        return None


class Stopper:
    """The candidate's processes stopped and continued, as judge/pause.py does it, recorded in the log."""

    def __init__(self, log: list):
        self.log = log
        self.lag_s = 0.0  # no thread of theirs was in a system call when stopped
        self.ended = 0  # nor did any end while stopped

    def stop(self):
        self.log.append(("parent", {"cmd": "stop"}))

    def resume(self):
        self.log.append(("parent", {"cmd": "resume"}))


def quiet_for(log: list):
    @contextmanager
    def quiet():
        stopper = Stopper(log)
        stopper.stop()
        try:
            yield stopper
        finally:
            stopper.resume()

    return quiet


def where(reply: dict, count: int) -> dict:
    return {"pid": 1, "fds": reply["handed"][:count]}


CHANNEL = (1, 3)  # the candidate's marks, as process.Worker.marks names them (a serial, a descriptor)


def timed_side_by_side(reference, candidate, device, options, memory, room, log=None, post=None):
    log = [] if log is None else log
    return time_side_by_side(reference, candidate, 0, device, options, memory, room, quiet_for(log), where, post=post,
                             channel=CHANNEL)  # fmt: skip


@pytest.fixture
def cuda_lock(monkeypatch):
    monkeypatch.setattr(timing_plan, "device_key", lambda device: "cuda-fake")


def _timed(tmp_path, side_by_side: bool, device: str = "cuda", retained: int = 32, candidate_s=CALL_S,
           reference_issue_ms: float = 0.02, strict: bool = False, watched: bool = False):  # fmt: skip
    log = []
    memory = {"sizes": [{"name": "s", "input_bytes": 1, "output_bytes": 1 << 10}]}
    layout = {"side_by_side": side_by_side, "timing_sets": 2, "retained": retained, "retained_on_device": True}
    options = EvalOptions(cache_dir=tmp_path, strict=strict)
    reference = Process("reference", log, issue_ms=reference_issue_ms)
    candidate = Process("candidate", log, candidate_s, issue_ms=0.5)

    def room():
        log.append(("parent", {"cmd": "room"}))
        return layout

    post = (lambda command: log.append(("reference", command))) if watched else None  # a command with no reply
    timings = timed_side_by_side(reference, candidate, device, options, memory, room, log, post)
    return timings, [(name, c) for name, c in log if name != "parent" or c["cmd"] in ("stop", "resume")]


def _timed_blocks(log) -> list[tuple[str, dict]]:
    """Both sides' timed blocks in order: timing commands less the rehearsals (held, but not kept or checked) and
    the one with no repetition. The candidate's blocks are those the reference's checks name."""
    checked = {c["blocks"][0][2] for name, c in log if c["cmd"] == "check_reps"}
    return [(name, c) for name, c in log if c["cmd"] == "time" and c["reps"] and c["nonce"] in checked]


def _blocks(log, side: str) -> list[dict]:
    """One side's timed blocks."""
    return [c for name, c in _timed_blocks(log) if name == side]


def test_blocks_alternate_and_cover_every_repetition_once(tmp_path, cuda_lock):
    """Warm-ups first, then each side's blocks in turns, numbered throughout; the replies joined in order."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=True)
    timed = _timed_blocks(log)
    # ABBA: the first of each pair of turns alternates, so a steady drift favours neither.
    assert [name for name, _ in timed] == ["reference", "candidate", "candidate", "reference"] * (TIMING_BLOCKS // 2)
    for timing, side in ((reference, "reference"), (candidate, "candidate")):
        blocks = _blocks(log, side)
        assert [(c["first"], c["reps"]) for c in blocks] == split(timing.reps, TIMING_BLOCKS)
        assert timing.span.commands == TIMING_BLOCKS and timing.span.reps == timing.reps
        assert len(timing.facts["times_ms"]) == timing.reps
        assert all(c["hold"] is True for c in blocks)  # every timed output held and handed over
        assert all(c["keep"] is (side == "reference") for c in blocks)  # the reference's copies answer its check
    commands = [(name, c["cmd"], c.get("reps")) for name, c in log]
    first_block = commands.index(("reference", "time", _blocks(log, "reference")[0]["reps"]))
    assert {name for name, cmd, _ in commands[first_block:] if cmd == "warm"} == set()  # both warm before any block
    fixed = [c for name, c in log if name == "reference" and c["cmd"] == "time" and c["reps"] == 0]
    pings = [c for name, c in log if name == "reference" and c["cmd"] == "ping"]
    assert len(fixed) == len(pings) == CALIBRATION_READINGS and log.index(("reference", fixed[0])) > log.index(
        ("candidate", _blocks(log, "candidate")[-1]))  # fmt: skip
    # Each side's timing sets go back as its first command of another kind begins (its probe): never inside a block.
    probes = [i for i, (name, c) in enumerate(log) if c["cmd"] == "probe"]
    last_block = max(log.index(entry) for entry in _timed_blocks(log))
    assert len(probes) == 2 and min(probes) > last_block


@pytest.mark.parametrize("side_by_side", [True, False])
def test_both_sides_time_the_same_inputs_block_by_block(tmp_path, cuda_lock, side_by_side):
    """Block b runs on one nonce on either side: the reference's copies of it serve its check."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=side_by_side)
    for side, timing in (("reference", reference), ("candidate", candidate)):
        assert [c["nonce"] for c in _blocks(log, side)] == [b.nonce for b in timing.blocks]
    assert [b.nonce for b in reference.blocks] == [b.nonce for b in candidate.blocks]
    blocks = {b.nonce for b in candidate.blocks}
    rehearsals = [c for _, c in log if c["cmd"] == "time" and c["reps"] and c["nonce"] not in blocks]
    assert len(rehearsals) == 2  # each side's rehearsal: inputs no timed repetition uses, its outputs never read
    assert not {c["nonce"] for c in rehearsals} & {b.nonce for b in candidate.blocks}


@pytest.mark.parametrize("side_by_side", [True, False])
@pytest.mark.parametrize("strict", [False, True])
def test_every_block_of_the_candidate_is_checked_while_it_is_stopped(tmp_path, cuda_lock, side_by_side, strict):
    """After each of its blocks the reference checks repetitions the parent picks then from all those the block
    handed over (all of them in a strict run), before the candidate runs again; it runs only while it answers a
    command."""
    (_, candidate), log = _timed(tmp_path, side_by_side=side_by_side, strict=strict)
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert len(checks) == len(candidate.blocks)
    for check, block in zip(checks, candidate.blocks, strict=True):
        every = list(range(block.first, block.first + block.reps))
        if strict:
            assert check["reps"] == every
        else:
            assert len(check["reps"]) == timing_plan.checked_per_block(len(candidate.blocks))
            assert set(check["reps"]) <= set(every)
    assert [c["fds"] for c in checks] == [[100 + r for r in c["reps"]] for c in checks]
    for check, block in zip(checks, candidate.blocks, strict=True):  # the others' counts go (device_handoff)
        assert sorted(check["fds"] + check["unread_fds"]) == [
            100 + r for r in range(block.first, block.first + block.reps)
        ]
    picked = {r for c in checks for r in c["reps"]}
    assert strict or len(picked) < candidate.reps  # a sample, not the whole
    # The reference keeps what its checks draw until the last, on both paths: given back after each block, its
    # clearing slowed the candidate's next one (test_redteam_drain_reads.py).
    assert [c["last"] for c in checks] == [False] * (len(checks) - 1) + [True]
    running = False
    for name, command in log:
        if name == "parent":
            running = command["cmd"] == "resume"
        elif command["cmd"] == "pin" and "reps" in command:
            assert running  # the reference's pin of the candidate's block, before its stop (worker/pins.py)
        else:
            assert running == (name == "candidate"), (name, command["cmd"])
    for command in _blocks(log, "candidate"):
        later = log[log.index(("candidate", command)) + 1 :]
        before_its_next = later[: next((k for k, (n, _) in enumerate(later) if n == "candidate"), len(later))]
        checked = [c["reps"] for _, c in before_its_next if c["cmd"] == "check_reps"]
        assert len(checked) == 1 and set(checked[0]) <= set(range(command["first"], command["first"] + command["reps"]))


@pytest.mark.parametrize("side_by_side", [True, False])
def test_each_block_is_pinned_right_behind_its_seal_and_the_check_reads_what_was_pinned(tmp_path, cuda_lock,
                                                                                        side_by_side):  # fmt: skip
    """The candidate's block is followed at once by the reference's pin of the repetitions its check then reads, before
    the candidate is stopped; the reference's own blocks by its pin of as many of its own outputs."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=side_by_side)
    for side, timing in (("reference", reference), ("candidate", candidate)):
        for command, block in zip(_blocks(log, side), timing.blocks, strict=True):
            after = log[log.index((side, command)) + 1]
            assert after[0] == "reference" and after[1]["cmd"] == "pin"
            assert block.picked == sorted(block.picked) and len(block.picked) == len(set(block.picked))
            if side == "reference":
                assert after[1]["own"] == block.picked and after[1]["first"] == block.first
            else:
                assert after[1]["reps"] == [block.first + k for k in block.picked]
                # Every descriptor of the block goes, read in order: a process watching its files learns no pick.
                assert after[1]["fds"] == [100 + r for r in range(block.first, block.first + block.reps)]
                assert log[log.index(after) + 1] == ("parent", {"cmd": "stop"})
            assert block.pin_s == FIXED_S  # the fake pin's span
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert [c["reps"] for c in checks] == [[b.first + k for k in b.picked] for b in candidate.blocks]


def log_commands(log) -> list[dict]:
    """The processes' commands in order, as `sides` lists them (the parent's entries left out)."""
    return [c for name, c in log if name != "parent"]


@pytest.mark.parametrize("side_by_side", [True, False])
def test_the_reference_watches_each_block_until_its_pin_the_candidates_armed_before_it(tmp_path, cuda_lock,
                                                                                       side_by_side):  # fmt: skip
    """The candidate's block's watch is armed on its marks after the reference's drain and before the block is
    sent, which asks for the mark it begins at (worker/window_watch.py); the reference's own right before its pin, but
    for the shape's first (the pin's kernels load there); each pin ends one."""
    (_, candidate), log = _timed(tmp_path, side_by_side=side_by_side, watched=True)
    commands = log_commands(log)
    sides = [(name, c["cmd"]) for name, c in log if name != "parent"]
    pins = [i for i, entry in enumerate(sides) if entry == ("reference", "pin")]
    own = [i for i in pins if "own" in commands[i]]
    first_own = next(i for i in own if commands[i].get("first") == 0)
    assert all(sides[i - 1] == ("reference", "watch") and "on" not in commands[i - 1] for i in own if i != first_own)
    assert sides[first_own - 1] != ("reference", "watch")
    blocks = [i for i, (name, c) in enumerate(zip(sides, commands, strict=True))
              if name == ("candidate", "time") and c["hold"] and c["reps"]]  # fmt: skip
    assert len(blocks) == len(candidate.blocks) and all(commands[i]["mark"] for i in blocks)
    for i in blocks:
        assert sides[i - 2 : i] == [("reference", "drain"), ("reference", "watch")], sides[i - 3 : i + 2]
        assert commands[i - 1]["on"] == CHANNEL
        assert sides[i + 1] == ("reference", "pin") and "own" not in commands[i + 1]
    assert sides.count(("reference", "watch")) == len(pins) - 1


def test_a_strict_run_pins_as_many_as_any_run_and_checks_every_repetition(tmp_path, cuda_lock):
    """All of a block is checked, but only the picked are pinned: a pin of all would credit an IPC open a repetition,
    time in which the device runs what the candidate left (a red team of the pin, 5x in simulation)."""
    (_, candidate), log = _timed(tmp_path, side_by_side=True, strict=True)
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    for check, block in zip(checks, candidate.blocks, strict=True):
        assert len(block.picked) == timing_plan.checked_per_block(len(candidate.blocks)) < block.reps
        assert check["reps"] == list(range(block.first, block.first + block.reps)) and check["unread"] == []


def test_a_wrong_block_is_the_candidates_verdict_and_its_later_blocks_go_unchecked(tmp_path, cuda_lock):
    """The first mismatch is kept; the workers still finish the shape, each later block's check command reads nothing
    but lets go of what the block shared, and the last one gives the memory back."""
    log, memory = [], {"sizes": [{"name": "s", "input_bytes": 1, "output_bytes": 1 << 10}]}
    layout = {"side_by_side": True, "timing_sets": 2, "retained": 32, "retained_on_device": True}
    reference = Process("reference", log)
    reference.mismatch = lambda command: (  # every repetition of the first block (0-30) is wrong
        [command["reps"][0], {"summary": "wrong", "details": ""}]
        if command["reps"] and command["reps"][0] <= 30
        else None
    )
    options = EvalOptions(cache_dir=tmp_path)
    _, candidate = timed_side_by_side(reference, Process("candidate", log), "cuda", options, memory, lambda: layout)
    assert candidate.mismatch is not None and candidate.mismatch[1]["summary"] == "wrong"
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert len(checks) == len(candidate.blocks) and checks[-1]["last"]  # each lets go of its block's copies
    assert [len(c["reps"]) for c in checks] == [timing_plan.CHECKED_PER_BLOCK] + [0] * (len(checks) - 1)
    for check, block in zip(checks, candidate.blocks, strict=True):  # a pinned one's count goes as it is dropped
        every = list(range(block.first, block.first + block.reps))
        assert sorted(check["unread"] + [block.first + k for k in block.picked]) == every
        assert len(check["unread_fds"]) == len(check["unread"])
    assert len(candidate.facts["times_ms"]) == candidate.reps


def test_each_block_has_a_nonce_of_its_own_drawn_as_it_is_sent(tmp_path, cuda_lock):
    """No block's inputs follow from what an earlier command carried: one call cannot do later blocks' work."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=True)
    nonces = [b.nonce for b in candidate.blocks]
    assert len(set(nonces)) == len(nonces) == TIMING_BLOCKS
    for command in _blocks(log, "candidate"):
        told_before = [c for n, c in log[: log.index(("candidate", command))] if n == "candidate"]
        assert all(command["nonce"] != c.get("nonce") for c in told_before)


def test_the_parents_clock_takes_each_commands_fixed_cost_out(tmp_path, cuda_lock):
    """Eight commands a side: the calibration counts eight fixed costs, so an honest timer is not disputed."""
    (reference, candidate), _ = _timed(tmp_path, side_by_side=True)
    verdict = judge_timing(candidate, reference, honest_reps("cuda", EvalOptions()), "cuda")
    assert verdict.parent_ms == pytest.approx(CALL_S * 1e3, rel=0.01) and not verdict.disputed
    (reference, slow), _ = _timed(tmp_path, side_by_side=True, candidate_s=3 * CALL_S)
    slow.facts["times_ms"] = [CALL_S * 1e3] * slow.reps  # a timer claiming a third of what the calls took
    assert judge_timing(slow, reference, honest_reps("cuda", EvalOptions()), "cuda").disputed


def test_outputs_the_device_keeps_few_of_come_in_more_blocks(tmp_path, cuda_lock):
    """Four copies at once: no block of either side holds more, and every block is still checked."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=True, retained=4)
    for side in ("reference", "candidate"):
        assert max(c["reps"] for c in _blocks(log, side)) <= 4
    assert len(candidate.blocks) == len(reference.blocks) == -(-max(reference.reps, candidate.reps) // 4)
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert [len(c["reps"]) for c in checks] == [min(timing_plan.CHECKED_PER_BLOCK, b.reps) for b in candidate.blocks]


def test_a_side_far_faster_than_the_other_is_cut_to_what_its_blocks_can_hold(tmp_path, cuda_lock):
    """Two copies at once and a 5 ms candidate's 20 repetitions: ten blocks, the fast reference cut to two a block."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=True, retained=2, candidate_s=5e-3)
    assert candidate.reps == reference.reps == 20 and len(candidate.blocks) == len(reference.blocks) == 10
    assert {c["reps"] for side in ("reference", "candidate") for c in _blocks(log, side)} == {2}


def test_without_room_for_both_the_reference_is_timed_first_and_gives_its_sets_back(tmp_path, cuda_lock):
    """Each side in blocks; the reference's probe (its sets given back) ends its part before the candidate's.

    The reference then only checks the candidate's blocks, keeping no copies of its own (no room for them)."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=False)
    ours = [c for _, c in log if c["cmd"] in ("check_reps", "drain") or (c["cmd"] == "pin" and "reps" in c)]
    names = [name for name, c in log if name != "parent" and c not in ours]
    assert names == sorted(names, key=lambda name: name == "candidate")  # every reference command first
    assert not any(c.get("keep") for _, c in log)
    assert reference.span.commands == candidate.span.commands == TIMING_BLOCKS
    blocks = _blocks(log, "candidate")
    assert [(c["first"], c["reps"]) for c in blocks] == split(candidate.reps, TIMING_BLOCKS)
    reference_probe = next(i for i, (name, c) in enumerate(log) if name == "reference" and c["cmd"] == "probe")
    assert reference_probe < min(i for i, (name, _) in enumerate(log) if name == "candidate")


def test_the_timing_is_laid_out_under_the_lock_before_any_command_and_its_layout_travels(tmp_path, cuda_lock):
    """The device's memory is read with the timing lock held: no other evaluation's timing tensors come or go."""
    log, options = [], EvalOptions(cache_dir=tmp_path)
    layout = {"side_by_side": True, "timing_sets": 3, "retained": 2, "retained_on_device": False}

    def room():
        with pytest.raises(LockTimeout):  # held: by this timing
            with device_lock(tmp_path, "cuda-fake", timeout_s=0):
                pass
        log.append(("parent", {"cmd": "room"}))
        return layout

    memory = {"sizes": [{"name": "s", "input_bytes": 1, "output_bytes": 1 << 10}]}
    timings = timed_side_by_side(Process("reference", log), Process("candidate", log), "cuda", options, memory, room)
    log = [(name, c) for name, c in log if c["cmd"] not in ("stop", "resume")]
    assert log[0] == ("parent", {"cmd": "room"}) and len([c for _, c in log if c["cmd"] == "room"]) == 1
    times = [c for name, c in log if c["cmd"] == "time"]
    assert {(c["timing_sets"], c["held_on_device"]) for c in times} == {(3, False)}
    assert all(timing.layout == layout for timing in timings)


def test_the_cpu_times_each_repetition_as_a_block(tmp_path):
    """Under the interpreter a side makes three repetitions: three blocks of one each, in turn, no rehearsal."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=True, device="cpu")
    assert reference.reps == candidate.reps == 3
    assert [(c["first"], c["reps"]) for c in _blocks(log, "candidate")] == [(0, 1), (1, 1), (2, 1)]
    assert not [c for _, c in log if c["cmd"] == "probe"]


@pytest.mark.parametrize("side_by_side", [True, False])
def test_both_sides_hold_the_stream_for_a_lead_set_by_the_references_launches(tmp_path, cuda_lock, side_by_side):
    """The reference's rehearsal issues its calls in 0.05 ms, prepares them in 0.04: both sides hold 0.21 ms.

    The candidate's own issue times (0.5 ms here) set nothing: its launches beyond the lead stay in its figure.
    """
    (reference, candidate), log = _timed(tmp_path, side_by_side=side_by_side, reference_issue_ms=0.05)
    rehearsals = [(name, c) for name, c in log if c["cmd"] == "time" and c["reps"]
                  and c["nonce"] not in {b.nonce for b in candidate.blocks}]  # fmt: skip
    assert [name for name, _ in rehearsals] == ["reference", "candidate"]
    assert 0 < rehearsals[0][1]["lead_ms"] < 0.01  # enough to calibrate the spin, before the lead is known
    assert rehearsals[1][1]["lead_ms"] == pytest.approx(0.21)
    timed = [c for side in ("reference", "candidate") for c in _blocks(log, side)]
    assert [c["lead_ms"] for c in timed] == pytest.approx([0.21] * len(timed))
    assert candidate.facts["issue_ms"] == [0.5] * candidate.reps  # joined like the times, for the verdict


def test_the_lead_has_a_cap_and_nothing_without_host_times():
    assert timing_plan.lead_ms({"issue_ms": [0.1, 0.3, 0.2], "prepare_ms": [0.1] * 3}) == pytest.approx(0.75)
    assert timing_plan.lead_ms({"issue_ms": [5.0] * 3, "prepare_ms": [0.1] * 3}) == timing_plan.LEAD_CAP_MS
    assert timing_plan.lead_ms(None) == timing_plan.lead_ms({"issue_ms": [0.1]}) == 0.0  # a CPU reply has neither


def test_split_covers_the_repetitions_in_nearly_equal_runs():
    assert split(10, 3) == [(0, 3), (3, 3), (6, 4)]
    assert split(8, 8) == [(i, 1) for i in range(8)]
    assert sum(n for _, n in split(499, 8)) == 499


def test_slow_calls_come_in_fewer_blocks_of_at_least_five(tmp_path, cuda_lock):
    """A 5 ms call gets the 20 repetitions of the floor: four blocks of five a side, still taken in turns."""
    (reference, candidate), log = _timed(tmp_path, side_by_side=True, candidate_s=5e-3)
    assert candidate.reps == 20 and reference.reps == 4 * 32  # the reference cut to what four blocks hold
    assert [(c["first"], c["reps"]) for c in _blocks(log, "candidate")] == [(0, 5), (5, 5), (10, 5), (15, 5)]
    assert [c["reps"] for c in _blocks(log, "reference")] == [32] * 4


def _judged_with_probes(candidate_side_ms: float, reference_side_ms: float, call_ms: float = 0.018, issue_ms=None):
    """One 100-repetition shape on a GPU, both sides at `call_ms`, with the side-stream probes' readings."""
    result = EvalResult(status="correct", device="cuda")
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    sides = []
    for side_ms, switch_s in ((candidate_side_ms, SWITCH_MS * 1e-3), (reference_side_ms, 0.0)):
        facts = {"times_ms": [call_ms] * 100}
        if issue_ms is not None:
            facts["issue_ms"] = issue_ms
        block = Block(0, 100, 0, 0.1 + switch_s)  # the candidate's begins with the switch from the reference's context
        sides.append(ShapeTiming(100, facts, Span(block.seconds, 100), [block], side_stream_ms=side_ms))
    meta = {"shapes": [{"roofline": None, "dtype": "fp32"}], "device_name": "NVIDIA H100 80GB HBM3"}
    assert verdicts.apply_shape_timing(result, 0, *sides, meta, EvalOptions())
    return result.shapes[0], [f.code for f in result.flags]


def test_the_side_stream_probe_counts_only_what_exceeds_the_references_reading():
    """On an H100 the probe read 1.9 us for an 18 us reference and 2.6 us for the same code as the candidate."""
    shape, flags = _judged_with_probes(0.0026, 0.0019)
    assert shape.runtime_ms == shape.baseline_ms == pytest.approx(0.018) and not flags
    shape, flags = _judged_with_probes(0.0, 0.0019)  # a lower reading than the reference's counts nothing
    assert shape.runtime_ms == pytest.approx(0.018) and shape.baseline_ms == pytest.approx(0.018)
    shape, flags = _judged_with_probes(0.0019 + 0.004, 0.0019)  # 4 us of work beside an 18 us call: counted
    assert shape.runtime_ms == pytest.approx(0.022) and not flags
    shape, flags = _judged_with_probes(0.0019 + 0.05, 0.0019)  # beyond 20 us: counted and a hard flag
    assert shape.runtime_ms == pytest.approx(0.068) and flags == ["side_stream"]


def test_the_side_stream_noise_band_grows_with_the_call():
    # On an H100 an honest 18 us call's reading exceeded the reference's by 1.0 us: within the band now.
    assert side_stream_counted(0.00144, 0.00041, 0.018) == 0.0
    assert side_stream_counted(0.0044, 0.002, 0.018) == 0.0  # within 2.5 us
    assert side_stream_counted(0.0046, 0.002, 0.018) == pytest.approx(0.0026)
    assert side_stream_counted(0.08, 0.02, 9.0) == 0.0  # 60 us on a 9 ms call: within 1 %
    assert side_stream_counted(0.2, 0.02, 9.0) == pytest.approx(0.18)


def test_calls_that_issue_slower_than_they_run_are_flagged_but_timed_as_the_device_ran_them():
    """0.03 ms to issue an 0.018 ms call: a soft flag, the device's figure kept; a reply without issue times: none."""
    shape, flags = _judged_with_probes(0.0, 0.0, issue_ms=[0.03] * 100)
    assert flags == ["host_bound"] and shape.runtime_ms == pytest.approx(0.018)
    for issued in ([0.01] * 100, [0.03] * 99, [float("nan")] * 100, "fast", None):
        assert _judged_with_probes(0.0, 0.0, issue_ms=issued)[1] == []


def test_every_timing_holds_the_host_alone_and_past_the_wait_goes_on_without_it(tmp_path, cuda_lock, monkeypatch):
    """Another GPU's first calls (held shared) keep a timing waiting; past the wait it goes on, and says so."""
    from evaluators.worker import device_lock
    from evaluators.worker.device_lock import host_lock

    monkeypatch.setattr(device_lock, "HOST_WAIT_S", 0.3)
    memory = {"sizes": [{"name": "s", "input_bytes": 1, "output_bytes": 1024}]}
    layout = {"side_by_side": True, "timing_sets": 2, "retained": 4, "retained_on_device": True}
    options = EvalOptions(cache_dir=tmp_path)

    def timed():
        log = []
        reference, candidate = Process("reference", log), Process("candidate", log)
        return timed_side_by_side(reference, candidate, "cuda", options, memory, lambda: layout)

    with host_lock(tmp_path):  # another GPU of the machine loading its kernels
        started = time.perf_counter()
        assert not timed()[1].host_held  # it waited for the host, then went on without it
        assert time.perf_counter() - started >= 0.3
    assert timed()[1].host_held


def test_the_band_reports_the_share_two_processes_may_differ_by_and_holds_it():
    """The floor is 1 % plus a twentieth of the reference's issue time over its call, at most LAUNCH_CAP: 0.002 ms
    over 0.018 ms here."""
    result = EvalResult(status="correct", device="cuda")
    result.shapes.append(ShapeResult(name="s", kind="benchmark", status="correct"))
    facts = {"times_ms": [0.018] * 100, "issue_ms": [0.002] * 100}
    blocks = [Block(0, 50, 0, 0.05), Block(50, 50, 1, 0.05)]
    sides = [ShapeTiming(100, dict(facts), Span(0.1, 100), blocks) for _ in range(2)]
    meta = {"shapes": [{"roofline": None, "dtype": "fp32"}], "device_name": "NVIDIA H100 80GB HBM3"}
    assert verdicts.apply_shape_timing(result, 0, *sides, meta, EvalOptions())
    shape = result.shapes[0]
    assert shape.process_floor == pytest.approx(0.01 + 0.05 * 0.002 / 0.018)
    low, high = shape.speedup_band
    assert low <= 1 / (1 + shape.process_floor) and high >= 1 + shape.process_floor
    within_low, within_high = shape.band_within  # the blocks' own band, kept to weigh another floor against
    assert low < within_low <= 1.0 <= within_high < high
    assert shape.host_speed_ratio is None  # not host-bound: the band is not widened by the hosts' speeds


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_on_a_gpu_the_reference_waits_for_an_idle_device_before_each_timing_command(tmp_path, cuda_lock, device):
    """Work the stopped candidate queued before its stop still runs on the device: the reference waits it out before
    each timing command of either side."""
    (_, candidate), log = _timed(tmp_path, side_by_side=True, device=device)
    commands = [c["cmd"] for name, c in log if name == "reference"]
    times = [i for i, cmd in enumerate(commands) if cmd == "time"]
    sides = [(name, c["cmd"]) for name, c in log if name != "parent"]
    theirs = [i for i, entry in enumerate(sides) if entry == ("candidate", "time")]
    if device == "cpu":
        assert "drain" not in commands
    else:
        assert times and all(commands[i - 1] == "drain" for i in times)
        assert theirs and all(sides[i - 1] == ("reference", "drain") for i in theirs)
    # The device was idle at once: what is left is the parent's guard after each stop, MIN_GUARD_S at most each.
    assert candidate.drained_ms <= len(times) * timing_plan.MIN_GUARD_S * 1e3


def test_the_guard_after_a_stop_follows_its_lag_between_a_floor_and_a_cap():
    """8x what the stop waited for threads in a system call; 2 ms at least, and a candidate with many threads running
    through its stop holds the evaluation GUARD_CAP_S at most."""

    class Stopped:
        def __init__(self, lag_s):
            self.lag_s = lag_s

    assert timing_plan._guard_s(Stopped(0.0)) == timing_plan.MIN_GUARD_S
    assert timing_plan._guard_s(Stopped(0.01)) == pytest.approx(0.08)
    assert timing_plan._guard_s(Stopped(100 * 0.2)) == timing_plan.GUARD_CAP_S


def test_each_timed_shape_keeps_the_parents_clock_beside_what_the_candidate_claimed():
    """The figures the dispute check weighed (judge/wall.py), kept in the result: what bench/timer_gaps.py reads."""
    shape, _ = _judged_with_probes(0.0, 0.0, issue_ms=[0.004] * 100)
    assert shape.wall.claimed_ms == pytest.approx(0.018) and shape.wall.slack_ms > 0
    assert shape.wall.parent_ms == pytest.approx(0.018, rel=0.01)  # the reference's calibration, both sides alike
    assert shape.wall.issue_ms == shape.wall.reference_issue_ms == pytest.approx(0.004)


class DrawingProcess(Process):
    """A worker whose warm-up spans also hold an input draw per call (`draw_s`), as a large input's does on a GPU;
    its rehearsal's timer claims `claimed_ms` a call where given."""

    def __init__(self, name: str, log: list, call_s: float, draw_s: float = 0.0, claimed_ms=None):
        super().__init__(name, log, call_s)
        self.draw_s, self.claimed_ms = draw_s, claimed_ms

    def __call__(self, command: dict, event: str) -> Reply:
        reply = super().__call__(command, event)
        if command["cmd"] == "warm":
            reply.span += command["calls"] * self.draw_s
        if command["cmd"] == "time" and not command["hold"] and command["reps"] and self.claimed_ms is not None:
            reply.meta["times_ms"] = [self.claimed_ms] * command["reps"]
        return reply


def _rehearsed(tmp_path, reference: Process, candidate: Process):
    layout = {"side_by_side": True, "timing_sets": 2, "retained": 64, "retained_on_device": True}
    memory = {"sizes": [{"name": "s", "input_bytes": 1, "output_bytes": 1 << 10}]}
    options = EvalOptions(cache_dir=tmp_path)
    return timed_side_by_side(reference, candidate, "cuda", options, memory, lambda: layout, reference.log)


def test_the_rehearsals_events_size_the_repetitions_where_the_warm_up_reads_high(tmp_path, cuda_lock):
    """A 2.5 ms call whose warm-up spans also hold 2.5 ms of input draws each: the warm-up alone plans 20 repetitions,
    the rehearsal's event times the 40 that 100 ms of calls give."""
    log = []
    reference, candidate = (
        DrawingProcess("reference", log, 2.5e-3, 2.5e-3),
        DrawingProcess("candidate", log, 2.5e-3, 2.5e-3),
    )
    timings = _rehearsed(tmp_path, reference, candidate)
    assert [timing.reps for timing in timings] == [40, 40]


def test_a_rehearsal_claiming_slow_calls_is_held_to_the_parents_clock(tmp_path, cuda_lock):
    """A 0.1 ms call whose rehearsal claims 50 ms: held to the rehearsal's 0.5 ms a repetition on the parent's clock,
    it gets 200 repetitions and all sixteen blocks, not the 20 and two blocks its claim would buy."""
    log = []
    _, candidate = _rehearsed(
        tmp_path, Process("reference", log), DrawingProcess("candidate", log, CALL_S, claimed_ms=50.0)
    )
    assert candidate.reps == 200 and len(candidate.blocks) == TIMING_BLOCKS


def test_a_rehearsal_claiming_fast_calls_multiplies_the_timing_by_ten_at_most(tmp_path, cuda_lock):
    """A 20 ms call whose rehearsal claims a nanosecond: 49 repetitions (a tenth of 20.4 ms), not the most, 500."""
    log = []
    reference = DrawingProcess("reference", log, 20e-3)
    _, candidate = _rehearsed(tmp_path, reference, DrawingProcess("candidate", log, 20e-3, claimed_ms=1e-6))
    assert candidate.reps == 49


@pytest.mark.parametrize(
    "times", [None, [], ["1.0"], [True], [10**400], [float("nan")], [float("inf")], [-1.0], [1e12], "fast"]
)
def test_a_rehearsal_without_durations_leaves_the_warm_ups_plan(times):
    assert timing_plan.rehearsed_reps({"times_ms": times}, 1.0, 37, "cuda", EvalOptions()) == 37
    assert timing_plan.rehearsed_reps({"times_ms": [1.0]}, float("nan"), 37, "cuda", EvalOptions()) == 37


class SlowRehearsal(DrawingProcess):
    """A worker whose rehearsal sleeps `sleep_s` a repetition, inside the parent's clock, and claims as much."""

    def __init__(self, *args, sleep_s: float, **kwargs):
        super().__init__(*args, claimed_ms=sleep_s * 1e3, **kwargs)
        self.sleep_s = sleep_s

    def __call__(self, command: dict, event: str) -> Reply:
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and not command["hold"]:
            reply.span += command["reps"] * self.sleep_s
        return reply


def test_a_candidate_given_few_blocks_has_no_fewer_outputs_checked(tmp_path, cuda_lock):
    """A rehearsal slept through at 50 ms a call buys the least repetitions, 20 in four blocks; the reference then
    reads every one of them, as many as sixteen blocks' two each would have had read."""
    log = []
    candidate = SlowRehearsal("candidate", log, CALL_S, sleep_s=50e-3)
    _, candidate = _rehearsed(tmp_path, Process("reference", log), candidate)
    assert candidate.reps == 20 and len(candidate.blocks) == 4
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert [len(c["reps"]) for c in checks] == [5] * 4
    assert timing_plan.checked_per_block(2) == 16 and timing_plan.checked_per_block(64) == timing_plan.CHECKED_PER_BLOCK


HONEST = object()  # Jolted's claims: its times as measured


class Jolted(Process):
    """A process of `call_s` calls whose held blocks numbered in `slow` (0: its first) read `by` slower, span and times;
    `claims` replaces the times it reports (a candidate's malformed claim)."""

    def __init__(self, name: str, log: list, call_s: float, slow=(), by: float = 0.5, claims=HONEST,
                 issue_ms: float = 0.02):  # fmt: skip
        super().__init__(name, log, call_s, issue_ms)
        self.slow, self.by, self.claims, self.held = set(slow), by, claims, 0

    def __call__(self, command: dict, event: str) -> Reply:
        reply = super().__call__(command, event)
        if command["cmd"] == "time" and command["hold"] and command["reps"]:
            if self.held in self.slow:
                reply.meta["times_ms"] = [t * (1 + self.by) for t in reply.meta["times_ms"]]
                reply.span += command["reps"] * self.call_s * self.by
            if self.claims is not HONEST:
                reply.meta["times_ms"] = [self.claims] * command["reps"]
            self.held += 1
        return reply


def _long_calls(tmp_path, reference: Process, candidate: Process, device: str = "cuda"):
    """A 10 ms call: do_bench's budget gives it 20 repetitions, four blocks of five a side on a GPU."""
    log = []
    layout = {"side_by_side": True, "timing_sets": 2, "retained": 32, "retained_on_device": True}
    reference.log = candidate.log = log
    options = EvalOptions(cache_dir=tmp_path)
    timings = timed_side_by_side(reference, candidate, device, options, {"sizes": []}, lambda: layout, log)
    return timings, log


def test_a_steady_shape_of_few_blocks_gets_no_more(tmp_path, cuda_lock):
    (reference, candidate), log = _long_calls(tmp_path, Jolted("reference", [], 1e-2), Jolted("candidate", [], 1e-2))
    assert reference.reps == candidate.reps == 20 and len(reference.blocks) == len(candidate.blocks) == 4


def test_a_shape_left_wide_by_one_slow_block_gets_as_many_blocks_again(tmp_path, cuda_lock):
    """The reference's first block of four 50 % slow: its figure reaches past WIDE_BAND, so both sides run four more,
    numbered on, each on a nonce of its own, in the same turns, each of the candidate's checked and only the last
    one last; the median of eight sets the slow block aside."""
    slow = Jolted("reference", [], 1e-2, slow={0})
    (reference, candidate), log = _long_calls(tmp_path, slow, Jolted("candidate", [], 1e-2))
    assert reference.reps == candidate.reps == 40
    for side, timing in (("reference", reference), ("candidate", candidate)):
        assert [(c["first"], c["reps"]) for c in _blocks(log, side)] == [(5 * b, 5) for b in range(8)]
        assert len(timing.facts["times_ms"]) == timing.span.reps == 40 and timing.span.commands == 8
    assert [name for name, _ in _timed_blocks(log)] == ["reference", "candidate", "candidate", "reference"] * 4
    assert len({b.nonce for b in candidate.blocks}) == 8
    checks = [c for _, c in log if c["cmd"] == "check_reps"]
    assert [c["blocks"][0][:2] for c in checks] == [[b.first, b.reps] for b in candidate.blocks]
    assert [c["last"] for c in checks] == [False] * 7 + [True]
    last_block = log.index(("candidate", _blocks(log, "candidate")[-1]))
    assert min(i for i, (_, c) in enumerate(log) if c["cmd"] == "probe") > last_block
    assert bands.reach(timing_plan.block_times(reference)) < timing_plan.WIDE_BAND


def test_more_blocks_stop_at_timing_blocks_a_side(tmp_path, cuda_lock):
    """A reference slow in every other block stays wide: its blocks go 4, 8, 16, and no further."""
    noisy = Jolted("reference", [], 1e-2, slow=set(range(0, 64, 2)))
    (reference, candidate), _ = _long_calls(tmp_path, noisy, Jolted("candidate", [], 1e-2))
    assert len(reference.blocks) == len(candidate.blocks) == TIMING_BLOCKS and reference.reps == 80


@pytest.mark.parametrize("claims", ["fast", 0, -1.0, None, 1e-310])
def test_the_candidates_claims_decide_nothing_of_more_blocks(tmp_path, cuda_lock, claims):
    """Read from the reference's blocks alone: whatever the candidate claims, a slow reference block gets as many again
    (a candidate that could veto them kept the reference's slow blocks: tests/evaluators/redteam/
    test_redteam_more_blocks.py), and a steady reference none."""
    for slow, blocks in (({0}, 8), (set(), 4)):
        reference = Jolted("reference", [], 1e-2, slow=slow)
        candidate = Jolted("candidate", [], 1e-2, claims=claims, slow={0, 2})
        (reference, candidate), _ = _long_calls(tmp_path, reference, candidate)
        assert len(reference.blocks) == len(candidate.blocks) == blocks


def test_a_host_bound_shape_gets_no_more_blocks(tmp_path, cuda_lock):
    """Issued slower than it runs, a call is banded by the two processes' host speeds: more blocks narrow nothing."""
    reference = Jolted("reference", [], 1e-2, slow={0}, issue_ms=12.0)
    (reference, candidate), _ = _long_calls(tmp_path, reference, Jolted("candidate", [], 1e-2))
    assert len(reference.blocks) == len(candidate.blocks) == 4


def test_the_cpu_gets_no_more_blocks(tmp_path):
    """Under the interpreter each block is one repetition, three a side, however far apart they read."""
    (reference, candidate), _ = _long_calls(tmp_path, Jolted("reference", [], 1e-2, slow={0}),
                                            Jolted("candidate", [], 1e-2), device="cpu")  # fmt: skip
    assert len(reference.blocks) == len(candidate.blocks) == 3
