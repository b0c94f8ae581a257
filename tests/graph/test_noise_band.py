"""A change inside the evaluator's noise band is no gain: not a new best, not a leader, not a headline, and the
notebook says "within noise". The graph runs short.json with its evaluations faked, as test_quarantine does."""

import pytest

import evaluators
from agents.notebook import archive_summary
from agents.population import shape_leaders
from evaluators import EvalResult
from evaluators.judge.result import ShapeResult
from graph import lab
from graph.lab import ARCHIVE_FILE
from kernels.archive import Archive
from kernels.problem_types import SEEDS_DIR

from .conftest import SHORT, cli, read_summary

SEED = (SEEDS_DIR / "fused_residual_norm.py").read_text()


def correct(speedup: float, band: tuple[float, float]) -> EvalResult:
    result = EvalResult(status="correct", speedup=speedup, runtime_ms=1 / speedup, baseline_ms=1.0)
    result.speedup_band, result.significant = band, not band[0] <= 1.0 <= band[1]
    result.shapes = [ShapeResult(name="s", kind="benchmark", status="correct", speedup=speedup, speedup_band=band)]
    return result


class FakeEvaluations:
    """The seed at 1.0x; then a candidate 2 % faster inside its band; then one 30 % faster beyond it.

    A strict run (the confirmation a gain within reach of two processes gets) repeats the first by default, or reads
    as `confirmations` says.
    """

    def __init__(self, confirmations: list[EvalResult] | None = None):
        self.results = [correct(1.02, (0.97, 1.07)), correct(1.3, (1.25, 1.35))]
        self.confirmations = confirmations or []
        self.last: dict[str, EvalResult] = {}

    def __call__(self, problem, source, device="auto", options=None):
        if options is not None and options.strict:
            again = self.confirmations.pop(0) if self.confirmations else self.last[source].model_copy()
            return again.model_copy(update={"strict": True})
        if source == SEED:
            return correct(1.0, (0.96, 1.04))
        self.last[source] = self.results.pop(0) if self.results else correct(0.9, (0.85, 0.95))
        return self.last[source]


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(evaluators, "evaluate", FakeEvaluations())


def test_a_gain_inside_the_noise_band_is_not_a_new_best(tmp_path, fake):
    run_dir = tmp_path / "noise"
    assert cli(*SHORT, "--iterations", "1", "--out", str(run_dir)) == 0
    archive = Archive(run_dir / ARCHIVE_FILE)
    noisy = archive.get("c0002")
    assert noisy.speedup == 1.02 and lab.best_kernel(archive).status == "seed"
    assert read_summary(run_dir)["best_speedup"] == 1.0  # the headline stays the seed's
    assert shape_leaders(archive)["s"].status == "seed"
    assert "within noise" in (run_dir / "report.md").read_text()


def test_a_gain_beyond_the_noise_band_is_the_new_best(tmp_path, fake):
    run_dir = tmp_path / "gain"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    archive = Archive(run_dir / ARCHIVE_FILE)
    best = lab.best_kernel(archive)
    assert best.speedup == 1.3 and read_summary(run_dir)["best_speedup"] == 1.3
    assert shape_leaders(archive)["s"] is best
    assert "noise band" in archive_summary(archive)


def test_a_gain_its_confirming_run_does_not_repeat_is_not_a_new_best(tmp_path, monkeypatch):
    # The 1.3x of the second candidate is within what two processes can differ by: a strict run in others reads 1.01x.
    monkeypatch.setattr(evaluators, "evaluate", FakeEvaluations([correct(1.01, (0.98, 1.04))]))
    run_dir = tmp_path / "unconfirmed"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    archive = Archive(run_dir / ARCHIVE_FILE)
    lucky = next(r for r in archive.records if r.strict_eval)
    assert lucky.speedup == 1.01 and lucky.set_aside is None and lucky.measured["speedup_band"] == [0.98, 1.35]
    assert lab.best_kernel(archive).status == "seed" and read_summary(run_dir)["best_speedup"] == 1.0


def test_a_record_cleared_by_a_strict_run_is_judged_by_that_runs_band():
    from agents.population import beats, within_noise
    from kernels.archive import CandidateRecord

    first = correct(11.0, (10.0, 12.0)).model_dump(mode="json")
    strict = correct(1.02, (0.97, 1.07)).model_dump(mode="json")
    seed = CandidateRecord(
        id="c0000", source="", status="seed", speedup=1.0, eval=correct(1.0, (0.96, 1.04)).model_dump()
    )
    cleared = CandidateRecord(id="c0001", source="", status="correct", speedup=1.02, eval=first, strict_eval=strict,
                              cleared_by_strict=True)  # fmt: skip
    assert not beats(cleared, seed), "the first run's band (10-12x) was read beside the strict run's 1.02x"
    assert within_noise(cleared, 1.0)
