"""A change inside the evaluator's noise band is no gain: not a new best, not a leader, not a headline, and the
notebook says "within noise"; nor is one inside what two processes can read apart, as a control measures it. The graph
runs short.json with its evaluations faked, as test_quarantine does."""

import pytest

import evaluators
from agents.notebook import archive_summary
from agents.population import shape_leaders
from evaluators import EvalResult
from evaluators.judge.result import ShapeResult
from graph import lab, progress, quarantine
from graph.context import RunContext
from graph.lab import ARCHIVE_FILE
from kernels.archive import Archive, CandidateRecord
from kernels.problem import load_problem
from kernels.problem_types import SEEDS_DIR

from .conftest import SHORT, cli, read_summary

SEED = (SEEDS_DIR / "fused_residual_norm.py").read_text()
REFERENCE = load_problem("fused_residual_norm").reference_as_candidate()  # the control's candidate


def correct(speedup: float, band: tuple[float, float]) -> EvalResult:
    result = EvalResult(status="correct", speedup=speedup, runtime_ms=1 / speedup, baseline_ms=1.0)
    result.speedup_band, result.significant = band, not band[0] <= 1.0 <= band[1]
    result.shapes = [ShapeResult(name="s", kind="benchmark", status="correct", speedup=speedup, speedup_band=band)]
    return result


class FakeEvaluations:
    """The seed at 1.0x, or as `seed` says; then a candidate 2 % faster inside its band; then one 30 % faster beyond it.

    A strict run (the confirmation a gain within reach of two processes gets) repeats the first by default, or reads
    as `confirmations` says. The control (the reference judged strictly as itself) reads as `control` says, by default
    two processes 2 % apart at most.
    """

    def __init__(
        self,
        confirmations: list[EvalResult] | None = None,
        control: EvalResult | None = None,
        seed: EvalResult | None = None,
    ):
        self.seed = seed or correct(1.0, (0.96, 1.04))
        self.results = [correct(1.02, (0.97, 1.07)), correct(1.3, (1.25, 1.35))]
        self.confirmations = confirmations or []
        self.control = control or correct(1.0, (0.98, 1.02))
        self.controls: list[evaluators.EvalOptions] = []
        self.last: dict[str, EvalResult] = {}

    def __call__(self, problem, source, device="auto", options=None):
        if options is not None and options.strict and source == REFERENCE:
            self.controls.append(options)
            return self.control.model_copy(update={"strict": True})
        if options is not None and options.strict:
            again = self.confirmations.pop(0) if self.confirmations else self.last[source].model_copy()
            return again.model_copy(update={"strict": True})
        if source == SEED:
            self.last[source] = self.seed
            return self.seed
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


def test_a_confirmed_gain_within_reach_of_two_processes_is_widened_by_its_control(tmp_path, monkeypatch):
    # The reference, judged strictly as itself, reads up to 1.11x off no change: every counted band widens that much.
    evaluations = FakeEvaluations(control=correct(1.0, (0.9, 1.1)))
    monkeypatch.setattr(evaluators, "evaluate", evaluations)
    run_dir = tmp_path / "controlled"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    archive = Archive(run_dir / ARCHIVE_FILE)
    gain = next(r for r in archive.records if r.control_eval)
    assert [r.id for r in archive.records if r.control_eval] == [gain.id]  # the 1.02x inside its band got none
    assert [(options.strict, options.trials) for options in evaluations.controls] == [(True, 5)]
    assert gain.speedup == 1.3 and gain.measured["speedup_band"] == pytest.approx([1.125, 1.5])
    assert gain.measured["shapes"][0]["speedup_band"] == pytest.approx([1.125, 1.5])
    assert gain.measured["significant"] and lab.best_kernel(archive).id == gain.id  # 1.125x still clears no change
    assert f"{gain.id} [correct, 1.3x, band widened 1.11x by its control]" in (run_dir / "report.md").read_text()


def test_a_run_judges_its_control_once_and_weighs_every_later_gain_against_it(tmp_path, monkeypatch):
    evaluations = FakeEvaluations(control=correct(1.0, (0.9, 1.1)))
    evaluations.results = [correct(1.3, (1.25, 1.35)), correct(1.7, (1.65, 1.75))]  # two confirmed gains
    monkeypatch.setattr(evaluators, "evaluate", evaluations)
    run_dir = tmp_path / "twice"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    weighed = [r for r in Archive(run_dir / ARCHIVE_FILE).records if r.control_eval]
    assert [r.speedup for r in weighed] == [1.3, 1.7] and len(evaluations.controls) == 1
    assert weighed[0].control_eval == weighed[1].control_eval
    assert weighed[1].measured["speedup_band"] == pytest.approx([1.65 * 0.9, 1.75 / 0.9])


def test_a_failed_control_is_judged_again_for_the_next_gain(tmp_path, monkeypatch):
    evaluations = FakeEvaluations(control=EvalResult(status="runtime_error", message="the node died"))
    evaluations.results = [correct(1.3, (1.25, 1.35)), correct(1.7, (1.65, 1.75))]
    monkeypatch.setattr(evaluators, "evaluate", evaluations)
    assert cli(*SHORT, "--iterations", "2", "--out", str(tmp_path / "again")) == 0
    assert len(evaluations.controls) == 2


def test_a_seeds_gain_within_reach_of_two_processes_is_weighed_in_setup(tmp_path, monkeypatch):
    evaluations = FakeEvaluations(control=correct(1.0, (0.9, 1.1)), seed=correct(1.2, (1.15, 1.25)))
    monkeypatch.setattr(evaluators, "evaluate", evaluations)
    run_dir = tmp_path / "seed"
    assert cli(*SHORT, "--iterations", "1", "--out", str(run_dir)) == 0
    seed = Archive(run_dir / ARCHIVE_FILE).get("c0001")
    assert seed.status == "seed" and seed.strict_eval["strict"] and seed.control_eval["strict"]
    assert seed.speedup == 1.2 and seed.measured["speedup_band"] == pytest.approx([1.15 * 0.9, 1.25 / 0.9])


def test_a_gain_its_strict_run_did_not_repeat_runs_no_control(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a gain the two runs do not both show needs no control")

    monkeypatch.setattr(evaluators, "evaluate", refuse)
    first = correct(2.0, (1.9, 2.1)).model_dump(mode="json")
    strict = correct(1.0, (0.95, 1.05)).model_copy(update={"strict": True}).model_dump(mode="json")
    assert quarantine.control_run(RunContext(), "fused_residual_norm", "cpu", first, strict) == {}
    fields = quarantine.record_fields(first, strict, {})
    assert fields["control_eval"] == {} and fields["counted"]["speedup_band"] == [0.95, 2.1]
    assert quarantine.spread(CandidateRecord(id="c", source="", status="correct", **fields)) is None


def test_a_gain_however_large_is_weighed_against_its_control(monkeypatch):
    monkeypatch.setattr(evaluators, "evaluate", FakeEvaluations(control=correct(1.0, (0.98, 1.02))))
    first = correct(2.0, (1.9, 2.1)).model_dump(mode="json")
    strict = correct(1.9, (1.8, 2.0)).model_copy(update={"strict": True}).model_dump(mode="json")
    control = quarantine.control_run(RunContext(), "fused_residual_norm", "cpu", first, strict)
    fields = quarantine.record_fields(first, strict, control)
    assert fields["counted"]["speedup_band"] == pytest.approx([1.8 * 0.98, 2.1 / 0.98])
    assert quarantine.spread(CandidateRecord(id="c", source="", status="correct", **fields)) == pytest.approx(
        1 / 0.98, abs=1e-4
    )


def test_a_failed_control_counts_as_the_widest_two_processes_were_seen_apart(tmp_path, monkeypatch):
    failed = EvalResult(status="runtime_error", message="runtime_error: the reference raised")
    monkeypatch.setattr(evaluators, "evaluate", FakeEvaluations(control=failed))
    seen: dict[tuple[str, ...], list[str]] = {}
    events: list[dict] = []
    real_handle = progress.Progress.handle

    def handle(self, namespace, mode, chunk):
        if mode == "custom":
            events.append(chunk)
        elif namespace:  # an experiment's subgraph
            seen.setdefault(namespace, []).extend(chunk)
        real_handle(self, namespace, mode, chunk)

    monkeypatch.setattr(progress.Progress, "handle", handle)
    run_dir = tmp_path / "failed_control"
    assert cli(*SHORT, "--iterations", "2", "--out", str(run_dir)) == 0
    assert sorted(seen.values()) == [["implementer", "evaluate"], ["implementer", "evaluate", "recheck", "control"]]
    assert [(e["status"], e.get("strict"), e.get("control")) for e in events[-2:]] == [
        ("correct", True, None),
        ("runtime_error", None, True),
    ]
    archive = Archive(run_dir / ARCHIVE_FILE)
    gain = next(r for r in archive.records if r.control_eval)
    assert gain.control_eval["status"] == "runtime_error" and quarantine.spread(gain) == 1.4
    assert gain.speedup == 1.3 and gain.set_aside is None  # still counted, by its own figure
    assert gain.measured["speedup_band"] == pytest.approx([1.25 / 1.4, 1.35 * 1.4]) and not gain.measured["significant"]
    assert lab.best_kernel(archive).status == "seed" and read_summary(run_dir)["best_speedup"] == 1.0
    assert f"{gain.id} [correct, 1.3x, band widened 1.4x by its control]" in (run_dir / "report.md").read_text()
