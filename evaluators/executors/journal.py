"""A batch's journal: one JSON line per judged evaluation, appended the moment it completes.

A driver killed mid-batch and run again reads the journal and submits only the keys missing from it, so no
evaluation is lost and none is counted twice. Only the driver writes it; evaluations the machinery lost
(InfrastructureError) or could not judge (EnvironmentFailure) and problems that could not be judged are not
recorded, so the next run tries them again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path

from evaluators.executors.local import Executor, InfrastructureError
from evaluators.judge.options import EvalOptions
from evaluators.judge.reference_pool import EnvironmentFailure
from evaluators.judge.result import EvalResult
from kernels.problem_types import Problem, ProblemError


class JournalError(ValueError):
    """A journal that cannot be read; the message is one line."""


@dataclass(frozen=True)
class EvalJob:
    """One evaluation of a batch: a candidate source against a problem."""

    problem: Problem
    source: str
    options: EvalOptions | None = None


class Journal:
    """The judged evaluations of a batch, by key, persisted as JSON lines at `path`."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.results: dict[str, EvalResult] = self._read()

    def __contains__(self, key: str) -> bool:
        return key in self.results

    def __len__(self) -> int:
        return len(self.results)

    def _read(self) -> dict[str, EvalResult]:
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):  # a line torn by a kill mid-write: its evaluation was not recorded; drop it
            with open(self.path, "r+b") as handle:
                handle.truncate(complete)
        results: dict[str, EvalResult] = {}
        for number, line in enumerate(data[:complete].splitlines(), start=1):
            try:
                entry = json.loads(line)
                results.setdefault(entry["key"], EvalResult.model_validate(entry["result"]))
            except (ValueError, KeyError, TypeError):
                raise JournalError(f"journal {self.path} line {number} is not a judged evaluation") from None
        return results

    def record(self, key: str, result: EvalResult) -> None:
        """Append one judged evaluation, flushed to disk before returning."""
        line = json.dumps({"key": key, "result": result.model_dump(mode="json")}) + "\n"
        with open(self.path, "a") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        self.results[key] = result


def judge(
    executor: Executor, jobs: Mapping[str, EvalJob], journal: Journal
) -> Iterator[tuple[str, EvalResult | Exception]]:
    """Submit every job the journal lacks; journal and yield each result as it completes.

    An evaluation that could not be judged (InfrastructureError, EnvironmentFailure, or a ProblemError from a
    broken reference) is yielded as its exception and not journaled.
    """
    futures = {
        executor.submit(job.problem, job.source, job.options): key for key, job in jobs.items() if key not in journal
    }
    for future in as_completed(futures):
        key = futures[future]
        try:
            result = future.result()
        except (InfrastructureError, EnvironmentFailure, ProblemError) as error:
            yield key, error
            continue
        journal.record(key, result)
        yield key, result
