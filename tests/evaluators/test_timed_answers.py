"""The reference's check of the candidate's timed repetitions: every handed-over output element by element, against
the copies its own timing took on the same inputs (worker/timed_answers.py), calling the reference only for the
repetitions its timing did not answer."""

import os
from contextlib import nullcontext
from types import SimpleNamespace

import pytest
import torch

from evaluators.worker.handoff import write_outputs
from evaluators.worker.reference import check_reps
from evaluators.worker.timed_answers import TimedAnswers
from evaluators.worker.timing import Clocks, TimingPlan, time_reps

NONCES = (1234, 4321)  # two blocks a side, each with its nonce
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


def timed_block(call, first: int, count: int, nonce: int, hold: bool = True) -> tuple[dict, dict]:
    plan = TimingPlan(first, count, nonce, hold=hold, flush_mb=1, timing_sets=2, held_device="cpu")
    return time_reps(lambda args: call(*args), fresh_inputs, plan, Clocks("cpu"), 0, lambda d: nullcontext())


def reference_timing(answers: TimedAnswers, reps: int, nonces=NONCES, keep: bool = True) -> None:
    """The reference's timing of `reps` repetitions in two blocks, its answers kept as its worker keeps them."""
    for first, count, nonce in blocks(reps, nonces):
        _, held = timed_block(Reference(), first, count, nonce)
        answers.keep({"shape": 0, "nonce": nonce, "first": first, "reps": count, "hold": True, "keep": keep}, held)


def handed(call, reps: int) -> list[int]:
    """A candidate's outputs over `reps` repetitions in two blocks, each in the sealed file its timing hands over."""
    fds = []
    for first, count, nonce in blocks(reps):
        held = timed_block(call, first, count, nonce)[1]
        fds += [write_outputs(f"s0-rep{rep}", outputs) for rep, outputs in held.items()]
    return fds


def swapped(fds: list[int], rep: int, call, reps: int) -> None:
    """Repetition `rep`'s outputs replaced by `call`'s on its inputs."""
    others = handed(call, reps)
    os.close(fds[rep])
    fds[rep] = others.pop(rep)
    for fd in others:
        os.close(fd)


def check(fds: list[int], reps: int, answers: TimedAnswers) -> tuple[dict, int]:
    """The reference's check of all `reps` repetitions; its verdict and how many reference calls it made."""
    session = SimpleNamespace(runtime=SimpleNamespace(inputs=lambda seed, dist: fresh_inputs(seed)), device="cpu",
                              job={"max_result_mb": 1})  # fmt: skip
    command = {"shape": 0, "reps": list(range(reps)), "blocks": blocks(reps), "held_on_device": False,
               "pid": os.getpid(), "fds": fds, "unread": [], "unread_fds": []}  # fmt: skip
    model = Reference()
    try:
        verdict = check_reps(session, model, command, (None, None), MEMORY, answers.take(command), {})
    finally:
        for fd in fds:
            os.close(fd)
    assert answers.take(command) == {}  # given up to the check: the copies go with it
    return verdict, model.calls


def test_the_reference_is_called_only_for_repetitions_its_timing_did_not_cover():
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    fds = handed(lambda x: x * 2 + 1, 6)  # a faster candidate timed six, three a block: the third of each is new
    assert check(fds, 6, answers) == ({"mismatch": None}, 2)


@pytest.mark.parametrize("offset, wrong", [(1.0, False), (1.00005, False), (2.0, True)])
def test_every_repetition_is_compared_with_the_references_own_copy(offset, wrong):
    """Off by half of rtol passes; every element off by one fails, at the first such repetition."""
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    fds = handed(lambda x: x * 2 + 1, 4)
    swapped(fds, 2, lambda x: x * 2 + offset, 4)  # repetition 2 alone is off
    verdict, calls = check(fds, 4, answers)
    assert calls == 0 and (verdict["mismatch"] is not None) == wrong
    if wrong:
        assert verdict["mismatch"][0] == 2


def test_a_wrong_repetition_the_reference_did_not_time_is_caught_on_recomputed_answers():
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    fds = handed(lambda x: x * 2 + 1, 6)
    swapped(fds, 5, lambda x: x * 3, 6)
    verdict, calls = check(fds, 6, answers)
    assert verdict["mismatch"][0] == 5 and calls == 2


def test_answers_under_another_nonce_or_not_asked_for_are_not_used():
    for kept in ({"nonces": (NONCES[0] + 1, NONCES[1] + 1)}, {"keep": False}):
        answers = TimedAnswers()
        reference_timing(answers, reps=4, **kept)
        assert check(handed(lambda x: x * 2 + 1, 4), 4, answers) == ({"mismatch": None}, 4)


def test_answers_no_check_took_are_given_up_when_the_next_timing_begins():
    """A candidate that failed before its check left the warm reference's answers (and copies) behind."""
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    assert len(answers.kept) == 2
    held = timed_block(Reference(), 0, 2, 999)[1]
    answers.keep({"shape": 0, "nonce": 999, "first": 0, "reps": 2, "hold": True, "keep": True}, held)
    assert list(answers.kept) == [(0, 999)]


def test_a_check_gives_up_every_answer_of_its_shape_even_blocks_it_did_not_name():
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    held = timed_block(Reference(), 4, 2, 999)[1]  # a third block, which the check below does not name
    answers.keep({"shape": 0, "nonce": 999, "first": 4, "reps": 2, "hold": True, "keep": True}, held)
    held = timed_block(Reference(), 2, 2, 555)[1]  # another shape's, which stays for its own check
    answers.keep({"shape": 1, "nonce": 555, "first": 2, "reps": 2, "hold": True, "keep": True}, held)
    taken = answers.take({"shape": 0, "blocks": blocks(4)})
    assert sorted(taken) == [0, 1, 2, 3]
    assert list(answers.kept) == [(1, 555)]
