"""Python source parsed into an AST, one parse at a time in a process.

CPython 3.11 keeps the AST constructor's recursion depth in state its threads share: two `ast.parse` calls at once
raised "SystemError: AST constructor recursion depth mismatch" in the graph's concurrent evaluate nodes
(tests/graph/test_edges_run.py, under the full suite's load). Every parse of ours goes through here, under one lock.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, serialized across the process's threads."""
    with _LOCK:
        return ast.parse(source, filename=filename)
