"""What a problem's reference gives every candidate alike, kept on disk between processes: sizes and baseline timings.

A first evaluation in a new process no longer sizes the reference's shapes, and times the reference with a short
run instead of a full one. Outputs are never cached: the reference recomputes them on the inputs of every trial
and timed repetition.

An entry is found only under the same key: the problem's text, its shapes, the GPU's name, the driver, torch,
Triton, Python, the evaluator's own timing code and every option that changes what is timed. It also expires:
- repetitions measured under a memory plan with another number of input sets alive are not used;
- the reference is always timed live, by the candidate's routine, with at most CHECK_REPS repetitions: that run
  gives the parent's clock its calibration and the side-stream probe. The cached repetitions stand in for the
  full run only when their median agrees with the short run's within AGREEMENT; otherwise the shape is timed in
  full and the entry rewritten.

Candidates run as the same user and could write here. What they write is checked against that live run, so a
forged entry moves a baseline by at most AGREEMENT; malformed entries read as absent; a strict evaluation never
reads the cache, and `--no-cache` ignores it (docs/CONTRACTS.md, "The trust boundary").
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
import platform
import statistics
import tempfile
from pathlib import Path

from evaluators.judge.options import EvalOptions
from evaluators.judge.toolchain import device_index, device_kind
from evaluators.worker.devices import driver_version, torch_build, visible_gpus
from kernels.problem import Problem, Shape

FORMAT = 1
# How far the short live run's median may sit from the cached median before the shape is timed in full again.
AGREEMENT = 0.2
CHECK_REPS = 10
# The options that change what the reference's timing measures (the tolerances change only comparisons).
TIMED_OPTIONS = {
    "seed", "trials", "flush_mb", "warmup_ms", "rep_ms", "min_reps", "max_reps", "cpu_reps", "retained",
    "compile_baseline", "pin_timing",
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
        """The shapes' input and output bytes, when cached and well formed."""
        sizes = self._load().get("sizes")
        if not isinstance(sizes, list) or not all(_is_sizes(s) for s in sizes):
            return None
        return sizes

    def baseline(self, shape: int, plan: dict) -> list[float] | None:
        """The reference's timed repetitions at `shape` (ms), if they were measured under this memory plan."""
        timings = self._load().get("timings")
        found = timings.get(str(shape)) if isinstance(timings, dict) else None
        if not isinstance(found, dict) or found.get("plan") != _plan_facts(plan):
            return None
        times = found.get("times_ms")
        return times if isinstance(times, list) and times and all(_is_time(t) for t in times) else None

    def store(self, sizes: list[dict] | None = None, shape: int | None = None, **timing) -> None:
        """Write the sizes, or one shape's timed repetitions (`times_ms` under the memory plan `plan`)."""
        if self.path is None:
            return
        entry = self._load() or {"format": FORMAT}
        if sizes is not None:
            entry["sizes"] = sizes
        if shape is not None:
            if not isinstance(entry.get("timings"), dict):
                entry["timings"] = {}
            entry["timings"][str(shape)] = {"times_ms": timing["times_ms"], "plan": _plan_facts(timing["plan"])}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".entry-")
        with os.fdopen(fd, "w") as handle:
            json.dump(entry, handle)
        os.replace(temporary, self.path)  # readers see the old entry or the new one, never half of one


def agrees(cached_ms: list[float], live_ms: list[float]) -> bool:
    """Whether a short live timing's median confirms the cached repetitions' median."""
    cached, live = statistics.median(cached_ms), statistics.median(live_ms)
    return cached > 0 and abs(live / cached - 1) <= AGREEMENT


def _is_time(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and value >= 0


def _is_sizes(value) -> bool:
    if not isinstance(value, dict) or set(value) != {"name", "input_bytes", "output_bytes"}:
        return False
    counts = (value["input_bytes"], value["output_bytes"])
    return isinstance(value["name"], str) and all(type(n) is int and n >= 0 for n in counts)


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
