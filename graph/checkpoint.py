"""Per-run persistence: a SQLite checkpointer under the run directory, thread id = run id."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from agents.accounting import LLMCall
from graph.state import ExperimentOutcome, ExperimentTask

CHECKPOINT_FILE = "checkpoints.sqlite"
# The only classes the state carries; naming them keeps checkpoint loading strict (no arbitrary imports).
STATE_TYPES = (ExperimentTask, ExperimentOutcome, LLMCall)


@contextmanager
def open_checkpointer(run_dir: Path) -> Iterator[SqliteSaver]:
    """The run's checkpointer, shared by the parallel experiments' threads."""
    run_dir.mkdir(parents=True, exist_ok=True)
    serde = JsonPlusSerializer(allowed_msgpack_modules=[(t.__module__, t.__name__) for t in STATE_TYPES])
    with closing(sqlite3.connect(run_dir / CHECKPOINT_FILE, check_same_thread=False)) as conn:
        yield SqliteSaver(conn, serde=serde)
