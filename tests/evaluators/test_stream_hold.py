"""The timed stream's hold (worker/stream_hold.py): it ends at the host's release or at its cap, and a call that
synchronizes inside itself waits out the cap instead of deadlocking. These need a CUDA GPU; that its kernel assembles
is in test_ptx_kernels.py.
"""

import threading
import time

import pytest
import torch

from evaluators.worker import stream_hold

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _held_ms(hold, cap_ms: float, host_ms: float) -> float:
    """Device milliseconds from before the hold to after it, the host releasing it `host_ms` after queueing it."""
    before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    before.record()
    hold.hold(cap_ms)
    after.record()
    time.sleep(host_ms / 1e3)
    hold.release()
    after.synchronize()
    return before.elapsed_time(after)


@pytest.mark.gpu
@gpu
def test_the_hold_ends_at_the_release_not_the_cap():
    torch.empty(1, device="cuda")
    hold = stream_hold.load()
    assert hold is not None
    waited = _held_ms(hold, cap_ms=2000.0, host_ms=20.0)
    assert 15.0 < waited < 500.0
    # The next hold waits for its own release: an earlier one does not count.
    assert _held_ms(hold, cap_ms=2000.0, host_ms=20.0) > 15.0


@pytest.mark.gpu
@gpu
def test_a_call_that_synchronizes_inside_waits_out_the_cap():
    torch.empty(1, device="cuda")
    hold = stream_hold.load()
    began = time.perf_counter()
    hold.hold(50.0)
    torch.cuda.synchronize()  # what a call reading a value back does before the host could release the hold
    waited_s = time.perf_counter() - began
    hold.release()
    assert 0.04 < waited_s < 5.0


@pytest.mark.gpu
@gpu
def test_a_thread_that_never_used_the_device_loads_it_for_the_whole_process():
    """The worker's warm-up thread loads it (worker/kernel_warmup.py); the timing loop then finds it loaded."""
    torch.empty(1, device="cuda")
    stream_hold.load.cache_clear()
    loaded = []
    thread = threading.Thread(target=lambda: loaded.append(stream_hold.load()))
    thread.start()
    thread.join()
    assert loaded[0] is not None and stream_hold.load() is loaded[0]
    assert _held_ms(loaded[0], cap_ms=2000.0, host_ms=20.0) < 500.0
