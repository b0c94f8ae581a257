"""Broken: a thread kills the process (SIGKILL) as soon as the worker waits for the parent's next command.

The parent then writes to a pipe nobody reads; that must end as this candidate's runtime_error, not an exception.
"""

import os
import signal
import sys
import threading
import time

import torch
import torch.nn as nn


def _kill_when_waiting():
    main = threading.main_thread().ident
    while True:
        frame = sys._current_frames().get(main)
        if frame is not None and frame.f_code.co_name == "command":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.0005)


threading.Thread(target=_kill_when_waiting, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.0
