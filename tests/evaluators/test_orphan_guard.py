"""A worker busy in a command when its parent dies ends with everything it started."""

import os
import subprocess
import sys
import time

BUSY_CHILD = """
import subprocess, sys, time
from evaluators.worker import orphan_guard
orphan_guard.start(int(sys.argv[1]))
grandchild = subprocess.Popen(["sleep", "120"])
print(grandchild.pid, flush=True)
time.sleep(120)  # a command that would run on: timing a kernel, a candidate's hung call
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_the_control_pipe_closing_ends_the_worker_and_its_children():
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", BUSY_CHILD, str(read_end)],
        pass_fds=(read_end,),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    os.close(read_end)
    grandchild = int(child.stdout.readline())
    try:
        time.sleep(0.5)
        assert alive(child.pid) and alive(grandchild), "the guard fired while the parent was alive"
        os.close(write_end)  # what the parent's death does to the pipe
        child.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(grandchild)
    finally:
        for pid in (child.pid, grandchild):
            if alive(pid):
                os.kill(pid, 9)
