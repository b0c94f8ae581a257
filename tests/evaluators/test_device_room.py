"""Device memory that runs short: what the harness frees of its own, and whose shortage is left.

On the CPU the workers plan memory for a simulated device (KS_SIMULATED_DEVICE, worker/device_memory.py): a capacity,
each worker's context, and what candidates say they allocate or cache. The test problem's call is a few KiB, so the
reserve (2 GiB) and the cache flush (512 MiB) are most of what it needs: capacities are set around those.
"""

import json
from collections import deque
from types import SimpleNamespace

import pytest

from evaluators import EvalOptions, evaluate
from evaluators.judge import device_room, reference_pool, spares
from evaluators.judge.process_options import ProcessOptions
from evaluators.judge.result import EvalResult
from evaluators.judge.toolchain import toolchain_key
from evaluators.worker import device_memory
from evaluators.worker.memory import GIB, RESERVE_BYTES
from tests.evaluators.conftest import PROBLEM, candidate

MIB = 1 << 20
FLUSH = 512 * MIB
LEAST = RESERVE_BYTES + FLUSH  # the test problem's one call (a few KiB) aside

HOARD = """
from evaluators.worker import device_memory


class ModelNew(ModelNew):
    def forward(self, x):
        device_memory.simulate(cached={cached})  # blocks its allocator keeps after each call, as torch's does
        return super().forward(x)
"""

KEEP = """
from evaluators.worker import device_memory


class ModelNew(ModelNew):
    def forward(self, x):
        device_memory.simulate(allocated={allocated})  # a buffer of its own it keeps alive
        return super().forward(x)
"""

OUT_OF_MEMORY_WHEN_TIMED = """
_calls = []


class ModelNew(ModelNew):
    def forward(self, x):
        _calls.append(1)
        if len(_calls) > 3:  # past the three correctness trials: being timed
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 70.00 GiB")
        return super().forward(x)
"""

IMPORTED = """
from pathlib import Path

Path({marker!r}).write_text("imported")
"""


@pytest.fixture
def device(tmp_path, monkeypatch):
    """make(capacity, context): a simulated device that every worker started from now on sees."""
    directory = tmp_path / "device"
    directory.mkdir()
    monkeypatch.setenv(device_memory.SIMULATED, str(directory))
    reference_pool.close_all()  # workers started without it would see no device
    spares.close_all()

    def make(capacity: int, context: int = 64 * MIB) -> None:
        (directory / "device.json").write_text(json.dumps({"capacity": capacity, "context": context}))

    yield make
    reference_pool.close_all()
    spares.close_all()


@pytest.fixture
def options(tmp_path):
    # A flush as a GPU's: on the CPU none is made unless asked for (worker/timing.flush_size), and the plan counts it.
    return EvalOptions(timeout_s=60, cache_dir=tmp_path / "cache", flush_mb=512)


def test_a_problem_larger_than_the_device_does_not_fit_and_never_runs_the_candidate(tmp_path, device, options):
    device(2 * GIB + 64 * MIB)
    marker = tmp_path / "imported"
    result = evaluate(str(PROBLEM), candidate("torch_only") + IMPORTED.format(marker=str(marker)), "cpu", options)
    assert result.status == "does_not_fit", result.message
    assert result.message.startswith("does not fit: shape M=8 N=64 needs ~2.5 GiB for one call's inputs")
    assert "the cache flush (0.5 GiB)" in result.message and "free of 2.062 GiB" in result.message
    assert not marker.exists()


def test_idle_spares_on_the_device_end_before_a_problem_is_said_not_to_fit(device, options):
    """Waiting spares hold contexts; where the plan is short, they end and the plan is made again."""
    context = 256 * MIB
    device(LEAST + 3 * context, context)  # room for the two workers, not for two spares beside them
    others = ProcessOptions(output_cap_kb=65)  # spares of another kind: this evaluation claims none of them
    spares.prestart(others, toolchain_key(), "cpu")
    waiting = [spare for queue in spares._spares.values() for spare in queue]
    for spare in waiting:
        spare.call({"cmd": "ping"}, "pong", "startup")  # started: its context is on the device
    assert device_memory.reading("cpu")[0] <= LEAST + context  # two contexts taken
    result = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
    assert result.status == "correct", result.message
    assert all(spare.proc.poll() is not None for spare in waiting)


def test_a_candidate_whose_allocator_hoards_blocks_is_still_timed(device, options):
    """Its worker gives the cache back before the reference reads the device: the timing finds its room."""
    device(8 * GIB)
    result = evaluate(str(PROBLEM), candidate("torch_only") + HOARD.format(cached=6 * GIB), "cpu", options)
    assert result.status == "correct", result.message
    assert result.runtime_ms is not None


def test_a_candidate_that_keeps_too_much_memory_itself_is_its_own_runtime_error(device, options):
    """The device has room once its process ends: the shortage was the candidate's, never does_not_fit."""
    device(8 * GIB)
    result = evaluate(str(PROBLEM), candidate("torch_only") + KEEP.format(allocated=6 * GIB), "cpu", options)
    assert result.status == "runtime_error", result.message
    assert result.message.startswith("runtime_error in timing at shape M=8 N=64: out of device memory beside the ")
    assert "GiB free of 8 GiB once the candidate's process ended" in result.message


def test_a_candidate_out_of_memory_while_timed_is_its_own_runtime_error(device, options):
    device(8 * GIB)
    result = evaluate(str(PROBLEM), candidate("torch_only") + OUT_OF_MEMORY_WHEN_TIMED, "cpu", options)
    assert result.status == "runtime_error", result.message
    assert result.message.startswith("runtime_error in timing at shape M=8 N=64: out of device memory where one call")
    assert result.message.endswith("said: OutOfMemoryError: CUDA out of memory. Tried to allocate 70.00 GiB")


def test_an_honest_candidate_on_a_device_others_filled_since_the_plan_does_not_fit(device, options):
    """Not the candidate's runtime_error: with its process ended, the device still has too little free."""
    device(8 * GIB)
    assert evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options).status == "correct"  # its reference warm
    device_memory.simulate(allocated=6 * GIB)  # another evaluation, say, now holds most of the device
    try:
        result = evaluate(str(PROBLEM), candidate("torch_only"), "cpu", options)
    finally:
        device_memory.simulate(allocated=0)
    assert result.status == "does_not_fit", result.message
    assert result.message.startswith("does not fit: shape M=8 N=64 needs ~2.5 GiB free for one call's inputs")
    assert result.message.endswith("free of 8 GiB with the candidate's process ended")


def test_a_candidate_asking_for_more_than_the_device_in_its_trials_is_its_own_runtime_error(device, options):
    device(8 * GIB)
    result = evaluate(str(PROBLEM), candidate("torch_only") + KEEP.format(allocated=70 * GIB), "cpu", options)
    assert result.status == "runtime_error", result.message
    assert result.message.startswith("runtime_error in correctness at shape M=8 N=64: out of device memory where")
    assert "the process said: OutOfMemoryError: simulated device out of memory" in result.message


# The verdict where memory ran short, on the reference's readings alone.


class Reference:
    """The reference's settled reading of the device."""

    def __init__(self, free: int):
        self.free, self.asked = free, 0

    def room(self, shape: int) -> dict:
        self.asked += 1
        return _reading(self.free)


class Candidate:
    killed, stage = False, "timing"

    def kill(self):
        self.killed = True

    def output_text(self):
        return ""


def _reading(free: int) -> dict:
    layout = {"side_by_side": False, "timing_sets": 1, "retained": 1, "retained_on_device": False}
    return {"layout": layout if free >= LEAST else None, "free_bytes": free, "total_bytes": 8 * GIB,
            "least_bytes": LEAST}  # fmt: skip


@pytest.fixture
def made(monkeypatch):
    made = []
    monkeypatch.setattr(device_room, "make_room", lambda device: made.append(device) or False)
    return made


def test_room_once_the_candidate_has_ended_makes_the_shortage_its_own(made):
    reference, candidate = Reference(3 * GIB), Candidate()
    result = EvalResult(status="correct", device="cuda")
    before = _reading(GIB)
    device_room.shortage(result, candidate, reference, 0, "big", before, None)
    assert candidate.killed and made == ["cuda"] and reference.asked == 1
    assert result.status == "runtime_error"
    assert result.message == (
        "runtime_error in timing at shape big: out of device memory beside the candidate's process, 1 GiB free, where "
        "one call needs ~2.5 GiB with the cache flush and a reserve; the device had 3 GiB free of 8 GiB once the "
        "candidate's process ended"
    )


def test_no_room_even_without_the_candidate_is_the_devices_limit(made):
    reference, candidate = Reference(GIB + GIB // 4), Candidate()
    result = EvalResult(status="correct", device="cuda")
    device_room.shortage(result, candidate, reference, 0, "big", None, "CUDA out of memory. Tried to allocate 9 GiB")
    assert candidate.killed and made == ["cuda"] and result.status == "does_not_fit"
    assert result.message == (
        "does not fit: shape big needs ~2.5 GiB free for one call's inputs and outputs, the cache flush and a "
        "reserve, beside the reference; the device has 1.25 GiB free of 8 GiB with the candidate's process ended"
    )


def test_a_settled_reading_waits_for_ended_processes_to_give_their_memory_back(monkeypatch):
    readings = iter([GIB, GIB + GIB // 2, 3 * GIB, 3 * GIB, 4 * GIB])  # a context takes a moment to go
    monkeypatch.setattr(device_memory, "reading", lambda device: (next(readings), 8 * GIB))
    monkeypatch.setattr(device_memory, "SETTLE_S", 0.0)
    assert device_memory.settled_reading("cuda") == (3 * GIB, 8 * GIB)  # read until it stopped growing


class Idle:
    """A worker process as close_together sees it."""

    def __init__(self):
        self.closed = False
        self.proc = SimpleNamespace(poll=lambda: None)

    def stop(self):
        pass

    def close(self):
        self.closed = True


def test_making_room_ends_only_the_idle_workers_on_that_gpu(monkeypatch):
    def reference(device: str, users: int):
        key = json.dumps(["digest", f"/p/{device}/{users}", device, {}])
        return key, SimpleNamespace(users=users, worker=Idle())

    pool = dict([reference("cuda", 0), reference("cuda:0", 1), reference("cuda:1", 0)])
    waiting = {f"candidate|{device}|tc|o": deque([Idle()]) for device in ("cuda:0", "cuda:1")}
    monkeypatch.setattr(reference_pool, "_pool", dict(pool))
    monkeypatch.setattr(spares, "_spares", waiting)
    assert device_room.make_room("cuda:0")
    ended = [w.worker for w in pool.values() if w.worker.closed]
    assert ended == [pool[json.dumps(["digest", "/p/cuda/0", "cuda", {}])].worker]  # `cuda` is GPU 0
    assert len(reference_pool._pool) == 2  # the one in use, and GPU 1's
    assert not waiting["candidate|cuda:0|tc|o"] and len(waiting["candidate|cuda:1|tc|o"]) == 1
    assert not device_room.make_room("cuda:0")  # nothing idle is left there
