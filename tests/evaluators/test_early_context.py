"""The worker's CUDA context, opened through the driver in a thread while torch imports: what it calls, under which
lock, and that nothing it meets stops the worker."""

import ctypes
import threading

import pytest

from evaluators.worker import device_lock, early_context
from evaluators.worker.device_lock import LockTimeout
from evaluators.worker.devices import Gpu, TorchBuild

GPU = Gpu(0, "Test GPU", "uuid-test")


class FakeDriver:
    """libcuda's two calls the thread makes, recording them; the retain checks the lock it runs under."""

    def __init__(self, cache_dir):
        self.calls, self.cache_dir = [], cache_dir

    def cuDeviceGet(self, device, ordinal):
        device._obj.value = 7
        self.calls.append(("cuDeviceGet", ordinal))
        return 0

    def cuDevicePrimaryCtxRetain(self, context, device):
        with pytest.raises(LockTimeout):  # held shared by the thread: no timing can start meanwhile
            with device_lock.device_lock(self.cache_dir, "cuda-uuid-test", timeout_s=0):
                pass
        with device_lock.device_lock(self.cache_dir, "cuda-uuid-test", timeout_s=0, shared=True):
            pass  # another worker opening its context does not wait
        self.calls.append(("cuDevicePrimaryCtxRetain", device.value))
        return 0


@pytest.fixture
def cuda_build(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(early_context, "torch_build", lambda: TorchBuild("2.0", "12.8", None))
    monkeypatch.setattr(early_context, "visible_gpus", lambda: (GPU,))
    monkeypatch.setattr(device_lock, "visible_gpus", lambda: (GPU,))
    driver = FakeDriver(tmp_path)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: driver if name == "libcuda.so.1" else None)
    return driver


def test_the_thread_retains_the_first_visible_gpus_primary_context_under_the_shared_lock(cuda_build):
    early_context.start()
    thread = early_context._thread
    assert thread.daemon
    early_context.wait()
    assert not thread.is_alive()
    assert cuda_build.calls == [("cuDeviceGet", 0), ("cuDevicePrimaryCtxRetain", 7)]


def test_nothing_is_opened_without_a_visible_gpu(cuda_build, monkeypatch):
    monkeypatch.setattr(early_context, "visible_gpus", lambda: ())
    early_context.start()
    early_context.wait()
    assert cuda_build.calls == []


def test_a_failing_driver_leaves_the_opening_to_the_worker(cuda_build, monkeypatch):
    def missing(name):
        raise OSError("libcuda.so.1: cannot open shared object file")

    escaped = []  # what the thread let escape: the worker's own opening reports what is wrong, not this thread
    monkeypatch.setattr(threading, "excepthook", escaped.append)
    monkeypatch.setattr(ctypes, "CDLL", missing)
    early_context.start()
    early_context.wait()
    assert escaped == [] and cuda_build.calls == []


@pytest.mark.parametrize("build", [TorchBuild("2.0", None, None), TorchBuild("2.0", None, "6.2")])
def test_no_thread_on_a_cpu_or_rocm_build(build, monkeypatch):
    monkeypatch.setattr(early_context, "_thread", None)
    monkeypatch.setattr(early_context, "torch_build", lambda: build)
    early_context.start()
    assert early_context._thread is None
    early_context.wait()
