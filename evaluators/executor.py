"""Where evaluations run: the Executor interface the graph's slots and the batches submit to, and its local kind.

The local executor runs one evaluation per GPU at a time on this host (CPU: as many as asked), each through
`evaluate()`; a cluster executor (Ray) implements the same interface.
"""

from __future__ import annotations

import queue
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from evaluators.evaluate import evaluate
from evaluators.options import EvalOptions
from evaluators.result import EvalResult
from kernels.problem import Problem


class Executor(Protocol):
    """Runs evaluations somewhere; results come back as EvalResult, whatever the candidate did."""

    def submit(self, problem: Problem, source: str, options: EvalOptions | None = None) -> Future[EvalResult]:
        """Queue one evaluation of `source` against `problem`."""
        ...

    def describe(self) -> str:
        """Where evaluations run, for reports: "local: 2 x cuda", "ray: 3 nodes, 16 GPUs"."""
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
        self._free: queue.Queue[str] = queue.Queue()
        for device in self.devices:
            self._free.put(device)
        self._pool = ThreadPoolExecutor(max_workers=len(self.devices), thread_name_prefix="ks-eval")

    def submit(self, problem: Problem, source: str, options: EvalOptions | None = None) -> Future[EvalResult]:
        """Queue one evaluation; it runs on the next free device."""
        return self._pool.submit(self._run, problem, source, options)

    def _run(self, problem: Problem, source: str, options: EvalOptions | None) -> EvalResult:
        device = self._free.get()
        try:
            return evaluate(problem, source, device, options)
        finally:
            self._free.put(device)

    def describe(self) -> str:
        """The devices, e.g. "local: cuda:0, cuda:1"."""
        return f"local: {', '.join(self.devices)}"

    def close(self) -> None:
        """Wait for running evaluations; drop queued ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def local_devices(device: str = "auto") -> list[str]:
    """One slot per GPU of this host ("cuda:N"), or one CPU slot; an explicit device is one slot."""
    if device not in ("auto", "cuda"):
        return [device]
    import torch

    if torch.cuda.is_available():
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if device == "cuda":
        raise ValueError("--device cuda asked for, but no CUDA GPU is visible")
    return ["cpu"]
