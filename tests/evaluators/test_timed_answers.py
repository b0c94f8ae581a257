"""The reference's check of the candidate's timed repetitions reuses the sketches and copies its own timing took on
the same inputs (worker/timed_answers.py), and calls the reference only for the repetitions its timing did not
answer."""

import os
from contextlib import nullcontext
from types import SimpleNamespace

import pytest
import torch

from evaluators.worker import reference
from evaluators.worker.handoff import write_outputs
from evaluators.worker.reference import check_reps
from evaluators.worker.sketch import sketch_floor, sketch_tolerance
from evaluators.worker.timed_answers import TimedAnswers
from evaluators.worker.timing import Clocks, TimingPlan, rep_seed, time_reps

NONCES, KEY = (1234, 4321), 5678  # two blocks a side, each with its nonce
MEMORY = {"compare_chunk": 1 << 20}


def fresh_inputs(seed: int) -> list:
    return [torch.linspace(0, 1, 64) + seed % 101]


class Reference:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x * 2 + 1


def blocks(reps: int, nonces=NONCES) -> list[list[int]]:
    """[first, reps, nonce] of each of a side's two blocks."""
    return [[0, reps // 2, nonces[0]], [reps // 2, reps - reps // 2, nonces[1]]]


def rep_inputs(rep: int, reps: int) -> torch.Tensor:
    """The inputs of repetition `rep` of a side that timed `reps` in two blocks."""
    first, _, nonce = next(b for b in blocks(reps) if b[0] <= rep < b[0] + b[1])
    return fresh_inputs(rep_seed(nonce, 0, rep - first))[0]


def timed_block(call, first: int, count: int, nonce: int, hold=None) -> tuple[dict, dict]:
    plan = TimingPlan(first, count, nonce, KEY, hold=hold, flush_mb=1, timing_sets=2, held_device="cpu")
    return time_reps(lambda args: call(*args), fresh_inputs, plan, Clocks("cpu"), 0, lambda d: nullcontext())


def timed(call, reps: int) -> list:
    """A candidate's sketches over `reps` repetitions in two blocks."""
    return [s for first, count, nonce in blocks(reps) for s in timed_block(call, first, count, nonce)[0]["sketches"]]


def reference_timing(answers: TimedAnswers, reps: int, nonces=NONCES, hold=None) -> None:
    """The reference's timing of `reps` repetitions in two blocks, its answers kept as its worker keeps them."""
    for first, count, nonce in blocks(reps, nonces):
        block_hold = None if hold is None else [r for r in hold if first <= r < first + count]
        facts, held = timed_block(Reference(), first, count, nonce, block_hold)
        command = {"shape": 0, "nonce": nonce, "sketch_key": KEY, "first": first, "hold": block_hold}
        answers.keep(command, facts, held)


def check(found: list, reps: int, answers: TimedAnswers, held: dict[int, int] | None = None) -> tuple[dict, int]:
    """The reference's check; `held` maps a held repetition to the descriptor its outputs were handed over in."""
    held = held or {}
    session = SimpleNamespace(runtime=SimpleNamespace(inputs=lambda seed, dist: fresh_inputs(seed)), device="cpu",
                              job={"max_result_mb": 1})  # fmt: skip
    command = {"shape": 0, "reps": reps, "blocks": blocks(reps), "sketch_key": KEY, "sketches": found,
               "held": list(held), "held_on_device": False, "pid": os.getpid(), "fds": list(held.values())}  # fmt: skip
    model = Reference()
    verdict = check_reps(session, model, command, (None, None), MEMORY, answers.take(command))
    assert answers.take(command) == {}  # given up to the check: the copies go with it
    return verdict, model.calls


def test_the_reference_is_called_only_for_repetitions_its_timing_did_not_cover(tmp_path):
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    found = timed(lambda x: x * 2 + 1, 6)  # a faster candidate timed six, three a block: the third of each is new
    verdict, calls = check(found, 6, answers)
    assert verdict == {"sketches": [], "held": []} and calls == 2


def test_a_wrong_answer_on_a_repetition_the_reference_timed_is_still_caught(tmp_path):
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    found = timed(lambda x: x * 2 + 1, 4)
    found[1] = timed(lambda x: x * 2 + 2, 4)[1]  # every element off by one
    verdict, calls = check(found, 4, answers)
    assert calls == 0 and [rep for rep, _ in verdict["sketches"]] == [1]


def test_answers_under_another_nonce_are_not_used(tmp_path):
    answers = TimedAnswers()
    reference_timing(answers, reps=4, nonces=(NONCES[0] + 1, NONCES[1] + 1))
    found = timed(lambda x: x * 2 + 1, 4)
    verdict, calls = check(found, 4, answers)
    assert verdict["sketches"] == [] and calls == 4


def test_a_timing_that_held_only_some_outputs_keeps_nothing(tmp_path):
    """Large outputs: each side holds its own random few, so the reference's copies are not the check's."""
    answers = TimedAnswers()
    reference_timing(answers, reps=4, hold=[1])
    found = timed(lambda x: x * 2 + 1, 4)
    verdict, calls = check(found, 4, answers)
    assert verdict["sketches"] == [] and calls == 4


@pytest.mark.parametrize("offset, wrong", [(1.0, False), (2.0, True)])
def test_held_outputs_are_compared_with_the_references_own_copy(tmp_path, offset, wrong):
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    found = timed(lambda x: x * 2 + 1, 4)
    fd = write_outputs("s0-rep2", [rep_inputs(2, 4) * 2 + offset])
    try:
        verdict, calls = check(found, 4, answers, held={2: fd})
    finally:
        os.close(fd)
    assert calls == 0 and (verdict["held"][0] is not None) == wrong


def test_only_sketches_beyond_their_floor_get_the_full_bound(tmp_path, monkeypatch):
    """Exact answers never pay for the bound; answers off by less than rtol pass through it, their outputs computed
    again where the reference's timing did not keep them; a wrong one is still caught."""
    bounded = []

    def counting(expected, sketcher, atol, rtol):
        bounded.append(len(expected))
        return sketch_tolerance(expected, sketcher, atol, rtol)

    monkeypatch.setattr(reference, "sketch_tolerance", counting)
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    exact = timed(lambda x: x * 2 + 1, 6)
    verdict, calls = check(exact, 6, answers)
    assert verdict["sketches"] == [] and calls == 2 and bounded == []

    close = timed(lambda x: (x * 2 + 1) * (1 + 5e-5), 6)  # half of rtol: honest
    floors = [sketch_floor([rep_inputs(rep, 6)], None, None)[0] for rep in range(6)]
    beyond = [rep for rep in range(6) if abs(close[rep][0][1] - exact[rep][0][1]) > floors[rep]]
    assert beyond, "the scaled answers should leave some sketch beyond its floor"
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    verdict, calls = check(close, 6, answers)
    assert verdict["sketches"] == [] and len(bounded) == len(beyond)
    assert calls == 2 + sum(rep in (2, 5) for rep in beyond)  # repetitions 2 and 5 were not kept: computed again

    wrong = timed(lambda x: x * 2 + 1.5, 6)
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    verdict, _ = check(wrong, 6, answers)
    assert [rep for rep, _ in verdict["sketches"]] == [0]


def test_answers_no_check_took_are_given_up_when_the_next_timing_begins():
    """A candidate that failed before its check left the warm reference's answers (and copies) behind."""
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    assert answers.kept
    facts, held = timed_block(Reference(), 0, 2, NONCES[0], None)
    answers.keep({"shape": 0, "nonce": NONCES[0], "sketch_key": KEY + 1, "first": 0, "hold": None}, facts, held)
    assert {key[2] for key in answers.kept} == {KEY + 1}


def test_a_check_gives_up_every_answer_of_its_shape_even_blocks_it_did_not_name():
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    facts, held = timed_block(Reference(), 4, 2, 999, None)  # a third block, which the check below does not name
    answers.keep({"shape": 0, "nonce": 999, "sketch_key": KEY, "first": 4, "hold": None}, facts, held)
    facts, held = timed_block(Reference(), 0, 2, NONCES[0], None)  # another shape's, which stays for its own check
    answers.keep({"shape": 1, "nonce": NONCES[0], "sketch_key": KEY, "first": 0, "hold": None}, facts, held)
    taken = answers.take({"shape": 0, "blocks": blocks(4), "sketch_key": KEY})
    assert sorted(taken) == [0, 1, 2, 3]
    assert [key[0] for key in answers.kept] == [1]
