"""Checks of a run's arguments that need no work: model providers and cassettes, each found wrong in one line."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from graph.context import RunContext

# Call ids start with the iteration they belong to (graph docstring): "i3.selector", "i2.s0.implementer.a0".
ITERATION_OF_CALL = re.compile(r"i(\d+)\.")


def model_problem(spec: str) -> str | None:
    """What is wrong with a model spec (unknown or uninstalled provider, unreadable cassette), or None."""
    from agents.models import PROVIDERS

    provider, sep, rest = spec.partition(":")
    if not sep or not rest:
        return f"bad model {spec!r}: write provider:model or replay:CASSETTE"
    if provider == "replay":
        return _cassette_problem(Path(rest))
    if provider not in PROVIDERS:
        known = ", ".join(sorted(PROVIDERS))
        return f"unknown model provider {provider!r} in {spec!r}; use one of {known}, or replay:PATH"
    needed = PROVIDERS[provider]
    if importlib.util.find_spec(needed.module) is None:
        return f"model {spec!r} needs the package {needed.package}: pip install {needed.package}"
    return None


def cassette_shortfall(ctx: RunContext) -> str | None:
    """Why the run's cassettes cannot last its iterations (or cannot be read), or None.

    A token, dollar or minute budget may end the run sooner, so a shorter cassette is refused only when the
    iteration count is the run's one budget.
    """
    specs = {ctx.model, *ctx.role_models.values()}
    for spec in sorted(spec for spec in specs if spec.startswith("replay:")):
        path = Path(spec.removeprefix("replay:"))
        problem = _cassette_problem(path)
        if problem:
            return problem
        held = iterations_held(path)
        budgeted = any(v is not None for v in (ctx.max_tokens, ctx.max_dollars, ctx.max_minutes))
        if held < ctx.iterations and not budgeted:
            return (
                f"the cassette {path.name} holds {held} iteration(s), fewer than the {ctx.iterations} asked for: "
                f"pass --iterations {held} or less, or record a longer cassette"
            )
    return None


def iterations_held(path: Path) -> int:
    """The last iteration a cassette has answers for."""
    calls = json.loads(path.read_text())["calls"]
    found = [int(m.group(1)) for call in calls if (m := ITERATION_OF_CALL.match(call.get("call_id", "")))]
    return max(found, default=0)


def _cassette_problem(path: Path) -> str | None:
    if not path.is_file():
        return f"cassette not found: {path}"
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"cassette {path} cannot be read: {error}"
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        return f"cassette {path} has no 'calls' list"
    return None
