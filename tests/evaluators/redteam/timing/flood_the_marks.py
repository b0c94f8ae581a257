"""Attack (flood the marks), appended after leave_through_windows.py with SHARE 0.86 (test_redteam_timing_order.py's
`flood_the_marks`): each block's mark is a mebibyte, the pipe sized for it, with a thread writing on behind it for a
few milliseconds, while the rest of the block's rows runs on its own stream. A red team of 2026-11-28 (from the code):
the reference read the marks to empty before it launched its watcher, so the watch began once the flood, and the rest
behind it, had stopped. It now reads once, and what is left wakes its next watch inside the candidate's next block.
"""

import fcntl as _fcntl
import os
import threading as _threading
import time

FLOOD_S = 0.005  # longer than the rest a block leaves (about 0.3 ms)


def _flood(fd: int) -> None:
    chunk, until = b"m" * (1 << 20), time.monotonic() + FLOOD_S
    os.set_blocking(fd, False)
    while time.monotonic() < until:
        try:
            os.write(fd, chunk)
        except BlockingIOError:
            pass
        except OSError:
            return


def _patch_mark(ended) -> None:
    replies = getattr(ended, "__self__", None)
    if replies is None or "mark" in vars(replies):
        return
    fd = replies.side_fd
    _fcntl.fcntl(fd, _fcntl.F_SETPIPE_SZ, 1 << 20)

    def mark() -> None:
        os.write(fd, b"m" * (1 << 20))
        _threading.Thread(target=_flood, args=(fd,), daemon=True).start()

    replies.mark = mark  # read anew by the session at each block's command (worker/session.py)


_Leaves = ModelNew


class ModelNew(_Leaves):
    def forward(self, x):
        local = frame_locals("_loop")
        if local is not None and local.get("ended") is not None:
            _patch_mark(local["ended"])
        return super().forward(x)
