"""The batch journal: judged evaluations survive a killed driver, torn last lines are dropped, keys run once."""

from concurrent.futures import Future

import pytest

from evaluators import EvalOptions, EvalResult
from evaluators.executors.journal import EvalJob, Journal, JournalError, judge
from evaluators.executors.local import LocalExecutor
from evaluators.judge.evaluate import EnvironmentFailure
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM, candidate


def test_recorded_results_are_read_back(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.record("a", EvalResult(status="correct", speedup=1.5, node="n1", gpu="cpu"))
    again = Journal(tmp_path / "j.jsonl")
    assert "a" in again and len(again) == 1
    assert (again.results["a"].speedup, again.results["a"].node) == (1.5, "n1")


def test_a_line_torn_by_a_kill_is_dropped_and_the_file_repaired(tmp_path):
    path = tmp_path / "j.jsonl"
    Journal(path).record("a", EvalResult(status="incorrect"))
    with open(path, "a") as handle:
        handle.write('{"key": "b", "result": {"sta')
    journal = Journal(path)
    assert list(journal.results) == ["a"]
    journal.record("b", EvalResult(status="correct"))
    assert list(Journal(path).results) == ["a", "b"]


def test_a_corrupt_journal_is_one_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text("not json\n")
    with pytest.raises(JournalError, match=r"line 1 is not a judged evaluation"):
        Journal(path)


def test_judge_submits_only_what_the_journal_lacks(tmp_path, cache_dir):
    journal = Journal(tmp_path / "j.jsonl")
    journal.record("done", EvalResult(status="correct"))
    problem, options = load_problem(PROBLEM), EvalOptions(timing=False, cache_dir=cache_dir)
    jobs = {key: EvalJob(problem, candidate("no_modelnew"), options) for key in ("done", "new1", "new2")}
    executor = LocalExecutor(["cpu"])
    try:
        judged = dict(judge(executor, jobs, journal))
    finally:
        executor.close()
    assert sorted(judged) == ["new1", "new2"] and {r.status for r in judged.values()} == {"compile_error"}
    assert executor.progress().done == 2
    assert sorted(Journal(tmp_path / "j.jsonl").results) == ["done", "new1", "new2"]


class _NotJudging:
    """An executor whose every evaluation ends as the device's timing lock, kept by another process, left it."""

    def submit(self, problem, source, options=None) -> Future:
        future = Future()
        future.set_exception(EnvironmentFailure("not judged: the device's timing lock (cpu.lock) was held for 5 s"))
        return future


def test_an_evaluation_not_judged_is_yielded_and_left_for_the_next_run(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    jobs = {"a": EvalJob(load_problem(PROBLEM), candidate("no_modelnew"))}
    (key, error), *_ = judge(_NotJudging(), jobs, journal)
    assert key == "a" and isinstance(error, EnvironmentFailure)
    assert "a" not in Journal(tmp_path / "j.jsonl")
