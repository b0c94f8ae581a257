"""A CPU spare starts on idle CPU time, and every thread of it is back to the normal policy once its job comes."""

import os
import subprocess
import sys

import pytest

CHILD = """
import os, threading
from evaluators.worker import startup_priority
startup_priority.idle_while_starting()
started = threading.Event()
threading.Thread(target=lambda: (started.set(), threading.Event().wait(5)), daemon=True).start()
started.wait()
tasks = [int(t) for t in os.listdir("/proc/self/task")]
print([os.sched_getscheduler(t) == os.SCHED_IDLE for t in tasks])
startup_priority.normal_again()
print([os.sched_getscheduler(t) == os.SCHED_OTHER for t in tasks])
"""


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="needs Linux scheduling policies")
def test_a_spare_starts_idle_and_its_job_runs_every_thread_normally():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=60)
    idle, normal = done.stdout.strip().splitlines()
    assert idle == str([True, True]) and normal == str([True, True])


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="needs Linux scheduling policies")
def test_a_spare_that_could_not_leave_idle_time_starts_normally():
    """In its own user namespace a worker cannot leave SCHED_IDLE: its candidate would be timed on idle time only."""
    if subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare cannot make a user namespace here")
    command = ["unshare", "--user", "--map-root-user", sys.executable, "-c", CHILD]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    idle, normal = done.stdout.strip().splitlines()
    assert idle == str([False, False]) and normal == str([True, True])
