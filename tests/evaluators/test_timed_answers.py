"""The reference's check of the candidate's timed repetitions reuses the sketches its own timing took on the same
inputs (worker/timed_answers.py), and calls the reference only for the repetitions its timing did not answer."""

from contextlib import nullcontext
from types import SimpleNamespace

import torch

from evaluators.worker.reference import check_reps
from evaluators.worker.timed_answers import BOUNDED_OUTPUT_BYTES, TimedAnswers
from evaluators.worker.timing import Clocks, TimingPlan, time_reps

NONCE, KEY = 1234, 5678
MEMORY = {"retained_on_device": False, "compare_chunk": 1 << 20}


def fresh_inputs(seed: int) -> list:
    return [torch.linspace(0, 1, 64) + seed % 101]


class Reference:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x * 2 + 1


def timed(call, reps: int, tolerance=None, nonce=NONCE, first=0) -> dict:
    plan = TimingPlan(first, reps, nonce, KEY, hold=[], flush_mb=1, timing_sets=2, held_device="cpu",
                      tolerance=tolerance)  # fmt: skip
    return time_reps(lambda args: call(*args), fresh_inputs, plan, Clocks("cpu"), 0, lambda d: nullcontext())[0]


def reference_timing(answers: TimedAnswers, reps: int, nonce=NONCE) -> None:
    """The reference's timing of `reps` repetitions in two blocks, its answers kept as its worker keeps them."""
    for first, count in ((0, reps // 2), (reps // 2, reps - reps // 2)):
        facts = timed(Reference(), count, (None, None), nonce, first)
        answers.keep({"shape": 0, "nonce": nonce, "sketch_key": KEY, "first": first}, facts)
        assert "bounds" not in facts  # taken out: the parent never sees them


def check(found: list, reps: int, answers: TimedAnswers, tmp_path) -> tuple[dict, int]:
    session = SimpleNamespace(runtime=SimpleNamespace(inputs=lambda seed, dist: fresh_inputs(seed)), device="cpu",
                              job={"max_result_mb": 1})  # fmt: skip
    command = {"shape": 0, "reps": reps, "nonce": NONCE, "sketch_key": KEY, "sketches": found, "held": []}
    model = Reference()
    verdict = check_reps(session, model, command, tmp_path, (None, None), MEMORY, answers.of(command))
    return verdict, model.calls


def test_the_reference_is_called_only_for_repetitions_its_timing_did_not_cover(tmp_path):
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    found = timed(lambda x: x * 2 + 1, 6)["sketches"]  # a faster candidate timed six
    verdict, calls = check(found, 6, answers, tmp_path)
    assert verdict == {"sketches": [], "held": []} and calls == 2


def test_a_wrong_answer_on_a_repetition_the_reference_timed_is_still_caught(tmp_path):
    answers = TimedAnswers()
    reference_timing(answers, reps=4)
    found = timed(lambda x: x * 2 + 1, 4)["sketches"]
    found[1] = timed(lambda x: x * 2 + 2, 4)["sketches"][1]  # every element off by one
    verdict, calls = check(found, 4, answers, tmp_path)
    assert calls == 0 and [rep for rep, _ in verdict["sketches"]] == [1]


def test_answers_under_another_nonce_are_not_used(tmp_path):
    answers = TimedAnswers()
    reference_timing(answers, reps=4, nonce=NONCE + 1)
    found = timed(lambda x: x * 2 + 1, 4)["sketches"]
    verdict, calls = check(found, 4, answers, tmp_path)
    assert verdict["sketches"] == [] and calls == 4


def test_large_outputs_are_bounded_in_the_check_not_in_the_timing():
    memory = {"sizes": [{"output_bytes": 1024}, {"output_bytes": BOUNDED_OUTPUT_BYTES + 1}]}
    assert TimedAnswers.tolerance(memory, 0, 1e-3, None) == (1e-3, None)
    assert TimedAnswers.tolerance(memory, 1, 1e-3, None) is None
    assert TimedAnswers.tolerance({}, 0, None, None) == (None, None)  # the CPU's plan: no sizes, small shapes
