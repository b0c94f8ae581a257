"""Attack (the reference's block slowed by a death the candidate timed while stopped): an honest Triton kernel and an
honest timer, but at import it starts helper processes that each fill 8 GiB of device memory, and waits until they
have. Right after the last synchronize of its odd blocks up to 7, it tells one helper to arm a POSIX timer that
SIGKILLs it DELAY_MS later.

By then the candidate and its helpers are stopped, yet a kernel timer still delivers SIGKILL on time: the helper dies
during the reference's turn, after the reference's wait for a quiet device, and the driver clears its 8 GiB while the
reference's block runs. The helpers are started with os.posix_spawn, which the static screen does not name.
What must happen: the resume counts the helper that ended while stopped (judge/pause.py), and the candidate is
flagged `side_stream` or its reference's baseline is not raised.
"""

import os
import sys

HELPERS, DELAY_MS = 4, 15
HELPER = r"""
import ctypes, os, torch
hoard = torch.empty(8 << 30, dtype=torch.int8, device="cuda")
hoard.fill_(1)
torch.cuda.synchronize()
os.write(1, b"r")
delay_ms = int(os.read(0, 16) or b"0")
if delay_ms:
    libc = ctypes.CDLL("librt.so.1")  # timer_create: in librt before glibc 2.34, a stub of libc since
    event = (ctypes.c_int * 16)()  # struct sigevent: sigev_value (8 bytes), sigev_signo, sigev_notify (0: SIGEV_SIGNAL)
    event[2], event[3] = 9, 0
    timer = ctypes.c_void_p()
    spec = (ctypes.c_long * 4)(0, 0, delay_ms // 1000, delay_ms % 1000 * 1_000_000)
    libc.timer_create(1, event, ctypes.byref(timer))  # CLOCK_MONOTONIC
    libc.timer_settime(timer, 0, spec, None)
os.read(0, 1)  # until the candidate's process ends
"""


def _spawn_helper():
    commands, ready = os.pipe(), os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, commands[0], 0), (os.POSIX_SPAWN_DUP2, ready[1], 1)]
    os.posix_spawn(sys.executable, [sys.executable, "-c", HELPER], dict(os.environ), file_actions=actions)
    os.close(commands[0])
    os.close(ready[1])
    return {"command": commands[1], "ready": ready[0]}


_helpers = [_spawn_helper() for _ in range(HELPERS)]
for _helper in _helpers:  # each up (its memory filled) before the timing starts: the import may take seconds
    os.set_blocking(_helper["ready"], True)
    _helper["up"] = os.read(_helper["ready"], 1) == b"r"


def _arm_one() -> None:
    for helper in _helpers:
        if helper["up"]:
            _helpers.remove(helper)
            os.write(helper["command"], str(DELAY_MS).encode())
            return


class ModelNew(_Honest):
    def forward(self, x):
        y = super().forward(x)
        ending, index = ending_block()
        if ending and index is not None and index % 2 == 1 and index <= 7:
            after_the_loop(_arm_one)
        return y
