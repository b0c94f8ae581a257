# ruff: noqa: F821  (appended to control.py, whose names it uses)
# The beneficiary of starve_anothers_reference.py: an honest candidate whose work is host time (as its problem's
# reference's is, in the test), which says in a byte of a file in the cache directory when it is inside its own calls.
import os as _os
from pathlib import Path as _Path

_flag = _os.open(_Path(_os.environ["KS_CACHE_DIR"]) / "beneficiary-in-forward", _os.O_RDWR | _os.O_CREAT)


def slow_work():
    end = time.thread_time() + WORK_S  # CPU time, not a sleep: work a busy host slows
    while time.thread_time() < end:
        pass


_Honest = ModelNew


class ModelNew(_Honest):
    def forward(self, x):
        _os.pwrite(_flag, b"1", 0)
        try:
            return super().forward(x)
        finally:
            _os.pwrite(_flag, b"0", 0)
