"""The worker's CUDA context, opened through the driver in a thread while the worker's main thread imports torch.

Opened after the import, it took 0.15-0.24 s of a cold evaluation's path on an H200, beside 1.1-1.7 s of `import
torch`. The driver's calls made through ctypes release the interpreter's lock, so here they overlap the import;
torch's runtime then finds the device's primary context open and takes it, as it takes any open primary context.
The two slow each other a little, so the whole gains less than the opening took (docs/BENCHMARKS.md). Only a CUDA
build of torch, only the GPU the worker is given (its first visible one), and under the shared starting lock, as the
worker's own opening is. Best effort: whatever fails here is done again, and reported, where the worker opens its
context itself.
"""

from __future__ import annotations

import ctypes
import threading

from evaluators.worker.device_lock import starting_worker_lock
from evaluators.worker.devices import torch_build, visible_gpus

_thread: threading.Thread | None = None


def start() -> None:
    """Open the context in a thread, on a CUDA build of torch; called before torch is imported."""
    global _thread
    build = torch_build()
    if not build.cuda or build.hip:
        return
    _thread = threading.Thread(target=_open, name="cuda-context", daemon=True)
    _thread.start()


def wait() -> None:
    """Return once the thread is done (at once where none started): before the worker opens the context itself."""
    if _thread is not None:
        _thread.join()


def _open() -> None:
    try:
        if not visible_gpus():  # its cuInit: no driver or no GPU, nothing to open
            return
        driver, device, context = ctypes.CDLL("libcuda.so.1"), ctypes.c_int(), ctypes.c_void_p()
        with starting_worker_lock():
            if driver.cuDeviceGet(ctypes.byref(device), 0) == 0:
                # Retained for the process's life, as torch's own retain is: the worker ends with os._exit.
                driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    except Exception:  # best effort (see above)
        pass
