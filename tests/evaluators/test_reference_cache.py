"""The reference's sizes and timings kept on disk, and the warm pool that ends idle references of other problems."""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool, spares
from evaluators.judge.evaluate import WORKER_OPTIONS
from evaluators.judge.reference_cache import CHECK_REPS, ReferenceCache
from evaluators.judge.toolchain import toolchain_key
from kernels.problem import load_problem
from tests.evaluators.conftest import CANDIDATES, PROBLEM, candidate

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = [i for i, shape in enumerate(load_problem(PROBLEM).shapes("cpu")) if shape.kind == "benchmark"]
PLAN = {"timing_sets": 2, "retained": 4, "retained_on_device": True}


@pytest.fixture
def counted(monkeypatch):
    """Each time the reference is timed, in a cold warm pool: (shape, "short" or "full")."""
    calls = []
    timing_commands = reference_pool.timing_commands

    def counting(call, shape, device, options, *args, **kwargs):
        calls.append((shape, "short" if options.max_reps == CHECK_REPS else "full"))
        return timing_commands(call, shape, device, options, *args, **kwargs)

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
    """The one entry file (no temporary left beside it) and its contents."""
    (path,) = (cache_dir / "reference").iterdir()
    return path, json.loads(path.read_text())


def _medians(entry) -> dict[int, float]:
    return {int(shape): statistics.median(found["times_ms"]) for shape, found in entry["timings"].items()}


def _stamp(path):
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, path.read_bytes()


FULL = [(i, "full") for i in BENCHMARK]
SHORT = [(i, "short") for i in BENCHMARK]


def test_a_later_process_times_briefly_and_takes_the_cached_repetitions_when_they_agree(tmp_path, counted, monkeypatch):
    """The second evaluation times the reference with a short run only; its baselines are the entry's medians."""
    options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
    first = _judge(options)
    _, entry = _entry(tmp_path)
    assert sorted(entry["timings"]) == [str(i) for i in BENCHMARK] and counted == FULL
    cached = _medians(entry)
    assert [first.shapes[i].baseline_ms for i in BENCHMARK] == [pytest.approx(cached[i]) for i in BENCHMARK]
    seen = []
    monkeypatch.setattr(reference_pool, "agrees", lambda cached, live: seen.append((cached, live)) or True)
    second = _judge(options)
    assert counted == FULL + SHORT
    assert [c for c, _ in seen] == [entry["timings"][str(i)]["times_ms"] for i in BENCHMARK]
    assert all(0 < len(live) <= CHECK_REPS for _, live in seen)  # measured now, by the reference
    assert [second.shapes[i].baseline_ms for i in BENCHMARK] == [pytest.approx(cached[i]) for i in BENCHMARK]


def test_a_forged_entry_is_measured_again_and_rewritten(tmp_path, counted):
    """Repetitions forged a thousand times slower: the short live run disagrees, the shape is timed in full."""
    options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
    _judge(options)
    path, entry = _entry(tmp_path)
    for found in entry["timings"].values():
        found["times_ms"] = [t * 1000 for t in found["times_ms"]]
    path.write_text(json.dumps(entry))
    forged = _medians(entry)
    second = _judge(options)
    assert counted == FULL + [call for i in BENCHMARK for call in ((i, "short"), (i, "full"))]
    measured = _medians(_entry(tmp_path)[1])
    for i in BENCHMARK:
        assert measured[i] < forged[i] / 100
        assert second.shapes[i].baseline_ms == pytest.approx(measured[i])  # the run just measured, not the forged


def test_no_cache_and_strict_never_read_a_timing(tmp_path, counted, monkeypatch):
    """`reference_cache=False` neither reads nor writes an entry; a strict evaluation times in full and keeps none."""
    monkeypatch.setattr(reference_pool, "agrees", lambda cached, live: True)
    options = EvalOptions(cache_dir=tmp_path, timeout_s=60)
    _judge(options)
    path, _ = _entry(tmp_path)
    written = _stamp(path)
    _judge(options.model_copy(update={"reference_cache": False}))
    assert counted == FULL * 2
    assert _entry(tmp_path)[0] == path and _stamp(path) == written
    _judge(options.model_copy(update={"strict": True}))
    assert counted == FULL * 3
    assert _entry(tmp_path)[0] == path and _stamp(path) == written  # its fewer repetitions replace no entry


def test_the_key_names_what_a_timing_depends_on(tmp_path):
    """Another problem, seed or timing budget is another entry; another memory plan, or a broken file, is none."""
    problem = load_problem(PROBLEM)
    shapes = problem.shapes("cpu")
    (tmp_path / "other").mkdir()
    edited = tmp_path / "other" / PROBLEM.name  # the same name: only the text differs
    edited.write_text(PROBLEM.read_text() + "\n# another problem's text\n")
    other = load_problem(edited)
    options = EvalOptions(cache_dir=tmp_path)
    cache = ReferenceCache(problem, shapes, "cpu", options)
    others = [ReferenceCache(other, other.shapes("cpu"), "cpu", options)]
    changed = [options.model_copy(update=u) for u in ({"seed": 1}, {"rep_ms": 9})]
    others += [ReferenceCache(problem, shapes, "cpu", option) for option in changed]
    assert len({cache.path, *(o.path for o in others)}) == 4
    tolerant = ReferenceCache(problem, shapes, "cpu", options.model_copy(update={"atol": 1.0, "rtol": 1.0}))
    assert tolerant.path == cache.path  # tolerances change comparisons, not timings
    plan = {"timing_sets": 2, "retained": 4, "retained_on_device": True}
    cache.store(shape=0, times_ms=[1.0, 1.1, 0.9], plan=plan)
    assert cache.baseline(0, plan) == [1.0, 1.1, 0.9] and cache.baseline(1, plan) is None
    assert cache.baseline(0, plan | {"timing_sets": 1}) is None
    assert all(o.baseline(0, plan) is None for o in others)
    assert ReferenceCache(problem, shapes, "cpu", options.model_copy(update={"reference_cache": False})).path is None


@pytest.mark.parametrize(
    "broken",
    [
        '{"format": 1, "timi',
        "not json",
        "[]",
        json.dumps({"format": 0, "timings": {}}),
        json.dumps({"format": 1, "timings": [], "sizes": {}}),
        json.dumps({"format": 1, "timings": {"0": {"times_ms": "1.0", "plan": PLAN}}, "sizes": [{"name": 1}]}),
        json.dumps({"format": 1, "timings": {"0": {"times_ms": [1.0, "x"], "plan": PLAN}}}),
        json.dumps({"format": 1, "timings": {"0": {"times_ms": [], "plan": PLAN}}}),
        json.dumps({"format": 1, "timings": {"0": {"times_ms": [float("inf")], "plan": PLAN}}}),
        json.dumps({"format": 1, "sizes": [{"name": "s", "input_bytes": -1, "output_bytes": 4}]}),
    ],
)
def test_a_malformed_entry_reads_as_absent_and_is_written_afresh(tmp_path, broken):
    """Candidates can write the cache: nothing malformed there may crash a later evaluation."""
    problem = load_problem(PROBLEM)
    cache = ReferenceCache(problem, problem.shapes("cpu"), "cpu", EvalOptions(cache_dir=tmp_path))
    cache.path.parent.mkdir(parents=True)
    cache.path.write_text(broken)
    assert cache.baseline(0, PLAN) is None and cache.sizes() is None
    cache.store(shape=0, times_ms=[2.0], plan=PLAN)
    assert cache.baseline(0, PLAN) == [2.0]


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
    job = {"device": "cpu", "problem_path": str(PROBLEM), "shapes": [s.to_json() for s in first.shapes("cpu")]}
    job |= {"cache_dir": str(tmp_path), **options.model_dump(include=WORKER_OPTIONS)}
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


def test_the_cli_without_the_cache_leaves_nothing_on_disk(tmp_path):
    """`--no-cache` is listed by --help, and an evaluation under it writes no entry."""
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
    assert any(tmp_path.iterdir())  # the run used this cache directory (its locks and builds are here)
    assert not (tmp_path / "reference").exists()


def test_only_other_problems_on_the_same_gpu_are_ended():
    """`cuda` is `cuda:0`; the same problem's reference under strict settings is kept, as is another GPU's."""
    problem = load_problem(PROBLEM)
    mine, theirs = [problem.digest, str(PROBLEM), "cuda:0", {}], ["0123456789abcdef", "other.py", "cuda", {}]
    assert reference_pool._evictable(theirs, problem, "cuda:0")
    assert reference_pool._evictable(theirs[:2] + ["cuda:0", {}], problem, "cuda")
    assert not reference_pool._evictable(mine[:3] + [{"strict": True}], problem, "cuda:0")
    assert not reference_pool._evictable(theirs[:2] + ["cuda:1", {}], problem, "cuda:0")
