"""Red team, second front: state the candidate's process shares with the harness and with other evaluations.

The attacks in attacks/ each run inside one evaluation and are judged by test_redteam.py. These reach further: the
candidate runs as the harness's user, so it can write what other processes read later (the problem's file, the
reference cache, the timing locks, the simulated device), and can outlive or out-wait its own evaluation. Each is
judged against what an honest evaluator must say; a hole that is still open is an xfail(strict=True) naming it.

Every test works on a copy of the test problem and its own cache directory, and ends the warm references it made:
an attack here must not reach the rest of the suite.
"""

import shutil
from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool, spares
from evaluators.judge.strict import strict_options
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM
from tests.evaluators.redteam.test_redteam import CONTROL, false_accept

HERE = Path(__file__).parent


def attack(name: str) -> str:
    return f"{CONTROL}\n\n{(HERE / 'shared' / f'{name}.py').read_text()}"


@pytest.fixture
def own_problem(tmp_path):
    """A private copy of the test problem (an attack may rewrite it), with no warm reference of it anywhere."""
    path = tmp_path / "problems" / PROBLEM.name
    path.parent.mkdir()
    shutil.copy(PROBLEM, path)
    reference_pool.close_all()
    yield path
    reference_pool.close_all()
    spares.close_all()


@pytest.fixture
def options(tmp_path):
    return EvalOptions(timeout_s=30, cache_dir=tmp_path / "cache")


@pytest.mark.xfail(
    strict=True,
    reason="open: a worker imports the problem from its path on disk, which the candidate can write; nothing checks "
    "it against the text the parent loaded (Problem.digest), so a reference started later runs the candidate's code",
)
def test_a_rewritten_problem_file_does_not_judge_the_next_reference(own_problem, options):
    problem = load_problem(own_problem)  # loaded once, as the batch and the graph do
    first = evaluate(problem, attack("rewrite_problem_file"), "cpu", options)
    assert first.status == "incorrect", first.message  # its reference had imported the problem before
    assert "_tampered_forward" in own_problem.read_text()  # but the file is now the candidate's
    # Its strict re-evaluation (or any evaluation with a fresh reference) is judged by the rewritten reference.
    strict = evaluate(problem, attack("rewrite_problem_file"), "cpu", strict_options(options))
    assert not false_accept(strict), (strict.status, strict.speedup, strict.message)
    assert strict.status == "incorrect", strict.message


@pytest.mark.xfail(
    strict=True,
    reason="open: the problem file one candidate rewrote judges every candidate whose reference starts afterwards; "
    "an honest kernel is then incorrect",
)
def test_a_rewritten_problem_file_does_not_fail_the_next_honest_candidate(own_problem, options):
    problem = load_problem(own_problem)
    evaluate(problem, attack("rewrite_problem_file"), "cpu", options.model_copy(update={"timing": False}))
    reference_pool.close_all()  # as a new run, a resumed one, or the next batch over the same suite starts
    honest = evaluate(problem, CONTROL, "cpu", options.model_copy(update={"timing": False}))
    assert honest.status == "correct", honest.message
