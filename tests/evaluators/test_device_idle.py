"""The reference's wait for other processes' work to leave the device (worker/device_idle.py)."""

import subprocess
import sys
import time

import pytest
import torch

from evaluators.worker import device_idle
from evaluators.worker.device_idle import Drain, wait_idle

pytestmark = pytest.mark.gpu

BUSY = """
import sys, torch
torch.cuda._sleep(1)
torch.cuda.synchronize()
print("ready", flush=True)
torch.cuda._sleep(int(sys.argv[1]))
torch.cuda.synchronize()
"""


def test_an_idle_device_costs_no_wait():
    probe = torch.zeros(1, device="cuda")
    wait_idle(probe)  # the first launch loads the operator's kernel (22 ms on an H100): the warm-up does it first
    assert wait_idle(probe) == (0.0, True)


def test_another_process_kernel_is_waited_out():
    """About 200 ms of another context's spin: the wait ends once it has, not at once and not at the deadline."""
    probe = torch.zeros(1, device="cuda")
    other = subprocess.Popen([sys.executable, "-c", BUSY, str(400_000_000)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready"
        time.sleep(0.02)  # its spin is on the device by now
        waited, idle = wait_idle(probe)
    finally:
        other.wait(30)
    assert 50 < waited < 1500 and idle, waited


@pytest.mark.gpu
def test_work_that_outlasts_the_deadline_is_reported_as_still_there(monkeypatch):
    monkeypatch.setattr(device_idle, "DEADLINE_S", 0.1)
    probe = torch.zeros(1, device="cuda")
    wait_idle(probe)
    other = subprocess.Popen([sys.executable, "-c", BUSY, str(1_000_000_000)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready"
        time.sleep(0.02)
        _, idle = wait_idle(probe)
    finally:
        other.wait(30)
    assert not idle


GIVER = """
import sys, torch
held = torch.empty(8 << 30, dtype=torch.int8, device="cuda")
held.fill_(1)
torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.readline()
del held
torch.cuda.empty_cache()
print("given", flush=True)
sys.stdin.readline()
"""


def given_back_then_waited(drain: Drain, mark_ms: float) -> dict:
    """The drain's reply to a wait made just after another process gave 8 GiB back."""
    other = subprocess.Popen([sys.executable, "-c", GIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "ready"
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "given"
        reply = drain.wait(mark_ms, time.monotonic())  # as if the giver had just been stopped
        other.stdin.write("\n")
        other.stdin.flush()
    finally:
        other.wait(30)
    return reply


def test_memory_another_process_gave_back_is_waited_out_by_the_reads():
    """8 GiB given back just before the wait: the driver's clearing slows the reads (about 17 ms of it on an H200,
    bench/probes/free_trace.py), and the wait goes on past its first read and ends once a read is quiet again; of
    three such waits at least two must go on."""
    drain = Drain.on_cuda()
    trusted = []
    for _ in range(5):
        trusted += drain.wait(None, time.monotonic() - drain.clear_s)["trusted_ms"]  # nothing stopped lately
    mark = sorted(trusted)[len(trusted) // 4]
    replies = [given_back_then_waited(drain, mark) for _ in range(3)]
    assert all(reply["idle"] for reply in replies), replies
    assert sum(len(reply["reads_ms"]) > 1 for reply in replies) >= 2, replies
    assert not any(reply["trusted_ms"] for reply in replies), replies  # ended by a quiet read, not by waiting it out
