# ruff: noqa: F821  (appended to control.py, whose names it uses)
# Attack (outliving its evaluation, past the hardened orphan guard): the guard's poller now holds its own bound
# functions, but it watches the control pipe by its descriptor number. The candidate moves the real pipe to a new
# number (the worker's reply object reads commands from there, so the evaluation goes on as usual) and puts a pipe of
# its own, whose writer it keeps, at the number the guard watches. The poll already waiting still holds the real
# pipe, so the candidate interrupts it with a signal sent to the guard's thread alone: Python retries the poll (PEP
# 475), now on the decoy, which never hangs up. When the parent dies the guard never fires. Here it then hangs in its
# build, a command nothing else ends once the parent is gone.
import gc as _gc
import os as _os
import signal as _signal
import sys as _sys
import threading as _threading
from pathlib import Path as _Path

_control = int(_sys.argv[2])  # the worker's command line: CHANNEL_FD CONTROL_FD ROLE
_replies = next(o for o in _gc.get_objects() if type(o) is _sys.modules["evaluators.worker.replies"].Replies)
_moved = _os.dup(_control)
_decoy_read, _decoy_write = _os.pipe()
_os.dup2(_decoy_read, _control)
_old_control = _replies.control  # kept: dropped, it would close the decoy's number, and the guard would see POLLNVAL
_replies.control = _os.fdopen(_moved, "rb", buffering=0)
_signal.signal(_signal.SIGUSR1, lambda *args: None)
_guard = next(t for t in _threading.enumerate() if t.name == "orphan-guard")
for _ in range(3):
    _signal.pthread_kill(_guard.ident, _signal.SIGUSR1)  # its poll returns EINTR and is made again, on the decoy
    time.sleep(0.05)
_Path("imported").write_text("guard watching a decoy")
time.sleep(3600)
