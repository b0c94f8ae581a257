"""One real run over every edge of the graph, interrupted mid-iteration and resumed.

edges.json on fused_residual_norm's cpu shapes (Triton's interpreter), 2 iterations x 2 experiments, at most one
debugger round: a compile error (a misspelt import) fixed by the debugger into the fast fused kernel (the new
base), an incorrect kernel given up after its debugger round, a malformed selector answer retried, a rate-limited
hypothesizer call retried, and two correct but slower kernels. The run crashes at its fifth evaluation and is resumed.
About a minute on two cores: every candidate is really compiled, checked and timed.
"""

import sqlite3

import pytest

import evaluators
from graph.lab import ARCHIVE_FILE
from kernels.archive import Archive

from .conftest import CASSETTES, CPU, EvaluationSpy, ServiceError, SimulatedCrash, cli, fail_role_once, read_summary

pytestmark = pytest.mark.slow
ARGS = ["--model", f"replay:{CASSETTES / 'edges.json'}", "--iterations", "2", "--experiments-per-iteration", "2"]
ARGS += ["--avenues", "3", "--plans", "3"]
ARGS += ["--max-debug-attempts", "1", "--max-concurrency", "2", *CPU]


@pytest.fixture(scope="module")
def edges_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "edges"
    with pytest.MonkeyPatch.context() as patch:
        fail_role_once(patch, "hypothesizer", ServiceError(429, "Resource has been exhausted (e.g. check quota)."))
        first = EvaluationSpy(crash_at=5)
        patch.setattr(evaluators, "evaluate", first)
        with pytest.raises(SimulatedCrash):
            cli(*ARGS, "--out", str(run_dir))
        first.wait_idle()
        archived_before = len(Archive(run_dir / ARCHIVE_FILE))
        second = EvaluationSpy()
        patch.setattr(evaluators, "evaluate", second)
        code = cli("--resume", run_dir.name, "--out", str(run_dir))
    return {"dir": run_dir, "code": code, "first": first, "second": second, "archived_before": archived_before}


def test_the_resumed_run_finishes(edges_run):
    assert edges_run["code"] == 0
    assert read_summary(edges_run["dir"])["stop_reason"].startswith("iterations: 2 of 2")


def test_resume_repeats_no_finished_evaluation_and_loses_none(edges_run):
    before, after = edges_run["first"].before_crash, edges_run["second"].sources
    assert edges_run["archived_before"] == 2  # reference and seed; iteration 1 was in flight
    assert not before & set(after), "a candidate evaluated before the crash was evaluated again"
    assert len(after) == len(set(after))
    # seed + 4 evaluations in iteration 1 + 2 in iteration 2, none lost. (A thread the crash left running may
    # finish and be checkpointed after it: counted in neither `before` nor `after`, which a dead process never does.)
    assert len(set(edges_run["first"].sources) | set(after)) == 7
    records = Archive(edges_run["dir"] / ARCHIVE_FILE).records
    assert [r.id for r in records] == [f"c{n:04d}" for n in range(6)]
    assert len({(r.iteration, r.slot) for r in records if r.experiment}) == 4


def test_compile_error_is_fixed_by_the_debugger_into_the_new_base(edges_run):
    statuses = [status for _, status, _ in edges_run["first"].finished + edges_run["second"].finished]
    assert "compile_error" in statuses
    archive = Archive(edges_run["dir"] / ARCHIVE_FILE)
    seed, fused = archive.get("c0001"), archive.get("c0002")
    assert (fused.iteration, fused.slot, fused.status, fused.debug_attempts) == (1, 0, "correct", 1)
    assert fused.speedup > seed.speedup, "the fused kernel must really be faster than the seed in the interpreter"
    assert {archive.get(cid).parent_id for cid in ("c0004", "c0005")} == {"c0002"}


def test_incorrect_kernel_is_given_up_after_the_maximum_attempts(edges_run):
    failed = Archive(edges_run["dir"] / ARCHIVE_FILE).get("c0003")
    assert (failed.status, failed.debug_attempts, failed.speedup) == ("incorrect", 1, None)
    assert "given up after 1 debugger attempts" in failed.note


def test_correct_but_slower_kernels_are_recorded_and_not_made_best(edges_run):
    archive = Archive(edges_run["dir"] / ARCHIVE_FILE)
    fused = archive.get("c0002")
    for slower in (archive.get("c0004"), archive.get("c0005")):
        assert slower.status == "correct" and slower.speedup < fused.speedup
    summary = read_summary(edges_run["dir"])
    # The fused kernel, or the seed where a loaded CPU's interpreter band did not let it clear the seed (test_studio).
    assert summary["best_id"] in ("c0001", "c0002")
    best = archive.get(summary["best_id"])
    assert (edges_run["dir"] / "best_kernel.py").read_text() == best.source


def test_malformed_answer_and_rate_limit_are_retried_and_accounted(edges_run):
    per_role = read_summary(edges_run["dir"])["per_role"]
    assert (per_role["selector"]["calls"], per_role["selector"]["attempts"]) == (2, 3)  # i2 answered twice
    # Two stages (avenues, plans) per iteration; the first call met one 429.
    assert (per_role["hypothesizer"]["calls"], per_role["hypothesizer"]["attempts"]) == (4, 5)
    assert per_role["implementer"]["calls"] == 4 and per_role["debugger"]["calls"] == 2


def test_report_and_checkpoints_are_left_in_the_run_directory(edges_run):
    run_dir = edges_run["dir"]
    summary = read_summary(run_dir)
    assert summary["statuses"] == {"correct": 3, "incorrect": 1}
    assert summary["device"] == "cpu" and summary["timing"] == "interpreter"
    assert summary["tokens"] > 0 and summary["cost_usd"] > 0
    report = (run_dir / "report.md").read_text()
    assert "## Lineage" in report and "## Notebook of experiments" in report and "c0005" in report
    assert (run_dir / "speedup.svg").read_text().startswith("<svg")
    with sqlite3.connect(run_dir / "checkpoints.sqlite") as db:
        threads = {row[0] for row in db.execute("select distinct thread_id from checkpoints")}
    assert threads == {"edges"}
