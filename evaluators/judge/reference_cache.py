"""What a problem's reference gives every candidate alike, kept on disk between processes: sizes and baseline timings.

A first evaluation in a new process no longer sizes the reference's shapes (a real call where a meta kernel is
missing) or times the reference (a warm-up, a rehearsal, the timed repetitions and a probe per benchmark shape).
Outputs are never cached: the reference recomputes them on the inputs of every trial and timed repetition.

An entry is found only under the same key: the problem's text, its shapes, the GPU's name, the driver, torch,
Triton, Python, the evaluator's own timing code and every option that changes what is timed. It also expires:
- it was measured under a memory plan with as many input sets alive; a plan that differs now measures afresh;
- before a cached timing is used, the reference's per-call time is measured again on the parent's clock (two
  warm-up commands, tens of milliseconds). When it has moved by more than AGREEMENT, the device or the entry
  changed, and the shape is timed afresh and written back.

Candidates run as the same user and could write here. The live check bounds what a forged entry can move, a
strict evaluation never reads the cache, and `--no-cache` ignores it (docs/CONTRACTS.md, "The trust boundary").
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import tempfile
from dataclasses import asdict
from pathlib import Path

from evaluators.judge.options import EvalOptions
from evaluators.judge.timing_plan import ShapeTiming
from evaluators.judge.toolchain import device_index, device_kind
from evaluators.judge.wall import Span
from evaluators.worker.devices import driver_version, torch_build, visible_gpus
from kernels.problem import Problem, Shape

FORMAT = 1
# How far the reference's live per-call time may sit from the cached one before the entry is measured again.
AGREEMENT = 0.2
# The options that change what the reference's timing measures (the tolerances change only comparisons).
TIMED_OPTIONS = {
    "seed", "trials", "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps", "retained",
    "compile_baseline",
}  # fmt: skip
_CODE = Path(__file__).resolve().parents[1]
# The code a timing depends on: the worker's harness, the parent's timing plan, and how problems draw inputs.
_TIMING_CODE = (*sorted((_CODE / "worker").glob("*.py")), _CODE / "judge" / "timing_plan.py")
_TIMING_CODE += tuple(_CODE.parent / "kernels" / name for name in ("runtime.py", "inputs.py", "gpumode.py"))


def device_name(device: str) -> str:
    """The GPU's model as the driver names it, or "cpu"."""
    if device_kind(device) == "cpu":
        return "cpu"
    return visible_gpus()[device_index(device) or 0].name


class ReferenceCache:
    """One problem's entry, under its key; every method is a no-op when the cache is off."""

    def __init__(self, problem: Problem, shapes: list[Shape], device: str, options: EvalOptions):
        self.path = None
        if options.reference_cache:
            key = _key(problem, shapes, device, options)
            self.path = Path(options.cache_dir) / "reference" / f"{problem.name}-{key}.json"

    def _load(self) -> dict:
        if self.path is None:
            return {}
        try:
            entry = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}  # absent or unreadable: measured afresh and written again
        return entry if isinstance(entry, dict) and entry.get("format") == FORMAT else {}

    def sizes(self) -> list[dict] | None:
        """The shapes' input and output bytes, when cached."""
        sizes = self._load().get("sizes")
        return sizes if isinstance(sizes, list) else None

    def timing(self, shape: int, plan: dict) -> ShapeTiming | None:
        """The reference's timing at `shape`, if one was measured under this memory plan."""
        found = self._load().get("timings", {}).get(str(shape))
        if not isinstance(found, dict) or found.get("plan") != _plan_facts(plan):
            return None
        try:
            timing = dict(found["timing"])
            timing["span"] = Span(**timing["span"])
            timing = ShapeTiming(**timing)
        except (KeyError, TypeError, ValueError):
            return None
        times = timing.facts.get("times_ms") if isinstance(timing.facts, dict) else None
        if not (isinstance(times, list) and len(times) == timing.reps and timing.per_call_s > 0):
            return None
        return timing

    def store(self, sizes: list[dict] | None = None, shape: int | None = None, **timing) -> None:
        """Write the sizes, or one shape's timing (`timing` under the memory plan `plan`), into the entry."""
        if self.path is None:
            return
        entry = self._load() or {"format": FORMAT}
        if sizes is not None:
            entry["sizes"] = sizes
        if shape is not None:
            measured = asdict(timing["timing"])
            # The reference's own sketches are never read again: every check recomputes them.
            measured["facts"] = {k: v for k, v in measured["facts"].items() if k != "sketches"}
            entry.setdefault("timings", {})[str(shape)] = {"timing": measured, "plan": _plan_facts(timing["plan"])}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".entry-")
        with os.fdopen(fd, "w") as handle:
            json.dump(entry, handle)
        os.replace(temporary, self.path)  # readers see the old entry or the new one, never half of one


def agrees(cached_s: float, live_s: float) -> bool:
    """Whether the live per-call time confirms the cached one."""
    return cached_s > 0 and abs(live_s / cached_s - 1) <= AGREEMENT


def _plan_facts(plan: dict) -> dict:
    """The parts of the memory plan a timing depends on: input sets alive, held outputs and where they are kept."""
    return {k: plan.get(k) for k in ("timing_sets", "retained", "retained_on_device")}


def _key(problem: Problem, shapes: list[Shape], device: str, options: EvalOptions) -> str:
    build = torch_build()
    facts = [
        FORMAT,
        problem.digest,
        [shape.to_json() for shape in shapes],
        device_name(device),
        driver_version() if device_kind(device) == "cuda" else "",
        [build.version, build.cuda, build.hip, _version("triton"), platform.python_version()],
        options.model_dump(include=TIMED_OPTIONS, mode="json"),
        _code_digest(),
    ]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]


def _code_digest() -> str:
    digest = hashlib.sha256()
    for path in _TIMING_CODE:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"
