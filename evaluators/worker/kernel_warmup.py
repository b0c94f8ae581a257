"""The harness's own kernels (comparison, the stream's hold, the pin's sample, the watch), loaded as a worker starts.

CUDA loads a kernel's module on its first launch. In a fresh process on an H100 the comparison's first call took
0.31 s, then about 1 ms (bench/probes/first_use.py): 6-33 ms for each of about ten first kernels. A cold evaluation paid
that on its critical path, in the reference's comparison of the trials and in its check of the timed repetitions.
Loaded here, it overlaps the worker's imports, its wait for a job and the reference's own work.
"""

from __future__ import annotations

import threading

import torch

from evaluators.worker import device_handoff, stream_hold, window_watch
from evaluators.worker.compare import compare_outputs
from evaluators.worker.device_lock import starting_worker_lock
from evaluators.worker.pins import Sample
from evaluators.worker.trials import flatten_outputs

# The longest wait for the thread: it holds the device lock shared, so while another process on this GPU times, it
# waits for that timing to end. Past this, the worker goes on; the thread still cannot run beside any timing.
WAIT_S = 10.0
_thread: threading.Thread | None = None


def start(role: str) -> None:
    """Start loading the kernels `role` will run on the GPU (a worker calls it once its CUDA context exists)."""
    global _thread
    _thread = threading.Thread(target=_warm_under_lock, args=(role,), name="kernel-warmup", daemon=True)
    _thread.start()


def wait() -> None:
    """Return once the kernels are loaded (or WAIT_S passed): before any timing, before a candidate's import."""
    if _thread is not None:
        _thread.join(WAIT_S)


def _warm_under_lock(role: str) -> None:
    # Held shared, as the context's opening is: module loads never run beside another process's timing.
    try:
        with starting_worker_lock():
            warm("cuda", role)
    except Exception:  # best effort: whatever failed here fails again, and is reported, where it is needed
        pass


def warm(device: str, role: str) -> None:
    """Each worker's kernels: the reference's comparison and pin, and both sides' timing loop.

    The reference's: compare a few elements of each common output type (one wrong), sample them as its pins do, and
    copy them as the timing loop holds them. A candidate's: the stream's hold and the held copy, all its timing loop
    runs of ours. It waits for this before its code is imported; while it loaded the comparison's kernels too, its
    build stage took 0.13-0.36 s on an H100 (b2a3c0b), against 0.13-0.21 s before the warm-up
    (docs/BENCHMARKS_HISTORY.md; that this was the cause is not measured).
    """
    expected = torch.rand(256, device=device)
    if device == "cuda":
        stream_hold.load()
        torch.zeros(1, device=device).add_(1)  # the reference's wait for an idle device (worker/device_idle.py)
        device_handoff.spend_event_budget()  # no seal records an event (worker/device_handoff.py)
    flatten_outputs(expected.reshape(16, 16).t(), device)  # the timing loop's copy of a held output
    if role != "reference":
        return
    if device == "cuda":
        Sample(expected.repeat(32)).holds(expected.repeat(32))  # its pins of the timed outputs (worker/pins.py)
        watch = window_watch.load()  # the watch over a candidate's block's host windows, its kernel loaded by a launch
        if watch is not None:
            watch.start()
            watch.end()
    found = expected.clone()
    found[7] += 1.0  # a mismatch also runs the worst element's path
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        compare_outputs([found.to(dtype)], [expected.to(dtype)], None, None, device)
    compare_outputs([(found * 100).int()], [(expected * 100).int()], None, None, device)
