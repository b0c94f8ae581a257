"""The evaluate-only batch: candidates matched by file name, judged for real, resumable, and bad usage is exit 2."""

import functools
import importlib.util
import io
import json
import shutil
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

import evaluators
from evaluators import batch
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from kernels.suite import load_suite

REPO = Path(__file__).parents[2]
FIXTURES = REPO / "tests" / "kernels" / "fixtures"
KERNELBENCH = f"kernelbench:{FIXTURES / 'kernelbench'}"
CANDIDATES = Path(__file__).parent / "batch_candidates"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))


def report(out: Path) -> dict:
    return json.loads((out / "suite.json").read_text())


def test_candidates_match_by_kernelbench_name_then_key_then_name(tmp_path):
    suite = load_suite(KERNELBENCH)
    first, relu, square, level2 = suite.problems
    (tmp_path / "level1").mkdir()
    for name in ("level_1_problem_1_sample_3_kernel.py", "1_Scale_by_two.py", "level1/19_Square.py", "2_Relu.py"):
        (tmp_path / name).write_text("")
    assert batch.candidate_file(first, tmp_path, sample=3).name == "level_1_problem_1_sample_3_kernel.py"
    assert batch.candidate_file(first, tmp_path).name == "1_Scale_by_two.py"  # no sample 0: by name
    assert batch.candidate_file(square, tmp_path) == tmp_path / "level1" / "19_Square.py"
    assert batch.candidate_file(relu, tmp_path).name == "2_Relu.py"
    assert batch.candidate_file(level2, tmp_path) is None


def test_a_batch_judges_for_real_and_a_rerun_judges_nothing_again(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    args = ["--suite", KERNELBENCH, "--problems", "level1/*", "--candidates", str(CANDIDATES), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out)]) == 0
    rows = {row["key"]: row for row in report(out)["rows"]}
    assert list(rows) == ["level1/1_Scale_by_two", "level1/2_Relu", "level1/19_Square"]
    triton_row, reference_row, missing_row = rows.values()
    assert triton_row["status"] == "correct" and triton_row["set_aside"] is None and triton_row["speedup"] > 0
    assert triton_row["timing"] == "interpreter" and triton_row["wall_s"] > 0
    assert reference_row["status"] == "correct" and "no custom kernel" in reference_row["set_aside"]
    assert missing_row["status"] == "not_judged" and "no candidate file" in missing_row["message"]
    summary = report(out)["summary"]
    assert summary["fast_0"] == pytest.approx(1 / 3) and summary["correct"] == 2
    # One line a judged problem; a second where its change was significant and a strict run confirmed it (on a busy
    # CPU the reference judged as itself can read so), a third with the control: never one for the missing candidate.
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {line["row"]["key"] for line in lines} == {"level1/1_Scale_by_two", "level1/2_Relu"} and len(lines) <= 4
    assert "| level1/2_Relu | correct |" in (out / "suite.md").read_text()

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a judged problem was evaluated again")

    monkeypatch.setattr(evaluators, "evaluate", no_evaluation)
    assert batch.main([*args, "--out", str(out)]) == 0
    assert "2 already judged, 0 to judge, 1 without a candidate" in capsys.readouterr().out
    assert report(out)["rows"] == list(rows.values())


def test_resume_skips_judged_problems_and_retries_a_line_cut_by_a_kill(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    judged = {"key": "level1/1_Scale_by_two", "status": "incorrect", "message": "judged before the kill"}
    cut = json.dumps({"row": {"key": "level1/2_Relu", "status": "correct", "speedup": 9.0}})[:30]
    (out / "results.jsonl").write_text(json.dumps({"row": judged, "result": {}}) + "\n" + cut)
    evaluated = []

    def fake_evaluate(problem, source, device, options):
        evaluated.append(problem.name)
        return EvalResult(status="correct", speedup=1.25, stages={"total": 0.5})

    monkeypatch.setattr(evaluators, "evaluate", fake_evaluate)
    args = ["--suite", KERNELBENCH, "--problems", "1-2", "--candidates", str(CANDIDATES), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out)]) == 0
    assert evaluated == ["2_Relu"]  # level2's 1_Add_then_Relu has no candidate; level1's 1 was judged already
    rows = {row["key"]: row for row in report(out)["rows"]}
    assert rows["level1/1_Scale_by_two"]["message"] == "judged before the kill"
    assert rows["level1/2_Relu"]["speedup"] == 1.25
    assert rows["level2/1_Add_then_Relu"]["status"] == "not_judged"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--suite", "kernelbench:/no/such/path", "--candidates", "."], "suite path not found"),
        (["--suite", KERNELBENCH, "--problems", "99", "--candidates", "."], "no problem of"),
        (["--suite", f"gpumode:{FIXTURES / 'gpumode' / 'broken'}", "--candidates", "."], "no selected problem loads"),
        (["--suite", KERNELBENCH, "--candidates", "/no/such/folder"], "candidates folder not found"),
        (["--suite", KERNELBENCH, "--candidates", ".", "--trials", "2"], "--trials must be at least 3"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args, says, capsys, tmp_path):
    assert batch.main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_an_out_folder_candidates_can_write_is_exit_2(capsys, tmp_path, monkeypatch):
    # The journal is read back as written on a re-run: where a candidate can write, it could plant it.
    monkeypatch.setenv("KS_SIMULATED_DEVICE", str(tmp_path / "device"))
    for out in (tmp_path / "cache" / "eval", tmp_path / "device" / "eval", Path("/dev/shm/ks-eval")):
        args = ["--suite", KERNELBENCH, "--candidates", str(CANDIDATES), "--device", "cpu", "--out", str(out)]
        assert batch.main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "which candidates can write; choose a folder outside it" in err, err
        assert not out.exists()


def test_a_gpumode_problem_that_cannot_load_is_exit_2(capsys, tmp_path):
    suite = f"gpumode:{FIXTURES / 'gpumode' / 'broken' / 'no-reference'}"
    assert batch.main(["--suite", suite, "--candidates", ".", "--out", str(tmp_path)]) == 2
    assert "reference.py is missing" in capsys.readouterr().err


def test_reference_candidates_script_writes_each_reference_in_its_form(tmp_path):
    spec = importlib.util.spec_from_file_location("reference_candidates", REPO / "bench" / "reference_candidates.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--suite", KERNELBENCH, "--problems", "2", "--out", str(tmp_path)]) == 0
    relu = (tmp_path / "level1" / "2_Relu.py").read_text()
    assert relu.startswith((FIXTURES / "kernelbench" / "KernelBench" / "level1" / "2_Relu.py").read_text().rstrip())
    assert relu.endswith("class ModelNew(Model):\n    pass\n")
    assert script.main(["--suite", f"gpumode:{FIXTURES / 'gpumode' / 'problems'}", "--out", str(tmp_path)]) == 0
    assert "return ref_kernel(data)" in (tmp_path / "row-scale.py").read_text()


def _journal_line(key: str, speedup: float, band: list, seconds: float, set_aside: str = "", flags=()) -> str:
    row = {"key": key, "status": "correct", "speedup": speedup, "speedup_band": band, "wall_s": seconds,
           "set_aside": set_aside, "process_spread": None, "message": ""}  # fmt: skip
    shape = {"process_floor": 0.01, "band_within": [speedup * 0.999, speedup * 1.001], "speedup": speedup}
    result = {"shapes": [shape], "stages": {"total": seconds}, "flags": [{"code": code} for code in flags]}
    return json.dumps({"row": row, "result": result, "strict": None})


def test_identity_suites_prints_a_level_run_in_parts_from_its_kept_journals(tmp_path, capsys):
    """A level stopped by its budget and finished by a second run: the two journals joined, a problem's last line
    counting; a malformed journal is a one-line usage error."""
    spec = importlib.util.spec_from_file_location("identity_suites", REPO / "bench" / "identity_suites.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    first, rest = tmp_path / "first.jsonl", tmp_path / "rest.jsonl"
    awaiting = "no custom kernel; awaiting its strict re-evaluation (a re-run with its candidate runs it)"
    first.write_text("\n".join([
        _journal_line("level2/1_A", 1.0, [0.99, 1.01], 2.0),
        _journal_line("level2/2_B", 1.3, [1.1, 1.5], 3.0, awaiting),  # significant, then rechecked below
    ]) + "\n")  # fmt: skip
    rest.write_text("\n".join([
        _journal_line("level2/2_B", 1.01, [0.95, 1.07], 3.5),
        _journal_line("level2/3_C", 0.999, [0.985, 1.013], 1.5, flags=["timing_disputed"]),
    ]) + "\n")  # fmt: skip
    script.main(["--journals", str(first), str(rest)])
    out = capsys.readouterr().out
    assert "| 2 | 3/3 | 3 | 0 | 1 | 0 | 66.7% of 3 |" in out, out
    assert "level 2 disputed: level2/3_C" in out, out
    assert out.splitlines()[2].endswith("| 0.999-1.010 | 7.0 |"), out
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"row": {}}\n')
    with pytest.raises(SystemExit) as stopped:
        script.main(["--journals", str(broken)])
    assert stopped.value.code == 2
    assert "broken.jsonl: not a batch journal" in capsys.readouterr().err


def test_a_batch_with_the_compile_baseline_reports_speedups_over_it(tmp_path):
    out = tmp_path / "out"
    args = ["--suite", KERNELBENCH, "--problems", "level1/1_*", "--candidates", str(CANDIDATES), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out), "--compile-baseline"]) == 0
    (row,) = report(out)["rows"]
    assert row["status"] == "correct" and row["speedup_vs_compile"] > 0
    summary = report(out)["summary"]
    assert summary["compile_baseline"] and summary["geomean_over_compile"] == 1
    assert "| problem | status | speedup | 95 % band | vs compile |" in (out / "suite.md").read_text()


def test_a_cluster_that_cannot_be_joined_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # Ray absent: the default path never needs it
    monkeypatch.delitem(sys.modules, "evaluators.executors.ray", raising=False)
    args = ["--suite", KERNELBENCH, "--candidates", str(CANDIDATES), "--cluster", "ray", "--out", str(tmp_path)]
    assert batch.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs Ray: pip install" in err


def test_a_problem_that_cannot_load_beside_good_ones_is_a_failure_row(tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURES / "gpumode" / "problems" / "row-scale", suite / "row-scale")
    shutil.copytree(FIXTURES / "gpumode" / "broken" / "no-reference", suite / "no-reference")
    shutil.copy(FIXTURES / "gpumode" / "problems" / "utils.py", suite / "utils.py")  # shared, as in GPU MODE
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    shutil.copy(FIXTURES / "gpumode" / "submissions" / "row-scale.py", candidates / "row-scale.py")
    out = tmp_path / "out"
    args = ["--suite", str(suite), "--candidates", str(candidates), "--device", "cpu", "--out", str(out)]
    assert batch.main(args) == 0
    rows = {row["key"]: row for row in report(out)["rows"]}
    assert rows["row-scale"]["status"] == "correct", rows["row-scale"]["message"]
    broken = rows["no-reference"]
    assert broken["status"] == "not_judged" and broken["message"].startswith("problem could not be loaded: ")


def test_a_rerun_asking_for_the_compile_baseline_judges_again_what_lacks_it(tmp_path, monkeypatch):
    out = tmp_path / "out"
    args = ["--suite", KERNELBENCH, "--problems", "level1/2_*", "--candidates", str(CANDIDATES), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out)]) == 0
    assert report(out)["rows"][0]["speedup_vs_compile"] is None
    assert batch.main([*args, "--out", str(out), "--compile-baseline"]) == 0
    assert report(out)["rows"][0]["speedup_vs_compile"] > 0

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a problem with its compile timing was evaluated again")

    monkeypatch.setattr(evaluators, "evaluate", no_evaluation)
    assert batch.main([*args, "--out", str(out), "--compile-baseline"]) == 0


# A strict re-evaluation in the batch: evaluate() is faked, since what is tested is what the batch does with verdicts.
LEVEL1 = ["--suite", KERNELBENCH, "--problems", "level1/*", "--candidates", str(CANDIDATES), "--device", "cpu"]
RELU, SCALE = "level1/2_Relu", "level1/1_Scale_by_two"


def verdict(speedup: float | None, *codes: str, status: str = "correct", strict: bool = False) -> EvalResult:
    result = EvalResult(status=status, speedup=speedup, strict=strict, stages={"total": 1.0}, message=status)
    result.speedup_band = (speedup * 0.95, speedup * 1.05) if speedup else None
    for code in codes:
        result.flag(code, f"{code} at {speedup}x")
    return result


class Verdicts:
    """Stands in for evaluate(): per problem name, its first verdict, its strict one and its control (or an error)."""

    def __init__(self, first: dict, strict: dict | None = None, control: dict | None = None):
        self.first, self.strict, self.control = first, strict or {}, control or {}
        self.calls: list[tuple[str, bool, int]] = []
        self.controls: list[str] = []

    def __call__(self, problem, source, device="auto", options=None):
        self.calls.append((problem.name, options.strict, options.trials))
        if source == problem.reference_as_candidate():  # the control: the reference judged as itself
            self.controls.append(problem.name)
            outcome = self.control[problem.name]
        else:
            outcome = (self.strict if options.strict else self.first)[problem.name]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome.model_copy(deep=True)


def control(speedup: float, band: tuple[float, float]) -> EvalResult:
    """The reference judged strictly as itself (it has no kernel of its own)."""
    result = verdict(speedup, "no_custom_kernel", strict=True)
    result.speedup_band, result.significant = band, not band[0] <= 1.0 <= band[1]
    return result


def lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_speedup_a_strict_run_clears_counts_by_the_strict_runs_measurement(tmp_path, monkeypatch):
    verdicts = Verdicts(
        {"2_Relu": verdict(12.4, "beyond_plausible"), "1_Scale_by_two": verdict(1.2)},
        {"2_Relu": verdict(6.1, strict=True)},
        {"2_Relu": control(1.0, (0.99, 1.01))},  # a gain however large is weighed against the reference's spread
    )
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert sorted(verdicts.calls) == [("1_Scale_by_two", False, 3), ("2_Relu", False, 3)] + [("2_Relu", True, 5)] * 2
    rows = {row["key"]: row for row in report(out)["rows"]}
    relu = rows[RELU]
    assert (relu["speedup"], relu["set_aside"], relu["rechecked"], relu["cleared_by_strict"]) == (6.1, None, True, True)
    assert relu["process_spread"] == pytest.approx(1 / 0.99, abs=1e-4)
    assert relu["message"] == "cleared by strict re-evaluation (set aside at first: beyond_plausible at 12.4x)"
    summary = report(out)["summary"]
    assert summary["fast_2"] == pytest.approx(1 / 3) and summary["fast_2_significant"] == pytest.approx(1 / 3)
    assert (summary["rechecked"], summary["cleared_by_strict"], summary["set_aside"]) == (1, 1, 0)
    assert summary["geomean_speedup"] == pytest.approx((6.1 * 1.2) ** 0.5)
    assert "- rechecked by a strict re-evaluation: 1, cleared by it: 1" in (out / "suite.md").read_text()
    order = {"result": 0, "strict": 1, "control": 2}
    ran = lambda line: sum(line[run] is not None for run in order)  # noqa: E731
    scale, first, both, weighed = sorted(lines(out), key=lambda line: (line["row"]["key"], ran(line)))
    assert first["row"]["key"] == RELU and first["result"]["speedup"] == 12.4 and first["strict"] is None
    assert first["row"]["set_aside"].endswith("awaiting its strict re-evaluation (a re-run with its candidate runs it)")
    assert both["result"]["speedup"] == 12.4 and both["strict"]["speedup"] == 6.1 and both["strict"]["strict"]
    assert both["row"]["set_aside"] == "awaiting its control (a re-run with its candidate runs it)"
    assert weighed["row"] == relu and weighed["control"]["speedup"] == 1.0 and scale["strict"] is None

    verdicts.calls.clear()
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert verdicts.calls == []  # nothing judged twice
    assert report(out)["rows"] == list(rows.values())


@pytest.mark.parametrize(
    ("strict", "says"),
    [
        (verdict(None, status="incorrect", strict=True), "the strict re-evaluation: incorrect"),
        (verdict(11.8, "unwatched", strict=True), "the strict re-evaluation: still unwatched at 11.8x"),
        (verdict(11.8, "side_stream", strict=True), "the strict re-evaluation: still side_stream at 11.8x"),
    ],
)
def test_a_speedup_the_strict_run_does_not_clear_stays_set_aside_with_both_evaluations(
    strict, says, tmp_path, monkeypatch
):
    verdicts = Verdicts(
        {"2_Relu": verdict(12.4, "beyond_plausible"), "1_Scale_by_two": verdict(1.2)}, {"2_Relu": strict}
    )
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert sum(is_strict for _, is_strict, _ in verdicts.calls) == 1
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert (relu["status"], relu["speedup"]) == ("correct", 12.4)
    assert relu["rechecked"] and not relu["cleared_by_strict"]
    assert relu["set_aside"] == f"beyond_plausible at 12.4x; {says}"
    summary = report(out)["summary"]
    assert (summary["fast_0"], summary["fast_2"]) == (pytest.approx(1 / 3), 0.0)  # the scale kernel alone
    assert (summary["rechecked"], summary["cleared_by_strict"], summary["set_aside"]) == (1, 0, 1)
    last = [line for line in lines(out) if line["row"]["key"] == RELU][-1]
    assert last["result"]["speedup"] == 12.4 and last["result"]["flags"][0]["code"] == "beyond_plausible"
    kept = EvalResult.model_validate(last["strict"]).model_copy(update={"node": "", "gpu": ""})
    assert kept == strict  # the strict run's whole result, less where it ran


def test_a_flag_no_strict_run_clears_costs_no_strict_run(tmp_path, monkeypatch):
    flagged = verdict(12.4, "beyond_plausible", "no_custom_kernel")
    verdicts = Verdicts({"2_Relu": flagged, "1_Scale_by_two": verdict(0.9, "no_custom_kernel")})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert [is_strict for _, is_strict, _ in verdicts.calls] == [False, False]
    rows = {row["key"]: row for row in report(out)["rows"]}
    assert rows[RELU]["set_aside"].endswith("(no strict re-evaluation clears this)") and not rows[RELU]["rechecked"]
    assert rows[SCALE]["set_aside"] == "no_custom_kernel at 0.9x (no strict re-evaluation clears this)"
    assert report(out)["summary"]["fast_0"] == 0.0 and report(out)["summary"]["rechecked"] == 0
    assert all(line["strict"] is None for line in lines(out)) and len(lines(out)) == 2


def test_a_strict_run_lost_is_run_again_on_a_rerun_and_the_first_never_is(tmp_path, monkeypatch):
    from evaluators.executors.local import InfrastructureError

    lost = InfrastructureError("evaluation not judged: the node died")
    verdicts = Verdicts({"2_Relu": verdict(12.4, "side_stream"), "1_Scale_by_two": verdict(1.2)}, {"2_Relu": lost})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["set_aside"].startswith("side_stream at 12.4x; its strict re-evaluation failed (InfrastructureError")
    assert [line["strict"] for line in lines(out)] == [None, None]  # the first kept; the lost strict run not

    verdicts.calls.clear()
    verdicts.strict["2_Relu"] = verdict(6.1, strict=True)
    verdicts.control["2_Relu"] = control(1.0, (0.99, 1.01))
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    # Only the strict run and its control: the first evaluation is not judged again.
    assert verdicts.calls == [("2_Relu", True, 5)] * 2 and verdicts.controls == ["2_Relu"]
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["cleared_by_strict"] and relu["speedup"] == 6.1
    last = lines(out)[-1]
    assert last["result"]["speedup"] == 12.4 and last["strict"]["speedup"] == 6.1 and last["control"]["speedup"] == 1

    verdicts.calls.clear()
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert verdicts.calls == []


def test_a_confirming_run_that_does_not_fit_is_the_machines_and_a_rerun_retries_it(tmp_path, monkeypatch):
    first = verdict(1.2)
    first.speedup_band, first.significant = (1.1, 1.3), True
    crowded = verdict(None, status="does_not_fit", strict=True)
    verdicts = Verdicts({"2_Relu": first, "1_Scale_by_two": verdict(7.0)}, {"2_Relu": crowded})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["set_aside"].startswith("its strict re-evaluation did not fit")
    assert [line["strict"] for line in lines(out)] == [None, None]  # nothing final was kept of it

    verdicts.calls.clear()
    again = verdict(1.19, strict=True)
    again.speedup_band, again.significant = (1.12, 1.26), True
    verdicts.strict["2_Relu"] = again
    verdicts.control["2_Relu"] = control(1.0, (0.99, 1.01))
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert verdicts.calls == [("2_Relu", True, 5), ("2_Relu", True, 5)] and verdicts.controls == ["2_Relu"]
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert (
        relu["set_aside"] is None
        and relu["speedup"] == 1.19
        and relu["process_spread"] == pytest.approx(1 / 0.99, abs=1e-4)
    )
    assert relu["speedup_band"] == pytest.approx([1.1 * 0.99, 1.3 / 0.99])  # the two runs', widened by the control's


def test_an_evaluation_not_judged_is_a_failure_row_that_a_rerun_judges(tmp_path, monkeypatch):
    from evaluators.judge.evaluate import EnvironmentFailure

    kept = EnvironmentFailure("not judged: the device's timing lock (/cache/locks/cpu.lock) was held for over 1800 s")
    verdicts = Verdicts({"2_Relu": kept, "1_Scale_by_two": verdict(1.2)})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["status"] == "not_judged" and relu["message"] == f"evaluation failed: EnvironmentFailure: {kept}"
    assert [line["row"]["key"] for line in lines(out)] == [SCALE]  # not kept: no verdict was drawn

    verdicts.calls.clear()
    verdicts.first["2_Relu"] = verdict(1.1)
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert verdicts.calls == [("2_Relu", False, 3)]
    assert next(row for row in report(out)["rows"] if row["key"] == RELU)["status"] == "correct"


def test_a_changed_candidate_awaiting_its_strict_run_is_judged_afresh(tmp_path, monkeypatch):
    candidates = tmp_path / "candidates"
    shutil.copytree(CANDIDATES, candidates)
    first = verdict(12.4, "beyond_plausible")
    first.source_hash = "0" * 16  # another source's
    out = tmp_path / "out"
    out.mkdir()
    row = batch.row_from_result(RELU, first)
    (out / "results.jsonl").write_text(json.dumps({"row": row.model_dump(), "result": first.model_dump(mode="json")}))
    verdicts = Verdicts({"2_Relu": verdict(1.1), "1_Scale_by_two": verdict(1.2)})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    args = ["--suite", KERNELBENCH, "--problems", "level1/*", "--candidates", str(candidates), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out)]) == 0
    assert sorted(verdicts.calls) == [("1_Scale_by_two", False, 3), ("2_Relu", False, 3)]


def test_a_significant_change_within_reach_of_two_processes_is_confirmed_before_the_suite_counts_it(
    tmp_path, monkeypatch
):
    # A reference judged as itself read 1.04x (band 1.01-1.07) in one pair of processes and 1.00x in another.
    first = verdict(1.04, "no_custom_kernel")
    first.speedup_band, first.significant = (1.01, 1.07), True
    again = verdict(1.0, "no_custom_kernel", strict=True)
    again.speedup_band, again.significant = (0.98, 1.02), False
    verdicts = Verdicts({"2_Relu": first, "1_Scale_by_two": verdict(7.0)}, {"2_Relu": again})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert sorted(verdicts.calls) == [("1_Scale_by_two", False, 3), ("2_Relu", False, 3), ("2_Relu", True, 5)]
    row = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert row["rechecked"] and row["set_aside"].startswith("no_custom_kernel")
    assert row["speedup"] == 1.0 and row["speedup_band"] == [0.98, 1.07]  # no significant change


class GatedExecutor:
    """An injected executor: the slow problem's first evaluation finishes only once a strict run has been submitted.

    A batch that held its strict runs back until every first evaluation was in would wait here until the fallback
    timer, which the test sees.
    """

    def __init__(self, slow: str):
        self.slow, self.held, self.late = slow, None, False
        self.submitted: list[tuple[str, bool]] = []

    def submit(self, problem, source, options=None):
        self.submitted.append((problem.name, options.strict))
        future = Future()
        if options.strict:
            future.set_result(verdict(6.1, strict=True))
            self.release()
        elif problem.name == self.slow:
            self.held = future
            timer = threading.Timer(5.0, self.release, kwargs={"late": True})
            timer.daemon = True
            timer.start()
        else:
            threading.Timer(0.05, future.set_result, [verdict(12.4, "beyond_plausible")]).start()
        return future

    def release(self, late: bool = False) -> None:
        if self.held is not None and not self.held.done():
            self.late = late
            self.held.set_result(verdict(1.2))


def test_the_strict_run_is_submitted_as_its_first_result_comes_back_not_after_the_batch(tmp_path):
    executor = GatedExecutor(slow="slow")
    problems = {key: SimpleNamespace(name=key, reference_as_candidate=lambda: "reference") for key in ("fast", "slow")}
    console = Console(file=io.StringIO())
    rows = batch.judge(problems, {"fast": "a", "slow": "b"}, tmp_path, executor, EvalOptions(), console)
    # The fast one's strict run, then its control, submitted as each result came back.
    assert executor.submitted == [("fast", False), ("slow", False), ("fast", True), ("fast", True)]
    assert not executor.late
    assert rows["fast"].cleared_by_strict and rows["slow"].speedup == 1.2


def test_a_real_strict_re_evaluation_clears_a_speedup_flagged_as_implausible(tmp_path, monkeypatch):
    # Judged for real on the CPU, with every speedup "implausible": the strict run checks all and vouches for it.
    monkeypatch.setattr(batch, "EvalOptions", functools.partial(EvalOptions, max_speedup=1e-6))
    out = tmp_path / "out"
    args = ["--suite", KERNELBENCH, "--problems", "level1/1_*", "--candidates", str(CANDIDATES), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out)]) == 0
    # A control follows where the two runs' band reaches within two processes' reach of no change: on this machine's
    # interpreter timings it may (a CI run read 0.0469x, then 0.0212x, and submitted one).
    first, *later = lines(out)
    both = later[-1]
    assert len(later) == 1 or (len(later) == 2 and both["control"] is not None), later
    assert first["strict"] is None and [flag["code"] for flag in first["result"]["flags"]] == ["beyond_plausible"]
    assert both["result"] == first["result"] and both["strict"]["strict"] and both["strict"]["status"] == "correct"
    (row,) = report(out)["rows"]
    assert row["cleared_by_strict"] and row["set_aside"] is None
    assert row["speedup"] == min(both["result"]["speedup"], both["strict"]["speedup"])  # the lesser of the two counts
    assert report(out)["summary"]["fast_0"] == 1.0


def significant(speedup: float, band: tuple[float, float], *codes: str, strict: bool = False) -> EvalResult:
    result = verdict(speedup, *codes, strict=strict)
    result.speedup_band, result.significant = band, not band[0] <= 1.0 <= band[1]
    return result


def test_a_change_the_reference_shows_against_itself_is_weighed_against_a_control(tmp_path, monkeypatch):
    # level2/77 on an H200: its reference judged as itself read 1.289x in one pair of processes and again in another.
    verdicts = Verdicts(
        {"2_Relu": significant(1.289, (1.27, 1.31), "no_custom_kernel"), "1_Scale_by_two": verdict(7.0)},
        {"2_Relu": significant(1.285, (1.26, 1.30), "no_custom_kernel", strict=True)},
        {"2_Relu": control(1.29, (1.27, 1.31))},
    )
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert verdicts.controls == ["2_Relu"] and sorted(verdicts.calls).count(("2_Relu", True, 5)) == 2
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["process_spread"] == 1.31 and relu["speedup"] == 1.285
    assert relu["speedup_band"] == pytest.approx([1.26 / 1.31, 1.31 * 1.31])  # no significant change
    assert report(out)["summary"]["controlled"] == 1
    assert "weighed against a control, the reference judged as itself: 1" in (out / "suite.md").read_text()
    kept = [line for line in lines(out) if line["row"]["key"] == RELU]
    assert [(line["strict"] is not None, line["control"] is not None) for line in kept] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert kept[-1]["control"]["speedup"] == 1.29 and kept[-1]["row"] == relu


def batch_losing_its_control(tmp_path: Path, monkeypatch) -> tuple[Verdicts, Path]:
    """A batch whose one confirmed gain (1.3x, then 1.28x) lost its control: nothing of the control kept."""
    first, again = significant(1.3, (1.25, 1.35)), significant(1.28, (1.24, 1.32), strict=True)
    lost = RuntimeError("the node died\nwith a traceback")
    verdicts = Verdicts({"2_Relu": first, "1_Scale_by_two": verdict(7.0)}, {"2_Relu": again}, {"2_Relu": lost})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    return verdicts, out


def test_a_control_lost_is_run_again_on_a_rerun_and_nothing_before_it_is(tmp_path, monkeypatch):
    verdicts, out = batch_losing_its_control(tmp_path, monkeypatch)
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["set_aside"] == "its control failed (RuntimeError: the node died; a re-run retries it)"
    assert relu["process_spread"] is None

    verdicts.calls.clear()
    verdicts.control["2_Relu"] = control(1.01, (0.99, 1.03))
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0
    assert verdicts.calls == [("2_Relu", True, 5)] and verdicts.controls == ["2_Relu", "2_Relu"]
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["set_aside"] is None and relu["process_spread"] == 1.03 and relu["speedup"] == 1.28
    assert relu["speedup_band"] == pytest.approx([1.24 / 1.03, 1.35 * 1.03])  # still a gain, by both runs and more


def test_a_row_awaiting_its_control_stays_set_aside_when_a_rerun_cannot_run_it(tmp_path, monkeypatch):
    # The batch stopped while the control ran (here it failed: nothing of it kept), and the re-run has no candidate.
    verdicts, out = batch_losing_its_control(tmp_path, monkeypatch)
    empty = tmp_path / "no-candidates"
    empty.mkdir()
    verdicts.calls.clear()
    args = ["--suite", KERNELBENCH, "--problems", "level1/*", "--candidates", str(empty), "--device", "cpu"]
    assert batch.main([*args, "--out", str(out)]) == 0
    assert verdicts.calls == []
    relu = next(row for row in report(out)["rows"] if row["key"] == RELU)
    assert relu["set_aside"] == "awaiting its control (a re-run with its candidate runs it)"
    assert report(out)["summary"]["fast_1_significant"] == pytest.approx(1 / 3)  # the other problem's 7x alone


def test_an_evaluation_that_raises_what_is_not_an_exception_still_settles_its_row(tmp_path, monkeypatch):
    verdicts = Verdicts({"2_Relu": verdict(1.1), "1_Scale_by_two": SystemExit(3)})
    monkeypatch.setattr(evaluators, "evaluate", verdicts)
    out = tmp_path / "out"
    assert batch.main([*LEVEL1, "--out", str(out)]) == 0  # and does not wait forever
    scale = next(row for row in report(out)["rows"] if row["key"] == SCALE)
    assert scale["status"] == "not_judged" and scale["message"] == "evaluation failed: SystemExit: 3"
