"""What a problem is: `Problem`, its `Shape`s and `ProblemError`, as the loaders build them and callers read them.

Plain data that imports nothing of ours: the loaders (`kernels.problem`, `kernels.gpumode`) and the worker-side
runtimes (`kernels.runtime`, `kernels.gpumode_runtime`) all depend on it, so it sits below them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SEEDS_DIR = Path(__file__).parent / "seeds"
# What a problem's `get_inputs(dist=...)` may be asked for; correctness trials cycle through them.
DISTRIBUTIONS = ("normal", "uniform", "heavy")


class ProblemError(ValueError):
    """A problem that cannot be used; the message is one line naming what is wrong."""


@dataclass(frozen=True)
class Shape:
    """One input configuration: `params` are module globals (KernelBench) or generate_input kwargs (GPU MODE)."""

    name: str
    kind: Literal["benchmark", "test"]
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The shape as a job file carries it."""
        return {"name": self.name, "kind": self.kind, "params": self.params}

    @classmethod
    def from_json(cls, data: dict) -> Shape:
        """The inverse of `to_json`."""
        return cls(data["name"], data["kind"], dict(data["params"]))


def shape_name(params: dict) -> str:
    """A readable name from a shape's values: "M=16384 N=4096" (a GPU MODE seed is not part of it)."""
    return " ".join(f"{key}={value}" for key, value in params.items() if key != "seed") or "default"


@dataclass(frozen=True)
class Problem:
    """A kernel problem: its source text and what the loader learned from it.

    `format` is "kernelbench" (Model / get_inputs) or "gpumode" (generate_input / ref_kernel, candidates define
    custom_kernel); `shape_sets` maps "gpu" and "cpu" to that device's shapes, benchmark shapes first.
    """

    name: str
    path: Path
    source: str
    doc: str = ""
    shape_sets: dict[str, tuple[Shape, ...]] = field(default_factory=dict)
    format: Literal["kernelbench", "gpumode"] = "kernelbench"
    tolerance: tuple[float | None, float | None] = (None, None)
    tolerance_note: str = ""

    @property
    def configs(self) -> dict[str, dict]:
        """Each device's first benchmark shape, as module globals (what single-shape callers read)."""
        return {name: shapes[0].params for name, shapes in self.shape_sets.items() if shapes}

    @property
    def seed_path(self) -> Path | None:
        """The bundled seed candidate (`kernels/seeds/<name>.py`), if there is one."""
        path = SEEDS_DIR / f"{self.name}.py"
        return path if path.exists() else None

    @property
    def digest(self) -> str:
        """A short hash of the problem's source, to key caches and archives."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def reference_as_candidate(self) -> str:
        """The reference as a valid candidate with no kernel of its own: measured, it gives the reference's runtime."""
        alias = "custom_kernel = ref_kernel" if self.format == "gpumode" else "ModelNew = Model"
        return f"{self.source.rstrip()}\n\n\n{alias}\n"

    def config_name(self, device: str) -> str | None:
        """The shape set used on `device` ("cuda" -> "gpu", "cpu" -> "cpu"), if the problem has one."""
        wanted = "cpu" if device == "cpu" else "gpu"
        return wanted if wanted in self.shape_sets else None

    def shapes(self, device: str) -> tuple[Shape, ...]:
        """The shapes evaluated on `device`: its shape set, else the file's own globals as one benchmark shape."""
        config = self.config_name(device)
        return self.shape_sets[config] if config else (Shape("default", "benchmark", {}),)

    def benchmark_shapes(self, device: str) -> tuple[Shape, ...]:
        """The shapes that are timed on `device`."""
        return tuple(shape for shape in self.shapes(device) if shape.kind == "benchmark")
