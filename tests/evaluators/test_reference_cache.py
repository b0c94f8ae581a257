"""The reference's sizes kept on disk, its timing with every candidate, and the warm pool's evictions."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool, spares
from evaluators.judge.evaluate import WORKER_OPTIONS
from evaluators.judge.reference_cache import ReferenceCache
from evaluators.judge.toolchain import toolchain_key
from evaluators.judge.wall import reported_ms
from kernels.bundle import pack_problem
from kernels.problem import load_problem
from tests.evaluators.conftest import CANDIDATES, PROBLEM, candidate

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = [i for i, shape in enumerate(load_problem(PROBLEM).shapes("cpu")) if shape.kind == "benchmark"]
SIZES = [{"name": "n=4", "input_bytes": 64, "output_bytes": 16}]


def test_a_warm_reference_is_timed_again_beside_every_candidate(tmp_path, monkeypatch):
    """One reference process serves both evaluations; each times it anew at every benchmark shape, its own reps."""
    timed = []
    time_side_by_side = reference_pool.time_side_by_side

    def counting(reference_call, candidate_call, shape, *args, **kwargs):
        both = time_side_by_side(reference_call, candidate_call, shape, *args, **kwargs)
        timed.append((shape, both))
        return both

    monkeypatch.setattr(reference_pool, "time_side_by_side", counting)
    reference_pool.close_all()
    try:
        options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
        first = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
        (warm,) = reference_pool._pool.values()
        second = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
        assert [first.status, second.status] == ["correct"] * 2
        assert list(reference_pool._pool.values()) == [warm] and warm.alive  # the second started no reference
        assert (first.reference_warm, second.reference_warm) == (False, True)
        assert [shape for shape, _ in timed] == BENCHMARK * 2
        results = [first] * len(BENCHMARK) + [second] * len(BENCHMARK)
        for (shape, (reference, _)), result in zip(timed, results, strict=True):
            assert result.shapes[shape].baseline_ms == pytest.approx(reported_ms(reference))
    finally:
        reference_pool.close_all()


def test_each_strict_run_gets_a_reference_process_of_its_own(tmp_path):
    """A confirming run is a fresh draw of both processes: its reference is never one an earlier run warmed."""
    reference_pool.close_all()
    try:
        options = EvalOptions(cache_dir=tmp_path, timeout_s=60, strict=True, trials=5)
        first = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
        second = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
        assert [first.status, second.status] == ["correct"] * 2
        assert (first.reference_warm, second.reference_warm) == (False, False) and not reference_pool._pool
    finally:
        reference_pool.close_all()


def test_the_key_names_what_sizes_depend_on(tmp_path):
    """Another problem's text is another entry; options that change only timings or comparisons are the same one."""
    problem = load_problem(PROBLEM)
    shapes = problem.shapes("cpu")
    (tmp_path / "other").mkdir()
    edited = tmp_path / "other" / PROBLEM.name  # the same name: only the text differs
    edited.write_text(PROBLEM.read_text() + "\n# another problem's text\n")
    other = load_problem(edited)
    options = EvalOptions(cache_dir=tmp_path)
    cache = ReferenceCache(problem, shapes, "cpu", options)
    assert ReferenceCache(other, other.shapes("cpu"), "cpu", options).path != cache.path
    for update in ({"seed": 1}, {"rep_ms": 9}, {"atol": 1.0}):
        assert ReferenceCache(problem, shapes, "cpu", options.model_copy(update=update)).path == cache.path
    assert ReferenceCache(problem, [*shapes, *shapes], "cpu", options).path != cache.path
    cache.store(sizes=SIZES)
    assert cache.sizes() == SIZES and not list(cache.path.parent.glob(".entry-*"))
    assert ReferenceCache(other, other.shapes("cpu"), "cpu", options).sizes() is None
    assert ReferenceCache(problem, shapes, "cpu", options.model_copy(update={"reference_cache": False})).path is None


@pytest.mark.parametrize(
    "broken",
    [
        '{"format": 2, "siz',
        "not json",
        "[]",
        json.dumps({"format": 1, "sizes": SIZES}),  # an earlier format's entry
        json.dumps({"format": 2, "sizes": {}}),
        json.dumps({"format": 2, "sizes": [{"name": 1}]}),
        json.dumps({"format": 2, "sizes": [{"name": "s", "input_bytes": -1, "output_bytes": 4}]}),
        json.dumps({"format": 2, "sizes": [{"name": "s", "input_bytes": 1.5, "output_bytes": 4}]}),
        json.dumps({"format": 2, "sizes": [SIZES[0] | {"extra": 1}]}),
    ],
)
def test_a_malformed_entry_reads_as_absent_and_is_written_afresh(tmp_path, broken):
    """Candidates can write the cache: nothing malformed there may crash a later evaluation."""
    problem = load_problem(PROBLEM)
    cache = ReferenceCache(problem, problem.shapes("cpu"), "cpu", EvalOptions(cache_dir=tmp_path))
    cache.path.parent.mkdir(parents=True)
    cache.path.write_text(broken)
    assert cache.sizes() is None
    cache.store(sizes=SIZES)
    assert cache.sizes() == SIZES


def _pooled(path) -> reference_pool.ReferenceWorker:
    """The warm reference of the problem at `path`."""
    (found,) = [w for key, w in reference_pool._pool.items() if json.loads(key)[1] == str(path)]
    return found


def test_an_idle_reference_of_another_problem_ends_before_a_new_one_plans(tmp_path):
    """A suite's next problem plans its memory with the last problem's reference gone, unless it is in use."""
    reference_pool.close_all()
    options = EvalOptions(cache_dir=tmp_path, timing=False, timeout_s=60)
    other, third = tmp_path / "scale_shift_other.py", tmp_path / "scale_shift_third.py"
    other.write_text(PROBLEM.read_text() + "\n# another problem's text\n")
    third.write_text(PROBLEM.read_text() + "\n# a third problem's text\n")
    first = load_problem(PROBLEM)
    job = {"device": "cpu", "problem": pack_problem(first), "shapes": [s.to_json() for s in first.shapes("cpu")]}
    job |= {"cache_dir": str(tmp_path), "trial_seed": 1, **options.model_dump(include=WORKER_OPTIONS)}
    try:
        held = reference_pool.reference_for(first, first.shapes("cpu"), "cpu", options, job)
        busy = evaluate(str(other), candidate("torch_only"), "cpu", options)  # `held` is in use: it stays
        assert busy.status == "correct" and held.alive and _pooled(other).alive
        reference_pool.release(held)
        again = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)  # warm: nothing ends
        assert again.status == "correct" and held.alive and _pooled(PROBLEM) is held and _pooled(other).alive
        ended = _pooled(other)
        evaluate(str(third), candidate("torch_only"), "cpu", options)  # a new reference: the idle ones end first
        assert not held.alive and not ended.alive
        assert list(reference_pool._pool.values()) == [_pooled(third)] and _pooled(third).alive
    finally:
        reference_pool.close_all()


def test_a_one_shot_process_starts_no_spare_to_replace_a_claim(tmp_path, monkeypatch):
    """The CLI evaluates once: its claims leave no process waiting behind them."""
    monkeypatch.setattr(spares, "_replace_claimed", True)  # restored after the test, whatever evaluate_once sets
    spares.evaluate_once()
    options = EvalOptions(cache_dir=tmp_path)
    worker = spares.claim("candidate", options, toolchain_key(), "cpu")
    try:
        assert not spares._spares.get(spares._key("candidate", options, toolchain_key(), "cpu"))
    finally:
        worker.close()
        spares.close_all()


def test_the_cli_takes_no_cache(tmp_path):
    """`--no-cache` is listed by --help and accepted (on the CPU no entry is written anyway: sizes plan GPU memory)."""
    run = [sys.executable, "-m", "evaluators.run"]
    env = os.environ | {"KS_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    listed = subprocess.run([*run, "--help"], capture_output=True, text=True, check=True, cwd=REPO, env=env)
    assert "--no-cache" in listed.stdout
    args = ["--problem", str(PROBLEM), "--candidate", str(CANDIDATES / "torch_only.py"), "--device", "cpu"]
    done = subprocess.run(
        [*run, *args, "--no-cache", "--json"], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.splitlines()[-1])
    assert record["status"] == "correct" and record["baseline_ms"] > 0  # the reference was timed


def test_only_other_problems_on_the_same_gpu_are_ended():
    """`cuda` is `cuda:0`; the same problem's reference under strict settings is kept, as is another GPU's."""
    problem = load_problem(PROBLEM)
    mine, theirs = [problem.digest, str(PROBLEM), "cuda:0", {}], ["0123456789abcdef", "other.py", "cuda", {}]
    assert reference_pool._evictable(theirs, problem, "cuda:0")
    assert reference_pool._evictable(theirs[:2] + ["cuda:0", {}], problem, "cuda")
    assert not reference_pool._evictable(mine[:3] + [{"strict": True}], problem, "cuda:0")
    assert not reference_pool._evictable(theirs[:2] + ["cuda:1", {}], problem, "cuda:0")
