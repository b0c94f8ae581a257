"""The device's timing lock: one process times on a GPU at a time, across every process of this machine.

The parent holds it around the timing commands it sends (so its clock around a command never includes a wait for
the lock); the profiler while it replays kernels. A starting worker holds it shared while it opens its CUDA context:
contexts open side by side, never while someone times.

The host lock spans the machine's GPUs. It has two kinds of holders: timings (each after its device's lock), and
starting workers, candidates' correctness trials and references' expected outputs (a process's first calls of a
problem's kernels). Each kind shares it with its own and never with the other. With everything side by side on two
H100s, KernelBench level 2's first 50 problems, each its own reference as candidate, read 0.56-1.21x of themselves,
against 0.989-1.031x on one GPU of the same machine; what stretched were the commands that first call kernels (1.8x),
while timing commands moved 0.86-1.03x on average (docs/BENCHMARKS.md, "KernelBench levels in batch"). With every
timing alone on the host, 0.931-1.058x, but a second GPU then gained nothing on a suite whose time is mostly timing
(two H200s: level 2 in 157.7 s, one in 158.2 s). With timings side by side and first calls kept out, two H200s judged
levels 1-3 in 426 s against 501 s on one, bands within 2 % on 95 % of levels 1 and 2, and one of 250 significant, a
problem that reads so on one GPU too.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from evaluators.worker.devices import visible_gpus

HOST_WAIT_S = 30.0  # seconds a timing or a starting worker waits for the host's lock before going on without it


class LockTimeout(RuntimeError):
    """The lock was not free within the wait allowed."""


@contextmanager
def device_lock(cache_dir: Path, device_key: str, timeout_s: float | None = None, shared: bool = False):
    """Serialize timing per device across processes (flock: released even if the holder is killed).

    `shared` holders exclude only exclusive ones: two workers opening their contexts do not wait for each other.
    """
    with _held(_lock_file(cache_dir, f"{device_key}.lock"), shared, timeout_s, _deadline(timeout_s), "the device's"):
        yield


@contextmanager
def host_lock(cache_dir: Path, timing: bool = False, wait_s: float | None = None):
    """Held by a timing (`timing`), or by a starting worker or a problem's first calls, on any GPU of this machine.

    Each kind shares it with its own kind and never with the other: timings on two GPUs run side by side, and no
    worker starts or first calls a problem's kernels meanwhile. Yields whether it was had within `wait_s`
    (HOST_WAIT_S by default). A legitimate holder keeps it for one shape's timing, one context's start or one shape's
    first calls, seconds. Past the wait, the holder is taken for a process that keeps it on purpose (a candidate can
    open the files too, or hang in its trials), and the caller goes on without it: the lock only makes a timing
    quieter, so no verdict waits on it. One waiting for the other kind to leave keeps the turnstile, so holders of
    either kind that come after it wait behind it: neither kind starves the other.
    """
    wait_s = HOST_WAIT_S if wait_s is None else wait_s
    deadline, held = _deadline(wait_s), ExitStack()
    mine, theirs = ("host.timing", "host.loading") if timing else ("host.loading", "host.timing")
    try:
        with (
            _held(_lock_file(cache_dir, "host.turnstile"), False, wait_s, deadline, "the host's"),
            _held(_lock_file(cache_dir, theirs), False, wait_s, deadline, "the host's"),  # the other kind has left
        ):
            # Taken before the other kind's file is let go, so none of that kind comes in between.
            held.enter_context(_held(_lock_file(cache_dir, mine), True, wait_s, deadline, "the host's"))
        had = True
    except LockTimeout:
        had = False
    with held:
        yield had


def _lock_file(cache_dir: Path, name: str) -> Path:
    folder = cache_dir / "locks"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        _set_aside(folder)  # the candidate can write the cache directory: a file or a link put where the folder goes
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _opened(path: Path) -> int:
    """A descriptor of the lock file at `path`, made if missing; whatever else a process left there is set aside.

    The cache directory is the candidate's to write too, so the path may hold a FIFO (opening it for writing would
    block for good), a directory, a link or a socket. Opened without blocking or following links, only a regular file
    is kept; anything else is moved aside and a new file made.
    """
    flags = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _ in range(3):
        try:
            fd = os.open(path, flags, 0o644)
        except OSError:  # a directory (EISDIR), a link (ELOOP), a socket (ENXIO)
            fd = None
        if fd is not None:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
            os.close(fd)
        _set_aside(path)
    raise LockTimeout(f"the timing lock's file {path} could not be made: something keeps taking its place")


def _set_aside(path: Path) -> None:
    try:
        path.rename(path.with_name(f"{path.name}.set-aside-{os.getpid()}-{time.monotonic_ns()}"))
    except OSError:
        pass  # gone already, or not movable: the caller tries again, then gives up on the lock within its wait


def _deadline(timeout_s: float | None) -> float | None:
    return None if timeout_s is None else time.monotonic() + timeout_s


@contextmanager
def _held(path: Path, shared: bool, timeout_s: float | None, deadline: float | None, whose: str):
    """Hold an flock on `path` until the block ends; LockTimeout past `deadline` (None: wait as long as it takes)."""
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with os.fdopen(_opened(path), "rb") as handle:
        if deadline is None:
            fcntl.flock(handle, mode)
        else:
            while True:
                try:
                    fcntl.flock(handle, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LockTimeout(f"{whose} timing lock ({path}) was held for over {timeout_s:g} s") from None
                    time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def device_key(device: str) -> str:
    """A name for the physical device, stable across CUDA_VISIBLE_DEVICES remappings (`cuda:N` is GPU N here)."""
    if not device.startswith("cuda"):
        return "cpu"
    index = int(device.split(":")[1]) if ":" in device else 0
    return f"cuda-{visible_gpus()[index].uuid}"


@contextmanager
def starting_worker_lock():
    """What a starting worker holds shared while it works on its GPU (its context, its kernels' first loads)."""
    cache_dir = Path(os.environ["KS_CACHE_DIR"])
    with device_lock(cache_dir, device_key("cuda"), shared=True), host_lock(cache_dir):
        yield
