"""The reference's sizes and timings kept on disk, and the warm pool that ends idle references of other problems."""

import json
import subprocess
import sys

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool, spares
from evaluators.judge.evaluate import WORKER_OPTIONS
from evaluators.judge.reference_cache import ReferenceCache
from evaluators.judge.timing_plan import ShapeTiming
from evaluators.judge.toolchain import toolchain_key
from evaluators.judge.wall import Span
from kernels.problem import load_problem
from tests.evaluators.conftest import CANDIDATES, PROBLEM, candidate


@pytest.fixture
def counted(monkeypatch):
    """How many times the reference is timed (not read from the cache), in this process's warm pool."""
    calls = []
    timing_commands = reference_pool.timing_commands

    def counting(*args, **kwargs):
        calls.append(args[1])
        return timing_commands(*args, **kwargs)

    monkeypatch.setattr(reference_pool, "timing_commands", counting)
    reference_pool.close_all()
    yield calls
    reference_pool.close_all()


def _judge(options):
    reference_pool.close_all()  # each evaluation as a new process would make it: no warm reference
    result = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
    assert result.status == "correct", result.message
    return result


def _entry(cache_dir):
    (path,) = (cache_dir / "reference").glob("*.json")
    return path, json.loads(path.read_text())


def test_a_later_process_reads_the_cached_timing_once_the_live_check_agrees(tmp_path, counted, monkeypatch):
    """The second evaluation times no reference: its baselines are the first one's, read from disk."""
    options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
    first = _judge(options)
    timed = len(counted)
    _, entry = _entry(tmp_path)
    assert timed >= 1 and len(entry["timings"]) == timed and "sizes" not in entry  # the CPU plans no memory
    monkeypatch.setattr(reference_pool, "agrees", lambda cached, live: True)
    second = _judge(options)
    assert len(counted) == timed
    assert [s.baseline_ms for s in second.shapes] == [s.baseline_ms for s in first.shapes]


def test_a_forged_entry_is_measured_again_and_rewritten(tmp_path, counted):
    """Baselines ten times too slow, per-call time too: the live check disagrees, the reference is timed anew."""
    options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
    first = _judge(options)
    path, entry = _entry(tmp_path)
    for found in entry["timings"].values():
        found["timing"]["facts"]["times_ms"] = [t * 10 for t in found["timing"]["facts"]["times_ms"]]
        found["timing"]["per_call_s"] *= 10
    forged = {shape: found["timing"]["per_call_s"] for shape, found in entry["timings"].items()}
    path.write_text(json.dumps(entry))
    timed = len(counted)
    second = _judge(options)
    assert len(counted) == 2 * timed
    for before, after in zip(first.shapes, second.shapes, strict=True):
        assert after.baseline_ms is None or after.baseline_ms < 5 * before.baseline_ms
    rewritten = {shape: found["timing"]["per_call_s"] for shape, found in _entry(tmp_path)[1]["timings"].items()}
    assert all(rewritten[shape] != forged[shape] for shape in forged)


def test_no_cache_and_strict_never_read_a_timing(tmp_path, counted, monkeypatch):
    """`reference_cache=False` neither reads nor writes; a strict evaluation times the reference afresh."""
    _judge(EvalOptions(cache_dir=tmp_path, timeout_s=60, reference_cache=False))
    assert not (tmp_path / "reference").exists()
    options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
    _judge(options)
    timed = len(counted)
    monkeypatch.setattr(reference_pool, "agrees", lambda cached, live: True)
    _judge(options.model_copy(update={"strict": True}))
    assert len(counted) > timed


def _timing(per_call_s: float = 0.002) -> ShapeTiming:
    return ShapeTiming(3, None, 1, 2, {"times_ms": [1.0, 1.1, 0.9], "label": "x"}, Span(0.01, 3), per_call_s=per_call_s)


def test_the_key_names_what_a_timing_depends_on(tmp_path):
    """Another seed or timing budget is another entry; another memory plan, or a broken file, is no timing."""
    problem = load_problem(PROBLEM)
    shapes = problem.shapes("cpu")
    options = EvalOptions(cache_dir=tmp_path)
    cache = ReferenceCache(problem, shapes, "cpu", options)
    others = [
        ReferenceCache(problem, shapes, "cpu", options.model_copy(update=u)) for u in ({"seed": 1}, {"rep_ms": 9})
    ]
    assert len({cache.path, *(other.path for other in others)}) == 3
    plan = {"timing_sets": 2, "retained": 4, "retained_on_device": True}
    cache.store(shape=0, timing=_timing(), plan=plan)
    assert cache.timing(0, plan).facts["times_ms"] == [1.0, 1.1, 0.9] and cache.timing(1, plan) is None
    assert cache.timing(0, plan | {"timing_sets": 1}) is None
    cache.path.write_text(cache.path.read_text()[:25])
    assert cache.timing(0, plan) is None and cache.sizes() is None
    assert ReferenceCache(problem, shapes, "cpu", options.model_copy(update={"reference_cache": False})).path is None


def test_an_idle_reference_of_another_problem_ends_before_a_new_one_plans(tmp_path):
    """A suite's next problem plans its memory with the last problem's reference gone, unless it is in use."""
    reference_pool.close_all()
    options = EvalOptions(cache_dir=tmp_path, timing=False, timeout_s=60)
    other, third = tmp_path / "scale_shift_other.py", tmp_path / "scale_shift_third.py"
    other.write_text(PROBLEM.read_text() + "\n# another problem's text\n")
    third.write_text(PROBLEM.read_text() + "\n# a third problem's text\n")
    first = load_problem(PROBLEM)
    job = {"device": "cpu", "problem_path": str(PROBLEM), "shapes": [s.to_json() for s in first.shapes("cpu")]}
    job |= {"cache_dir": str(tmp_path), **options.model_dump(include=WORKER_OPTIONS)}
    held = reference_pool.reference_for(first, first.shapes("cpu"), "cpu", options, job)
    busy = evaluate(str(other), candidate("torch_only"), "cpu", options)  # `held` is in use: it stays
    assert busy.status == "correct" and held.alive
    reference_pool.release(held)
    again = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)  # warm: nothing ends
    assert again.status == "correct" and held.alive
    evaluate(str(third), candidate("torch_only"), "cpu", options)  # a new reference: the idle ones end first
    assert not held.alive and len(reference_pool._pool) == 1
    reference_pool.close_all()


def test_a_one_shot_process_starts_no_spare_to_replace_a_claim(tmp_path, monkeypatch):
    """The CLI evaluates once: its claims leave no process waiting behind them."""
    monkeypatch.setattr(spares, "_replace_claimed", True)
    spares.evaluate_once()
    options = EvalOptions(cache_dir=tmp_path)
    worker = spares.claim("candidate", options, toolchain_key(), "cpu")
    try:
        assert not spares._spares.get(spares._key("candidate", options, toolchain_key(), "cpu"))
    finally:
        worker.close()
        spares.close_all()


def test_the_cli_without_the_cache_leaves_nothing_on_disk(tmp_path):
    """`--no-cache` is listed by --help, and an evaluation under it writes no entry."""
    run = [sys.executable, "-m", "evaluators.run"]
    assert "--no-cache" in subprocess.run([*run, "--help"], capture_output=True, text=True, check=True).stdout
    args = ["--problem", str(PROBLEM), "--candidate", str(CANDIDATES / "torch_only.py"), "--device", "cpu"]
    env = {"KS_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*run, *args, "--no-cache", "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "correct"
    assert not (tmp_path / "reference").exists()
