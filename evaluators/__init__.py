"""Turn (problem, candidate source, device) into a measured, trustworthy EvalResult."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluators.judge.evaluate import evaluate
    from evaluators.judge.options import EvalOptions
    from evaluators.judge.result import EvalResult, Roofline

__all__ = ["EvalOptions", "EvalResult", "Roofline", "evaluate"]

# Loaded on first use (PEP 562), so a CLI's `--help` answers before torch loads.
_HOMES = {
    "evaluate": "evaluators.judge.evaluate",
    "EvalOptions": "evaluators.judge.options",
    "EvalResult": "evaluators.judge.result",
    "Roofline": "evaluators.judge.result",
}


def __getattr__(name: str):
    """The public names, imported on first use; once set here, a test may replace them (monkeypatch)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'evaluators' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
