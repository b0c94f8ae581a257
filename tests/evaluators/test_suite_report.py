"""The suite report's arithmetic on a table checked by hand, and the files it writes."""

import json
import math
import xml.etree.ElementTree as ElementTree

import pytest

from evaluators.judge.result import EvalResult, ShapeResult
from evaluators.suites.report import SuiteRow, not_judged, row_from_result, summarize, write_suite_report

# key, status, speedup, set aside: fast_0 counts a, b, c, d, e, j (6 of 10); fast_1 a, b, e (2.0 > 1);
# fast_2 only a (2.0 is not more than 2); f is correct and fastest but set aside, so it counts nowhere.
TABLE = [
    ("a", "correct", 3.0, None),
    ("b", "correct", 1.5, None),
    ("c", "correct", 1.0, None),
    ("d", "correct", 0.5, None),
    ("e", "correct", 2.0, None),
    ("f", "correct", 5.0, "beyond the plausible bound"),
    ("g", "incorrect", None, None),
    ("h", "compile_error", None, None),
    ("j", "correct", None, None),  # checked, not timed
]


def rows() -> list[SuiteRow]:
    table = [SuiteRow(key=k, status=s, speedup=x, set_aside=a) for k, s, x, a in TABLE]
    return table + [not_judged("i", "no candidate file")]


def test_fast_p_and_geomean_on_a_hand_checked_table():
    summary = summarize(rows())
    assert summary["problems"] == 10
    assert (summary["fast_0"], summary["fast_1"], summary["fast_2"]) == (0.6, 0.3, 0.1)
    assert (summary["correct"], summary["set_aside"], summary["not_judged"]) == (7, 1, 1)
    # Over the five trusted timed rows: (3 * 1.5 * 1 * 0.5 * 2) ** (1/5) = 4.5 ** 0.2.
    assert summary["geomean_over"] == 5
    assert summary["geomean_speedup"] == pytest.approx(4.5**0.2)
    assert summary["median_roofline_fraction"] is None


def test_fast_p_over_significant_speedups_needs_the_whole_band_above_p():
    # a: 3x, its band 2.5-3.5 (fast_1 and fast_2 significant); b: 1.5x inside noise 0.9-2.1 (neither);
    # e: 2.0x, band 1.2-2.8 (fast_1 significant only); d: 0.5x, band 0.4-0.6 (a significant slowdown).
    bands = {"a": (2.5, 3.5), "b": (0.9, 2.1), "e": (1.2, 2.8), "d": (0.4, 0.6), "c": (0.95, 1.05)}
    table = [row.model_copy(update={"speedup_band": bands.get(row.key)}) for row in rows()]
    summary = summarize(table)
    assert (summary["fast_1"], summary["fast_2"]) == (0.3, 0.1)  # the raw figures, unchanged
    assert (summary["fast_1_significant"], summary["fast_2_significant"]) == (0.2, 0.1)
    assert summary["significant_changes"] == 3  # a, e and d; b and c are within noise
    assert not SuiteRow(key="x", status="correct", speedup=3.0).fast_significantly(1)  # no band: not significant


def test_an_empty_suite_has_no_fast_problems():
    summary = summarize([])
    assert summary["fast_0"] == 0.0 and summary["geomean_speedup"] is None


def test_rows_from_evaluations_carry_set_aside_and_roofline():
    flagged = EvalResult(status="correct", speedup=40.0, message="correct\nmore", stages={"total": 3.21})
    flagged.flag("beyond_plausible", "speedup 40x is beyond the plausible bound")
    flagged.shapes = [
        ShapeResult(name="a", kind="benchmark", roofline_fraction=0.2),
        ShapeResult(name="b", kind="benchmark", roofline_fraction=0.6),
        ShapeResult(name="c", kind="test", roofline_fraction=0.9),
    ]
    row = row_from_result("level1/1_X", flagged, tokens=10, dollars=0.5)
    assert row.set_aside == "speedup 40x is beyond the plausible bound" and not row.fast(0)
    assert row.roofline_fraction == pytest.approx(0.4) and row.wall_s == 3.21 and row.message == "correct"
    assert (row.tokens, row.dollars) == (10, 0.5)
    wrong = row_from_result("k", EvalResult(status="incorrect", speedup=2.0), wall_s=1.0)
    assert wrong.speedup is None and not wrong.fast(0)


def test_report_files(tmp_path):
    machine = {"gpu": None, "gpus": 0, "cpu": "test cpu", "torch": "2.x", "python": "3.11", "executor": "local: cpu"}
    path = write_suite_report(tmp_path, rows(), suite="kernelbench:X", machine_info=machine, title="T")
    markdown = path.read_text()
    assert "fast_0 60.0% (6/10), fast_1 30.0% (3/10), fast_2 10.0% (1/10)" in markdown
    assert "CPU only (test cpu)" in markdown and "![speedup distribution](speedup.svg)" in markdown
    assert "| f | correct | 5x | - | - | - | - | - | beyond the plausible bound |" in markdown
    assert "| i | not_judged |" in markdown
    report = json.loads((tmp_path / "suite.json").read_text())
    assert [r["key"] for r in report["rows"]] == list("abcdefghji")
    assert math.isclose(report["summary"]["fast_1"], 0.3)
    svg = ElementTree.fromstring((tmp_path / "speedup.svg").read_text())
    labels = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "set aside" in labels and "failed" in labels and "1-2x" in labels


def test_a_problem_too_large_for_the_device_is_counted_apart_and_never_raises_fast_p(tmp_path):
    """does_not_fit is the machine's limit: not a failed candidate, and not dropped from fast_p's denominator."""
    message = "does not fit: shape big needs ~90 GiB for one call's inputs ...; the device has 79.1 GiB free of 80 GiB"
    unfit = row_from_result("k", EvalResult(status="does_not_fit", message=message))
    assert unfit.status == "does_not_fit" and not unfit.fast(0) and unfit.message == message
    summary = summarize([*rows(), unfit])
    assert summary["problems"] == 11 and summary["does_not_fit"] == 1 and summary["not_judged"] == 1
    assert summary["fast_0"] == pytest.approx(6 / 11)
    machine = {"gpu": "H100", "gpus": 1, "cpu": "c", "torch": "2.x", "python": "3.11", "executor": "local: cuda"}
    markdown = write_suite_report(tmp_path, [*rows(), unfit], suite="s", machine_info=machine, title="T").read_text()
    assert "too large for the device's memory: 1 (the machine's limit, not a failed candidate" in markdown
    svg = ElementTree.fromstring((tmp_path / "speedup.svg").read_text())
    bars = {r.find("{http://www.w3.org/2000/svg}title").text for r in svg.iter("{http://www.w3.org/2000/svg}rect")
            if r.find("{http://www.w3.org/2000/svg}title") is not None}  # fmt: skip
    assert {"failed: 3", "does not fit: 1"} <= bars  # g, h and i failed; k did not fit


def test_fast_1_and_geomean_over_torch_compile_on_a_hand_checked_table(tmp_path):
    # Over compile: a 2.0, b 0.5, e 1.0 (not more than 1), f set aside (counts nowhere), c has no compile timing.
    over = {"a": 2.0, "b": 0.5, "e": 1.0, "f": 8.0}
    table = [row.model_copy(update={"speedup_vs_compile": over.get(row.key)}) for row in rows()]
    summary = summarize(table, compile_baseline=True)
    assert summary["fast_1_over_compile"] == pytest.approx(0.1)  # a alone, of 10
    assert summary["geomean_over_compile"] == 3
    assert summary["geomean_speedup_over_compile"] == pytest.approx(1.0)  # (2 * 0.5 * 1) ** (1/3)
    assert "fast_1_over_compile" not in summarize(table)
    machine = {"gpu": None, "gpus": 0, "cpu": "c", "torch": "2.x", "python": "3.11", "executor": "local: cpu"}
    path = write_suite_report(tmp_path, table, suite="s", machine_info=machine, title="T", compile_baseline=True)
    markdown = path.read_text()
    assert "- over torch.compile: fast_1 10.0%; geometric-mean speedup 1x over 3 problems" in markdown
    assert "| a | correct | 3x | - | 2x |" in markdown and "| c | correct | 1x | - | - |" in markdown


def flagged_result(speedup: float, *codes: str, strict: bool = False, status: str = "correct") -> EvalResult:
    result = EvalResult(status=status, speedup=speedup, strict=strict, stages={"total": 2.0}, timing="cuda-events")
    result.speedup_band = (speedup * 0.9, speedup * 1.1)
    for code in codes:
        result.flag(code, f"{code}: {speedup}x")
    return result


def test_a_row_cleared_by_its_strict_run_counts_by_the_strict_runs_measurement(tmp_path):
    first = flagged_result(12.0, "beyond_plausible")
    strict = flagged_result(6.1, strict=True)
    strict.speedup_band = (5.8, 6.4)
    row = row_from_result("grayscale", first, strict=strict)
    # The figures are the lesser run's; the band spans both runs' (the first's 10.8-13.2x too): no narrower than either.
    assert (row.speedup, row.speedup_band, row.set_aside) == (6.1, (5.8, pytest.approx(13.2)), None)
    assert row.rechecked and row.cleared_by_strict and row.fast(2) and row.fast_significantly(2)
    assert row.message == "cleared by strict re-evaluation (set aside at first: beyond_plausible: 12.0x)"
    assert row.wall_s == 4.0  # both evaluations' time
    held = row_from_result("cheat", first, strict=flagged_result(0.0, status="incorrect", strict=True))
    assert held.rechecked and not held.cleared_by_strict and not held.fast(0) and held.speedup == 12.0
    assert held.set_aside.startswith("beyond_plausible: 12.0x; the strict re-evaluation: incorrect")
    disputed = row_from_result("disputed", first, strict=flagged_result(11.0, "side_stream", strict=True))
    assert not disputed.fast(0) and disputed.set_aside.endswith("still side_stream: 11.0x")
    machine = {"gpu": None, "gpus": 0, "cpu": "c", "torch": "2.x", "python": "3.11", "executor": "local: cpu"}
    table = [row, held, disputed, row_from_result("honest", flagged_result(1.5))]
    summary = summarize(table)
    assert (summary["rechecked"], summary["cleared_by_strict"], summary["set_aside"]) == (3, 1, 2)
    assert summary["fast_2"] == 0.25 and summary["geomean_speedup"] == pytest.approx((6.1 * 1.5) ** 0.5)
    markdown = write_suite_report(tmp_path, table, suite="s", machine_info=machine, title="T").read_text()
    assert "- rechecked by a strict re-evaluation: 3, cleared by it: 1" in markdown
    assert "| grayscale | correct | 6.1x | 5.8-13.2x |" in markdown and "| cleared by strict re-evaluation" in markdown
