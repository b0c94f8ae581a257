"""Suites: KernelBench checkouts and level folders, GPU MODE checkouts, plain folders; selection by id and pattern."""

import shutil
from pathlib import Path

import pytest

from kernels.problem_types import ProblemError
from kernels.suite import SuiteError, load_suite

FIXTURES = Path(__file__).parent / "fixtures"
KERNELBENCH = FIXTURES / "kernelbench"
GPUMODE = FIXTURES / "gpumode"


def keys(suite) -> list[str]:
    return [p.key for p in suite.problems]


def test_kernelbench_checkout_lists_every_level_in_order():
    suite = load_suite(f"kernelbench:{KERNELBENCH}")
    assert suite.kind == "kernelbench"
    assert keys(suite) == ["level1/1_Scale_by_two", "level1/2_Relu", "level1/19_Square", "level2/1_Add_then_Relu"]
    assert [(p.id, p.level) for p in suite.problems] == [(1, 1), (2, 1), (19, 1), (1, 2)]
    assert suite.problems[2].name == "19_Square"


def test_kernelbench_level_folder_and_selection_by_ids_ranges_and_patterns():
    level1 = load_suite(f"kernelbench:{KERNELBENCH}/KernelBench/level1")
    assert keys(level1) == ["level1/1_Scale_by_two", "level1/2_Relu", "level1/19_Square"]
    assert keys(level1.select("1-2")) == ["level1/1_Scale_by_two", "level1/2_Relu"]
    assert keys(level1.select("19, *Relu*")) == ["level1/2_Relu", "level1/19_Square"]
    everything = load_suite(f"kernelbench:{KERNELBENCH}", "1,level1/19_*")
    assert keys(everything) == ["level1/1_Scale_by_two", "level1/19_Square", "level2/1_Add_then_Relu"]
    assert set(everything.load_all()[0]) == set(keys(everything))


def test_gpumode_checkout_finds_problem_directories():
    suite = load_suite(f"gpumode:{GPUMODE}/problems")
    assert keys(suite) == ["row-scale", "softplus-rows"]
    assert keys(load_suite(f"gpumode:{GPUMODE}", "problems/*")) == ["problems/row-scale", "problems/softplus-rows"]
    assert keys(load_suite(f"gpumode:{GPUMODE}/problems/row-scale")) == ["row-scale"]


def test_plain_folder_of_files_and_directories(tmp_path):
    shutil.copy(KERNELBENCH / "KernelBench" / "level1" / "2_Relu.py", tmp_path / "relu.py")
    shutil.copytree(GPUMODE / "problems" / "softplus-rows", tmp_path / "softplus-rows")
    suite = load_suite(str(tmp_path))
    assert suite.kind == "dir" and keys(suite) == ["relu", "softplus-rows"]
    problems, _ = suite.load_all()
    assert problems["relu"].format == "kernelbench" and problems["softplus-rows"].format == "gpumode"


@pytest.mark.parametrize(
    ("spec", "selection", "says"),
    [
        ("kernelbench:/no/such/checkout", None, "suite path not found: /no/such/checkout"),
        (f"kernelbench:{GPUMODE}", None, "neither a KernelBench checkout nor a KernelBench/levelN folder"),
        (f"kernelbench:{KERNELBENCH}", "40-50", "no problem of kernelbench:"),
        (f"gpumode:{GPUMODE}", "*nothing*", "matches '*nothing*'"),
        (f"gpumode:{KERNELBENCH}", None, "no problems found in gpumode:"),
    ],
)
def test_bad_suites_are_one_line_errors(spec, selection, says):
    with pytest.raises(SuiteError) as error:
        load_suite(spec, selection)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_a_selection_where_nothing_loads_is_one_error_naming_them():
    suite = load_suite(f"gpumode:{GPUMODE}", "broken/*")
    with pytest.raises(ProblemError) as error:
        suite.load_all()
    message = str(error.value)
    assert message.startswith("no selected problem loads: broken/")
    assert "(and 5 more)" in message and "\n" not in message


def test_broken_problems_beside_good_ones_are_reported_not_fatal():
    loaded, broken = load_suite(f"gpumode:{GPUMODE}", "broken/no-reference,problems/row-scale").load_all()
    assert list(loaded) == ["problems/row-scale"]
    assert list(broken) == ["broken/no-reference"] and "reference.py is missing" in broken["broken/no-reference"]
