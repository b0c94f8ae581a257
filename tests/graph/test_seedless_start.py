"""A problem without a bundled seed starts from its measured reference (the reference, aliased, as a candidate)."""

from dataclasses import replace

from agents.notebook import selectable_ids
from evaluators.judge.static import check_source
from graph import lab, loop
from graph.context import RunContext
from kernels.archive import Archive
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM


def test_a_kernelbench_problem_without_a_seed_starts_from_its_measured_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "cache"))
    problem = load_problem(PROBLEM)  # KernelBench-style, and kernels/seeds has nothing for it
    assert problem.seed_path is None
    archive = Archive(tmp_path / "archive.jsonl")
    ctx = RunContext(problem=str(PROBLEM), device="cpu")
    loop._measure_starting_point(archive, problem, "cpu", ctx)  # a real, timed evaluation on the CPU
    [reference] = archive.records
    assert reference.status == "reference" and reference.speedup == 1.0
    assert reference.runtime_ms is not None and reference.runtime_ms > 0, reference.note
    assert reference.eval["status"] == "correct" and reference.eval["baseline_ms"] == reference.runtime_ms
    assert reference.set_aside is None and selectable_ids(archive) == [reference.id]  # the selector's first base
    assert lab.best_kernel(archive) is None  # it has no kernel of its own


def test_the_reference_as_a_candidate_aliases_the_entry_of_its_format():
    problem = load_problem(PROBLEM)
    assert problem.reference_as_candidate() == problem.source.rstrip() + "\n\n\nModelNew = Model\n"
    gpumode = replace(problem, format="gpumode", source="def ref_kernel(data):\n    return data\n")
    candidate = gpumode.reference_as_candidate()
    assert candidate.endswith("return data\n\n\ncustom_kernel = ref_kernel\n")
    assert check_source(candidate, "custom_kernel").flags[0][0] == "no_custom_kernel"
