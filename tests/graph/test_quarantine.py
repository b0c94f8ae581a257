"""A candidate a hard flag sets aside is never best, base or headline until a strict re-evaluation clears it.

The graph runs short.json (fused_residual_norm, one experiment per iteration) with its evaluations faked: the
point here is what the graph does with a verdict, not the verdict (tests/evaluators judge real candidates).
"""

import pytest

import evaluators
from agents.notebook import archive_summary, notebook_summary, selectable_ids
from evaluators import EvalResult
from graph import lab, quarantine
from graph.lab import ARCHIVE_FILE
from graph.suite_runs import suite_row
from kernels.archive import Archive, CandidateRecord
from kernels.problem import load_problem
from kernels.problem_types import SEEDS_DIR

from .conftest import SHORT, cli, read_summary

SEED = (SEEDS_DIR / "fused_residual_norm.py").read_text()
REFERENCE = load_problem("fused_residual_norm").reference_as_candidate()  # the control's candidate
BEYOND = ("beyond_plausible", "speedup 1972.0x is beyond the plausible 10x")


def correct(speedup: float, *flags: tuple[str, str], strict: bool = False) -> EvalResult:
    result = EvalResult(status="correct", speedup=speedup, runtime_ms=1 / speedup, baseline_ms=1.0, strict=strict)
    result.speedup_band = (0.95 * speedup, 1.05 * speedup)  # a speedup without a band is no gain over another
    for code, text in flags:
        result.flag(code, text)
    return result


class FakeEvaluations:
    """Stands in for evaluate(): an honest seed, a first candidate claiming 1972x, honest ones after it."""

    def __init__(self, strict: EvalResult):
        self.strict = strict
        self.candidates: list[str] = []
        self.strict_calls: list[tuple[str, evaluators.EvalOptions]] = []
        self.controls: list[evaluators.EvalOptions] = []

    def __call__(self, problem, source, device="auto", options=None):
        if options is not None and options.strict and source == REFERENCE:
            self.controls.append(options)  # the control: the reference judged as itself, two processes 1 % apart
            return correct(1.0, strict=True).model_copy(update={"speedup_band": (0.99, 1.01), "significant": False})
        if options is not None and options.strict:
            self.strict_calls.append((source, options))
            return self.strict
        if source == SEED:
            return correct(0.5)
        self.candidates.append(source)
        return correct(1972.0, BEYOND) if len(self.candidates) == 1 else correct(0.9)


@pytest.fixture
def fake(monkeypatch):
    def install(strict: EvalResult) -> FakeEvaluations:
        evaluations = FakeEvaluations(strict)
        monkeypatch.setattr(evaluators, "evaluate", evaluations)
        return evaluations

    return install


def test_a_cheat_the_strict_run_catches_stays_out_of_best_base_and_headline(tmp_path, fake):
    caught = EvalResult(status="incorrect", strict=True, message="incorrect: timed repetition 17 differs (replayed?)")
    evaluations = fake(caught)
    run_dir = tmp_path / "caught"
    assert cli(*SHORT, "--iterations", "1", "--out", str(run_dir)) == 0
    archive = Archive(run_dir / ARCHIVE_FILE)
    cheat = archive.get("c0002")
    assert (cheat.status, cheat.speedup, cheat.cleared_by_strict) == ("correct", 1972.0, False)
    assert "beyond the plausible 10x" in cheat.set_aside and "timed repetition 17" in cheat.set_aside
    assert cheat.eval["speedup"] == 1972.0 and cheat.strict_eval["status"] == "incorrect"  # both evaluations kept
    assert [(source, options.trials) for source, options in evaluations.strict_calls] == [(cheat.source, 5)]
    assert lab.best_kernel(archive).id == "c0001" and "c0002" not in selectable_ids(archive)
    assert "Set aside, not to build on (1;" in archive_summary(archive) and "SET ASIDE" in notebook_summary(archive)
    summary = read_summary(run_dir)
    assert summary["best_id"] == "c0001" and [entry["id"] for entry in summary["set_aside"]] == ["c0002"]
    assert (run_dir / "best_kernel.py").read_text() == SEED
    report = (run_dir / "report.md").read_text()
    assert "- best: c0001 at 0.5x over the PyTorch reference (95 % noise band" in report
    assert "(1 set aside by anti-cheat flags" in report
    assert "- c0002 (1972x as measured): speedup 1972.0x is beyond the plausible 10x" in report
    assert cheat.measured["speedup"] == cheat.eval["speedup"] and not cheat.measured["strict"]
    row = suite_row("fused_residual_norm", run_dir, "not finished")
    assert (row.speedup, row.set_aside, row.rechecked, row.cleared_by_strict) == (0.5, None, False, False)


def test_a_candidate_the_strict_run_clears_becomes_best_and_a_base(tmp_path, fake):
    # Strict, every timed output checked: a large speedup it measures is real, so its own flag does not set aside.
    evaluations = fake(correct(12.0, ("beyond_plausible", "speedup 12.0x is beyond the plausible 10x"), strict=True))
    run_dir = tmp_path / "cleared"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    archive = Archive(run_dir / ARCHIVE_FILE)
    cleared = archive.get("c0002")
    assert (cleared.set_aside, cleared.cleared_by_strict, cleared.speedup) == (None, True, 12.0)
    assert cleared.eval["set_aside"] and cleared.strict_eval["strict"]
    assert len(evaluations.strict_calls) == 1 and len(evaluations.controls) == 1  # a gain however large: a control
    assert cleared.control_eval["speedup"] == 1.0
    assert archive.get("c0003").parent_id == "c0002"  # iteration 2's selector could build on it
    summary = read_summary(run_dir)
    assert summary["best_id"] == "c0002" and summary["best_speedup"] == 12.0
    assert summary["cleared_by_strict"] == ["c0002"] and summary["set_aside"] == []
    assert not [note for note in summary["notes"] if "fell back" in note]
    assert "Cleared by a strict re-evaluation: c0002" in (run_dir / "report.md").read_text()
    # As graph.batch reports it: by the strict run's figures, not set aside by the first evaluation's flags.
    assert cleared.measured["strict"] and cleared.measured["speedup"] == 12.0
    row = suite_row("fused_residual_norm", run_dir, "not finished")
    assert (row.speedup, row.set_aside, row.rechecked, row.cleared_by_strict) == (12.0, None, True, True)
    assert row.fast(2) and row.message.startswith("best c0002 (cleared by strict re-evaluation); ")
    assert row.fast_significantly(2)  # the suite row carries the counted run's band


def test_flags_no_strict_run_can_clear_cost_no_re_evaluation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("no strict re-evaluation can clear these flags")

    monkeypatch.setattr(evaluators, "evaluate", refuse)
    for code, text in [("beyond_roofline", "faster than the roofline allows"), ("no_custom_kernel", "no kernel")]:
        result = correct(3.0, BEYOND, (code, text)).model_dump()
        assert quarantine.strict_recheck(None, "p", "source", "cpu", result) == {}
        fields = quarantine.record_fields(result, {})
        assert fields["set_aside"].endswith("(no strict re-evaluation clears this)") and text in fields["set_aside"]


def test_only_a_re_evaluation_that_says_it_was_strict_clears():
    result = correct(1972.0, BEYOND).model_dump()
    not_strict = correct(15.0, ("side_stream", "work outlives the timed stream")).model_dump()
    assert quarantine.record_fields(result, not_strict)["set_aside"].endswith("still work outlives the timed stream")
    unmarked = correct(15.0).model_dump()
    assert quarantine.record_fields(result, unmarked)["set_aside"].endswith("the re-evaluation was not strict")
    honest = correct(0.9).model_dump()
    fields = quarantine.record_fields(honest, {})
    assert fields["counted"]["speedup"] == 0.9 and fields | {"eval": None, "counted": None} == {
        "eval": None, "counted": None, "strict_eval": {}, "control_eval": {}, "speedup": 0.9, "runtime_ms": 1 / 0.9,
        "set_aside": None, "cleared_by_strict": False,
    }  # fmt: skip


def test_a_cleared_candidate_is_known_by_the_slower_of_its_two_runs():
    # The first's figure counts its work on other streams: a strict run that clears it counts no higher.
    flagged = correct(1.4, ("side_stream", "work on other streams outlives the timed stream")).model_dump()
    strict = correct(3.0, strict=True).model_dump()
    fields = quarantine.record_fields(flagged, strict)
    assert (fields["speedup"], fields["set_aside"], fields["cleared_by_strict"]) == (1.4, None, True)
    record = CandidateRecord(id="c0001", source="", status="correct", **fields)
    assert record.measured["speedup"] == 1.4 and not record.measured["strict"]
    assert record.measured["speedup_band"] == pytest.approx([1.33, 3.15])  # spanning both runs' bands


def test_a_records_figure_and_its_measured_evaluation_come_from_one_decision():
    # An unflagged gain whose confirming run comes back with a hard flag: set aside, its figure and its measured
    # evaluation still one and the same (the record keeps what the strict rule counted).
    first = correct(1.3)
    first.significant = True
    strict = correct(1.1, ("beyond_roofline", "faster than the roofline allows"), strict=True)
    fields = quarantine.record_fields(first.model_dump(mode="json"), strict.model_dump(mode="json"))
    record = CandidateRecord(id="c0001", source="", status="correct", **fields)
    assert record.set_aside.startswith("its confirming strict re-evaluation")
    assert record.measured["speedup"] == record.speedup and record.measured["runtime_ms"] == record.runtime_ms
