"""Correctness trials on inputs no candidate could know beforehand: the parent draws their seed per evaluation."""

from pathlib import Path

from evaluators import EvalOptions, evaluate
from kernels.problem import load_problem

HERE = Path(__file__).parent


def _options(cache_dir, **fields) -> EvalOptions:
    return EvalOptions(cache_dir=cache_dir, timing=False, **fields)


def test_each_evaluation_draws_its_trial_seed_and_records_it(cache_dir):
    problem = load_problem("row_softmax")
    source = problem.reference_as_candidate()
    first = evaluate(problem, source, "cpu", _options(cache_dir))
    second = evaluate(problem, source, "cpu", _options(cache_dir))  # the warm reference, other trials
    assert first.status == second.status == "correct", (first.message, second.message)
    assert first.trial_seed is not None and second.trial_seed is not None
    assert first.trial_seed != second.trial_seed


def test_a_recorded_seed_redoes_the_same_trials(cache_dir):
    result = evaluate("row_softmax", load_problem("row_softmax").reference_as_candidate(), "cpu",
                      _options(cache_dir, trial_seed=1234))  # fmt: skip
    assert result.status == "correct" and result.trial_seed == 1234


def test_a_candidate_written_for_the_public_seeds_inputs_is_caught(cache_dir):
    source = (HERE / "candidates" / "right_on_public_trials.py").read_text()
    caught = evaluate("row_softmax", source, "cpu", _options(cache_dir))
    assert caught.status == "incorrect" and "M=1 N=7" in caught.message, caught.message
    # The same candidate, given the trials it was written for, passes: the test above is about the seed alone.
    fooled = evaluate("row_softmax", source, "cpu", _options(cache_dir, trial_seed=42))
    assert fooled.status == "correct", fooled.message
