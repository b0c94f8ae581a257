"""The evaluate-only batch: candidates matched by file name, judged for real, resumable, and bad usage is exit 2."""

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

import evaluators
from evaluators import batch
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
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
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
