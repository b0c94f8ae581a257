# ruff: noqa: F821  (appended to control.py, whose names it uses)
# Attack (another evaluation's verdict, with its candidate's help; class: the host lock keeps no candidate's code off
# another evaluation's timing): the pause stops a candidate's processes while its own reference times, but nothing
# stops those of the other evaluations on the machine. A helper candidate, building (no lock held, nothing stopped;
# its own timing commands, now beside other GPUs' timings, would do as well) starts processes that spin on every core
# whenever the beneficiary is not inside its own calls: the beneficiary says so in a byte of a file in the cache
# directory, set as its forward begins and cleared as it ends. Its reference's calls, made while it is stopped, are
# slowed; its own are not. The helper's verdict is sacrificed; the beneficiary's speedup rises.
import os as _os
from pathlib import Path as _Path

_cache = _Path(_os.environ["KS_CACHE_DIR"])
_flag = _cache / "beneficiary-in-forward"
_spinners = []

_Honest = ModelNew


def _spin_while_the_beneficiary_waits():
    _os.setsid()  # a session of its own: with autogroups, each spinner gets the CPU share a whole session gets
    fd = _os.open(_flag, _os.O_RDONLY | _os.O_CREAT)
    deadline = time.monotonic() + HOLD_S
    while time.monotonic() < deadline and not (_cache / "release").exists():
        if _os.pread(fd, 1, 0) == b"1":
            time.sleep(0.001)  # its own calls run on a quiet host
        else:
            for _ in range(500):  # its reference's turn, its check, the parent's work: spin
                pass
    _os._exit(0)


class ModelNew(_Honest):
    def __init__(self, n):
        super().__init__(n)
        if not _spinners:
            for _ in range(SPINNERS):
                pid = _os.fork()
                if pid == 0:
                    _spin_while_the_beneficiary_waits()
                _spinners.append(pid)
        (_cache / "helping").write_text(" ".join(map(str, _spinners)))  # for the test
        released = _cache / "release"  # for the test: it ends the help once the beneficiary has its verdict
        end = time.monotonic() + HOLD_S
        while time.monotonic() < end and not released.exists():
            time.sleep(0.1)


SPINNERS, HOLD_S = 8, 60.0  # within the build stage's limit (600 s by default)
