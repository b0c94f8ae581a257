"""What a problem's reference gives every candidate alike, kept on disk between processes: its shapes' sizes.

A first evaluation in a new process then plans device memory from them before anything is allocated, instead of
first running every shape once to measure them. Outputs are never cached: the reference recomputes them on the
inputs of every trial and timed repetition. Nor are timings: the reference is timed beside each candidate
(judge/timing_plan.py).

An entry is found only under the same key: the problem's text, its shapes, the GPU's name, the driver, torch,
Triton, Python, the code that draws inputs and every option that changes what is sized.

Candidates run as the same user and could write here. The reference measures the real sizes on its first trial all
the same, and a difference stops the evaluation as an environment failure and corrects the entry; malformed
entries read as absent; `--no-cache` ignores the cache (docs/CONTRACTS.md, "The trust boundary").
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import tempfile
from pathlib import Path

from evaluators.judge.options import EvalOptions
from evaluators.judge.toolchain import device_index, device_kind
from evaluators.worker.devices import driver_version, torch_build, visible_gpus
from kernels.problem_types import Problem, Shape

FORMAT = 2  # 1 also held timings
_CODE = Path(__file__).resolve().parents[1]
# The code sizes depend on: the worker, which measures them, and how problems draw inputs.
_SIZING_CODE = tuple(sorted((_CODE / "worker").glob("*.py")))
_SIZING_CODE += tuple(
    _CODE.parent / "kernels" / name
    for name in ("runtime.py", "seeding.py", "inputs.py", "gpumode.py", "gpumode_runtime.py")
)


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
            key = _key(problem, shapes, device)
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

    def store(self, sizes: list[dict]) -> None:
        """Write the shapes' sizes."""
        if self.path is None:
            return
        entry = {"format": FORMAT, "sizes": sizes}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".entry-")
        with os.fdopen(fd, "w") as handle:
            json.dump(entry, handle)
        os.replace(temporary, self.path)  # readers see the old entry or the new one, never half of one


def _is_sizes(value) -> bool:
    if not isinstance(value, dict) or set(value) != {"name", "input_bytes", "output_bytes"}:
        return False
    counts = (value["input_bytes"], value["output_bytes"])
    return isinstance(value["name"], str) and all(type(n) is int and n >= 0 for n in counts)


def _key(problem: Problem, shapes: list[Shape], device: str) -> str:
    build = torch_build()
    facts = [
        FORMAT,
        problem.digest,
        [shape.to_json() for shape in shapes],
        device_name(device),
        driver_version() if device_kind(device) == "cuda" else "",
        [build.version, build.cuda, build.hip, _version("triton"), platform.python_version()],
        _code_digest(),
    ]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]


def _code_digest() -> str:
    digest = hashlib.sha256()
    for path in _SIZING_CODE:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"
