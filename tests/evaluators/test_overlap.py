"""The candidate builds while a new reference plans; device memory that runs out meanwhile is nobody's verdict.

On the CPU a new reference may always overlap, so a worker raising torch.OutOfMemoryError stands in for a GPU filled by
the other.
"""

import os
from pathlib import Path

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool
from evaluators.judge.reference_pool import OVERLAP_INPUT_SETS, ReferenceWorker
from evaluators.worker.memory import GIB, RESERVE_BYTES
from evaluators.worker.timing_cpu import parse_cpulist, pinned, timing_cpu
from tests.evaluators.conftest import PROBLEM, candidate

# Raises out of memory while building the first `times` times it is built (a file counts them), then is honest.
OOM_AT_BUILD = """
from pathlib import Path

COUNT = Path({count!r})


class ModelNew(ModelNew):
    def __init__(self, n):
        built = int(COUNT.read_text()) if COUNT.exists() else 0
        COUNT.write_text(str(built + 1))
        if built < {times}:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 40.00 GiB")
        super().__init__(n)
"""


@pytest.fixture
def options(tmp_path):
    reference_pool.close_all()  # a new reference: the evaluation overlaps its planning
    # The cache directory is where a candidate's process may leave a file for a test: writable in its namespace.
    (tmp_path / "cache").mkdir()
    yield EvalOptions(timing=False, timeout_s=20, cache_dir=tmp_path / "cache")
    reference_pool.close_all()


@pytest.fixture
def beside(monkeypatch):
    """The candidate builds beside every new reference, however soon the tiny reference is done.

    Without this, a reference that finished before the evaluation asked leaves nothing to overlap, and the tests
    below would judge alone: the race that made them flaky on a loaded machine.
    """
    monkeypatch.setattr(ReferenceWorker, "overlap", property(lambda self: True))


def _oom_candidate(cache_dir: Path, times: int) -> tuple[str, object]:
    count = cache_dir / "builds"
    return candidate("torch_only") + OOM_AT_BUILD.format(count=str(count), times=times), count


def test_out_of_memory_while_building_beside_the_reference_is_tried_again_alone(options, beside):
    source, count = _oom_candidate(options.cache_dir, times=1)
    result = evaluate(str(PROBLEM), source, "cpu", options)
    assert result.status == "correct", result.message
    assert count.read_text() == "2"


def test_out_of_memory_alone_is_the_candidates_own_verdict(options, beside):
    source, count = _oom_candidate(options.cache_dir, times=5)
    result = evaluate(str(PROBLEM), source, "cpu", options)
    assert result.status == "runtime_error"
    assert "out of memory" in result.message
    assert count.read_text() == "2"  # once beside the reference, once alone: never more


def test_beside_a_warm_reference_out_of_memory_is_the_candidates_at_once(options):
    assert evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options).status == "correct"  # now warm
    source, count = _oom_candidate(options.cache_dir, times=5)
    result = evaluate(str(PROBLEM), source, "cpu", options)
    assert result.status == "runtime_error"
    assert count.read_text() == "1"


# The test problem, its reference made to run out of memory: with `once`, on its first call in the first process
# that makes one (it leaves the marker); otherwise on every call while the marker exists.
OUT_OF_MEMORY_REFERENCE = """

_forward = Model.forward


def _forward_or_out_of_memory(self, x):
    from pathlib import Path
    marker = Path({marker!r})
    if marker.exists() != {once}:
        if {once}:
            marker.write_text("1")
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 40.00 GiB")
    return _forward(self, x)


Model.forward = _forward_or_out_of_memory
"""


def _out_of_memory_problem(tmp_path, cache_dir: Path, once: bool):
    marker, problem = cache_dir / "marker", tmp_path / "scale_shift_out_of_memory.py"
    problem.write_text(PROBLEM.read_text() + OUT_OF_MEMORY_REFERENCE.format(marker=str(marker), once=once))
    return problem, marker


def test_the_reference_running_out_of_memory_beside_a_candidate_starts_both_again(tmp_path, options, beside):
    problem, marker = _out_of_memory_problem(tmp_path, options.cache_dir, once=True)
    result = evaluate(str(problem), candidate("torch_only"), "cpu", options)
    assert result.status == "correct", result.message
    assert marker.exists()


def test_a_problem_that_does_not_fit_never_runs_the_candidate(options, monkeypatch):
    # Inputs too large to overlap: the candidate waits for the reference, whose plan says it does not fit.
    plan = {"fits": False, "reason": "shape big needs 9 bytes but the device has 1 byte free"}
    monkeypatch.setattr(ReferenceWorker, "overlap", property(lambda self: False))
    monkeypatch.setattr(ReferenceWorker, "memory", property(lambda self: plan))
    monkeypatch.setattr(ReferenceWorker, "ready", property(lambda self: {"memory": plan}))
    monkeypatch.setattr(ReferenceWorker, "replan", lambda self: plan)  # made again once room is made: still short
    source, count = _oom_candidate(options.cache_dir, times=0)
    result = evaluate(str(PROBLEM), source, "cpu", options)
    assert result.status == "does_not_fit", result.message
    assert not count.exists()


def test_the_reference_running_out_of_memory_beside_a_candidate_holding_the_device_is_the_candidates(tmp_path, options):
    # The candidate "fills the device" once timed (it leaves the marker); the reference's next call then runs out.
    problem, marker = _out_of_memory_problem(tmp_path, options.cache_dir, once=False)
    hog = (
        candidate("torch_only")
        + f"""

_calls = []


class ModelNew(ModelNew):
    def forward(self, x):
        _calls.append(1)
        if len(_calls) > 3:  # past the correctness trials: being timed
            from pathlib import Path
            Path({str(marker)!r}).write_text("1")
        return super().forward(x)
"""
    )
    timed = options.model_copy(update={"timing": True})
    result = evaluate(str(problem), hog, "cpu", timed)
    assert result.status == "runtime_error", result.message
    assert "out of memory beside the candidate" in result.message
    marker.unlink()
    again = evaluate(str(problem), candidate("torch_only"), "cpu", timed)  # a new reference: the run goes on
    assert again.status == "correct", again.message


class _Started:
    """A ReferenceWorker's view of its process's first answer, without a process."""

    overlap, memory_planned = ReferenceWorker.overlap, ReferenceWorker.memory_planned

    def __init__(self, facts: dict):
        self.started, self.device = facts, "cuda"
        self._ready = type("NotDone", (), {"done": staticmethod(lambda: False)})()


def test_a_candidate_builds_beside_the_reference_only_where_the_inputs_leave_room_for_both():
    free = 76 * GIB
    room = (free - RESERVE_BYTES) // OVERLAP_INPUT_SETS
    assert _Started({"free_bytes": free, "total_bytes": 80 * GIB, "input_bytes": room}).overlap
    assert not _Started({"free_bytes": free, "total_bytes": 80 * GIB, "input_bytes": room + 1}).overlap
    # Inputs that cannot be drawn on the meta device are of unknown size: one after the other.
    assert not _Started({"free_bytes": free, "total_bytes": 80 * GIB, "input_bytes": None}).overlap


def test_cpu_lists_parse():
    assert parse_cpulist("0-3,8,10-11\n".strip()) == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("5") == {5}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_a_pin_holds_for_its_block_and_is_undone():
    before = os.sched_getaffinity(0)
    core = max(before)
    with pinned(core):
        assert os.sched_getaffinity(0) == {core}
    assert os.sched_getaffinity(0) == before
    with pinned(None):
        assert os.sched_getaffinity(0) == before


def test_cpu_timings_are_not_pinned():
    # Under the interpreter nothing is launched; a pinned thread only loses the idle core to whatever runs there.
    assert timing_cpu("cpu") is None


@pytest.mark.gpu
def test_every_worker_on_a_gpu_times_on_the_same_core_near_it():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    core = timing_cpu("cuda")
    if len(os.sched_getaffinity(0)) > 1:
        assert core in os.sched_getaffinity(0) and core == timing_cpu("cuda")
