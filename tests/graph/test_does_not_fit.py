"""A problem that does not fit on the device stops the run at its start: no LLM call is spent on it."""

import json

from evaluators.judge.result import EvalResult
from graph import lab
from graph.suite_runs import suite_row

from .conftest import SHORT, cli

MESSAGE = "does not fit: one input set, its outputs and the cache flush need 90.0 GB; 79.1 GB free of 79.6 GB"


def test_a_problem_that_does_not_fit_stops_before_any_llm_call(tmp_path, monkeypatch):
    evaluated = []

    def does_not_fit(ctx, problem, source, device, options=None):
        evaluated.append(source)
        return EvalResult(status="does_not_fit", message=MESSAGE, device=device).model_dump()

    monkeypatch.setattr(lab, "evaluate", does_not_fit)
    run_dir = tmp_path / "run"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == f"the problem cannot be run on cpu: {MESSAGE}"
    assert summary["tokens"] == 0 and summary["iterations"] == 0 and len(evaluated) == 1
    assert MESSAGE in (run_dir / "report.md").read_text()
    # In a suite's report it is the machine's limit, apart from the runs that found no correct kernel.
    row = suite_row("level1/x", run_dir, "not finished")
    assert (row.status, row.message) == ("does_not_fit", MESSAGE)
