"""Helpers for graph runs on cassettes: the CLI in-process, evaluation and model spies, fault injection."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatResult

import evaluators
from agents.models import ModelSettings
from graph import run

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "tests" / "cassettes" / "graph"
CPU = ["--device", "cpu", "--retrieval", "lexical"]
# One iteration of the short cassette, one experiment, on the CPU.
SHORT = [
    "--model",
    f"replay:{CASSETTES / 'short.json'}",
    "--avenues",
    "3",
    "--plans",
    "3",
    "--experiments-per-iteration",
    "1",
    *CPU,
]


class ServiceError(Exception):
    """An SDK-like error carrying an HTTP status, as the retry loop classifies them."""

    def __init__(self, status_code: int, message: str):
        super().__init__(message)
        self.status_code = status_code


class FailingFirst(BaseChatModel):
    """Raises `error` on its first `failures` calls, then answers from the wrapped model (same call ids)."""

    inner: BaseChatModel
    error: Exception
    failures: int = 1
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "failing-first"

    @property
    def model(self) -> str:
        """The wrapped model's name, for accounting."""
        return getattr(self.inner, "model", "")

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return self.inner._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def fail_role_once(monkeypatch, role: str, error: Exception, failures: int = 1) -> None:
    """Make the first call(s) of `role` fail with `error` (the model is created per call, so count here)."""
    make = ModelSettings.make
    left = {"failures": failures}

    def patched(self, asked_role):
        model = make(self, asked_role)
        if asked_role != role or left["failures"] <= 0:
            return model
        left["failures"] -= 1
        return FailingFirst(inner=model, error=error, failures=1)

    monkeypatch.setattr(ModelSettings, "make", patched)


class EvaluationSpy:
    """Wraps evaluators.evaluate: remembers each finished evaluation and can crash the run at call N.

    A crash in one thread leaves the other experiments' threads running to their end (threads cannot be
    killed); what they finish after the crash would never have finished in a dead process, so `before_crash`
    counts only evaluations done before it, and `wait_idle` lets those threads drain before a resume.
    """

    def __init__(self, crash_at: int | None = None):
        self.real = evaluators.evaluate
        self.crash_at = crash_at
        self.started = 0
        self.in_flight = 0
        self.crashed_at: float | None = None
        self.finished: list[tuple[str, str, float]] = []  # (source, status, when)
        self.lock = threading.Lock()

    def __call__(self, problem, source, device="auto", options=None):
        with self.lock:
            self.started += 1
            if self.crash_at is not None and self.started == self.crash_at:
                self.crashed_at = time.monotonic()
                raise SimulatedCrash(f"injected crash at evaluation {self.started}")
            self.in_flight += 1
        try:
            result = self.real(problem, source, device, options)
        finally:
            with self.lock:
                self.in_flight -= 1
        self.finished.append((source, result.status, time.monotonic()))
        return result

    @property
    def sources(self) -> list[str]:
        """Every source evaluated to the end, in order."""
        return [source for source, _, _ in self.finished]

    @property
    def before_crash(self) -> set[str]:
        """Sources whose evaluation had finished when the crash happened."""
        return {source for source, _, when in self.finished if self.crashed_at is None or when < self.crashed_at}

    def wait_idle(self, timeout_s: float = 300) -> None:
        """Block until no evaluation is running (the crashed run's other threads have ended)."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline:
            time.sleep(0.2)


class SimulatedCrash(Exception):
    """Stands in for a machine dying mid-run: nothing after it runs until the run is resumed."""


def cli(*args: str) -> int:
    """`python -m graph.run ARGS` in this process (so spies and fault injection reach the nodes)."""
    return run.main(list(args))


def read_summary(run_dir: Path) -> dict:
    """The run's summary.json."""
    return json.loads((run_dir / "summary.json").read_text())


@pytest.fixture
def evaluation_spy(monkeypatch):
    """A spy on every evaluation the graph runs."""
    spy = EvaluationSpy()
    monkeypatch.setattr(evaluators, "evaluate", spy)
    return spy
