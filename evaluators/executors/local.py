"""Where evaluations run: the Executor interface the graph's slots and the batches submit to, and its local kind.

The local executor runs one evaluation per GPU at a time on this host (CPU: as many as asked), each through
`evaluate()`. With several GPUs each has a process of its own (`SlotProcess`), as each Ray slot has: threads of one
process share its interpreter lock, so the parent's clock around one GPU's timing commands would also count the
other evaluations' Python work (their bands, their replies) as the candidate's. On 4 H100s, with every GPU in one
process, 6 of 60 honest evaluations were `timing_disputed` against Ray's 3 (docs/BENCHMARKS.md, "Past one GPU").
The Ray executor (`evaluators.executors.ray`, imported only when a cluster is asked for) implements the same
interface. `evaluators.executors.make_executor` picks one from a `--cluster` value.
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.connection
import os
import queue
import re
import signal
import socket
import threading
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Protocol

import evaluators
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from evaluators.judge.toolchain import device_index
from evaluators.worker.devices import visible_gpus
from kernels.problem_types import Problem

CLUSTER_SPEC = re.compile(r"local|ray|auto|ray://[^\s:/]+:\d+")


class ClusterError(RuntimeError):
    """A cluster that cannot be reached or used; the message is one line."""


class InfrastructureError(ClusterError):
    """An evaluation the machinery lost (its worker or node died) more often than retries allow: not judged.

    It is no verdict on the candidate, so it is raised, never turned into an EvalResult status: the caller
    records the evaluation as not judged, and a resumed run evaluates it again.
    """


@dataclass(frozen=True)
class ExecutorProgress:
    """A snapshot for live progress: evaluations waiting for a device, running per node, finished, retried."""

    queued: int = 0
    running: dict[str, int] = field(default_factory=dict)
    done: int = 0
    retried: int = 0

    def line(self) -> str:
        """One status line: "2 queued | running: gpu-a 4, gpu-b 3 | 17 done | 1 retried"."""
        running = ", ".join(f"{node} {count}" for node, count in sorted(self.running.items())) or "none"
        retried = f" | {self.retried} retried" if self.retried else ""
        return f"{self.queued} queued | running: {running} | {self.done} done{retried}"


class Executor(Protocol):
    """Runs evaluations somewhere; results come back as EvalResult, whatever the candidate did."""

    def submit(self, problem: Problem, source: str, options: EvalOptions | None = None) -> Future[EvalResult]:
        """Queue one evaluation of `source` against `problem`."""
        ...

    def describe(self) -> str:
        """Where evaluations run, for reports: "local: 2 x cuda", "ray: 3 nodes, 16 GPUs"."""
        ...

    def progress(self) -> ExecutorProgress:
        """Evaluations queued, running per node and done so far (cheap; a live display polls it)."""
        ...

    def close(self) -> None:
        """Release workers and connections; pending evaluations are cancelled."""
        ...


class LocalExecutor:
    """One evaluation at a time per device of this host; `devices` like ["cuda:0", "cuda:1"] or ["cpu"] * 2."""

    def __init__(self, devices: list[str]):
        if not devices:
            raise ValueError("a local executor needs at least one device")
        self.devices = list(devices)
        # One GPU, or CPU slots (tests and the CPU demo, where the workers' clocks are the interpreter's): in-process.
        several_gpus = len(set(devices)) > 1 and all(d.startswith("cuda") for d in devices)
        self._slots = {device: SlotProcess(device) for device in devices} if several_gpus else {}
        self._free: queue.Queue[str] = queue.Queue()
        for device in self.devices:
            self._free.put(device)
        self._pool = ThreadPoolExecutor(max_workers=len(self.devices), thread_name_prefix="ks-eval")
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def submit(self, problem: Problem, source: str, options: EvalOptions | None = None) -> Future[EvalResult]:
        """Queue one evaluation; it runs on the next free device."""
        with self._lock:
            self._counts["queued"] += 1
        return self._pool.submit(self._run, problem, source, options)

    def _run(self, problem: Problem, source: str, options: EvalOptions | None) -> EvalResult:
        device = self._free.get()
        with self._lock:
            self._counts.update(queued=-1, running=1)
        try:
            if device in self._slots:
                result = self._slots[device].evaluate(problem, source, options)
            else:  # looked up at call time, so a spy on evaluators.evaluate sees every in-process evaluation
                result = evaluators.evaluate(problem, source, device, options)
            result.node, result.gpu = placement(device)
            return result
        finally:
            with self._lock:
                self._counts.update(running=-1, done=1)
            self._free.put(device)

    def progress(self) -> ExecutorProgress:
        """Counts of this host's evaluations."""
        with self._lock:
            running = {socket.gethostname(): self._counts["running"]} if self._counts["running"] else {}
            return ExecutorProgress(queued=self._counts["queued"], running=running, done=self._counts["done"])

    def describe(self) -> str:
        """The devices, e.g. "local: cuda:0, cuda:1"."""
        return f"local: {', '.join(self.devices)}"

    def close(self) -> None:
        """Wait for running evaluations; drop queued ones; end the devices' processes (their workers with them)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        for slot in self._slots.values():
            slot.close()


class SlotProcess:
    """One GPU's evaluations, one at a time, in a process that lives as long as the executor.

    The process keeps the GPU's warm references and spares between evaluations, as a Ray slot does. Spawned, not
    forked: the executor's process has threads. One that dies under an evaluation (killed, out of memory) is the
    machinery's failure: InfrastructureError, and the next evaluation starts a new process. It leaves Ctrl-C to the
    executor's process, and ends once that process is gone (killed too), so no slot keeps its GPU's workers after a
    stop; they then end with it (judge/parent_death.py, worker/orphan_guard.py).
    """

    def __init__(self, device: str):
        self.device = device
        self._pool: ProcessPoolExecutor | None = None

    def evaluate(self, problem: Problem, source: str, options: EvalOptions | None) -> EvalResult:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=_slot_started
            )
        try:
            return self._pool.submit(_evaluate, problem, source, self.device, options).result()
        except BrokenProcessPool:
            self._pool = None
            raise InfrastructureError(f"the process evaluating on {self.device} died under an evaluation") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _slot_started() -> None:
    """In a slot process: SIGINT ignored, and a thread that ends the process once the executor's process is gone.

    A pool's idle worker waits on a queue whose writing end it holds itself, so without this it would wait forever.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    threading.Thread(target=_end_with, args=(parent.sentinel,), daemon=True, name="ks-slot-parent").start()


def _end_with(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _evaluate(problem: Problem, source: str, device: str, options: EvalOptions | None) -> EvalResult:
    """A slot process's evaluation (module-level, so the pool can name it)."""
    return evaluators.evaluate(problem, source, device, options)


def local_devices(device: str = "auto") -> list[str]:
    """One slot per GPU of this host ("cuda:N"), or one CPU slot; an explicit device is one slot."""
    if device not in ("auto", "cuda"):
        return [device]
    if visible_gpus():
        return [f"cuda:{gpu.index}" for gpu in visible_gpus()]
    if device == "cuda":
        raise ValueError("--device cuda asked for, but no CUDA GPU is visible")
    return ["cpu"]


def placement(device: str, gpu_id: str | None = None) -> tuple[str, str]:
    """(node, gpu) naming where an evaluation on `device` ran: this host, and the GPU's model and index or "cpu".

    `gpu_id` is the index the machine knows the GPU by, where `device` names it after a remapping (Ray's).
    """
    node = socket.gethostname()
    if device == "cpu":
        return node, "cpu"
    index = device_index(device) or 0
    return node, f"{visible_gpus()[index].name} #{gpu_id if gpu_id is not None else index}"


def cluster_spec(text: str) -> str:
    """A `--cluster` value checked: local, ray, auto or ray://HOST:PORT (ValueError otherwise)."""
    if not CLUSTER_SPEC.fullmatch(text):
        raise ValueError(f"unknown cluster {text!r}; expected local, ray, auto or ray://HOST:PORT")
    return text


def cluster_arg(text: str) -> str:
    """`cluster_spec` as an argparse type: every command's --cluster flag, with the same one-line error."""
    try:
        return cluster_spec(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
