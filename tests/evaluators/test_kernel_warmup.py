"""The harness's kernels, loaded in a thread while a worker starts: what it runs, under which lock, and the wait."""

import threading

import pytest

from evaluators.worker import device_lock, kernel_warmup


@pytest.mark.parametrize("role", ["reference", "candidate"])
def test_each_roles_warm_up_makes_only_calls_the_harness_accepts(role):
    kernel_warmup.warm("cpu", role)  # on the CPU it only checks that every call it makes is one the harness accepts


def test_a_candidate_warms_no_comparison(monkeypatch):
    compared = []
    monkeypatch.setattr(kernel_warmup, "compare_outputs", lambda *args: compared.append(args))
    kernel_warmup.warm("cpu", "candidate")
    assert compared == []
    kernel_warmup.warm("cpu", "reference")
    assert len(compared) == 4  # three float types and an integer one


def test_the_thread_warms_the_gpu_under_the_shared_device_lock_and_wait_joins_it(tmp_path, monkeypatch):
    seen, release = [], threading.Event()

    def warm(device, role):
        seen.append((device, role))
        release.wait(5)

    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(device_lock, "device_key", lambda device: "cuda-test")
    monkeypatch.setattr(kernel_warmup, "warm", warm)
    kernel_warmup.start("reference")
    thread = kernel_warmup._thread
    assert thread.is_alive() and thread.daemon
    release.set()
    kernel_warmup.wait()
    assert not thread.is_alive() and seen == [("cuda", "reference")]
    assert (tmp_path / "locks" / "cuda-test.lock").exists()


@pytest.mark.parametrize("failure", ["warm", "lock"])
def test_a_failed_warm_up_ends_quietly(tmp_path, monkeypatch, failure):
    """Best effort: the harness's own call reports whatever went wrong, where it is needed."""

    def boom(*args, **kwargs):
        raise RuntimeError("no device")

    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(device_lock, "device_key", boom if failure == "lock" else (lambda device: "cuda-test"))
    monkeypatch.setattr(kernel_warmup, "warm", boom)
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args))
    kernel_warmup.start("candidate")
    kernel_warmup.wait()
    assert errors == []


def test_a_warm_up_stuck_behind_another_timing_is_waited_for_only_so_long(tmp_path, monkeypatch):
    release = threading.Event()
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(device_lock, "device_key", lambda device: "cuda-test")
    monkeypatch.setattr(kernel_warmup, "warm", lambda device, role: release.wait(5))
    monkeypatch.setattr(kernel_warmup, "WAIT_S", 0.05)
    kernel_warmup.start("reference")
    kernel_warmup.wait()
    assert kernel_warmup._thread.is_alive()  # the worker goes on; the thread ends on its own
    release.set()
    kernel_warmup._thread.join(5)
