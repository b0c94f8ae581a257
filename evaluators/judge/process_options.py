"""What a worker's process is started with: its cache directory, PID namespace, output cap and stage limits.

Free of pydantic, so the CLI starts its two workers as soon as its flags are read, before it imports pydantic and
builds EvalOptions: their exec came 0.29 s sooner on a 2-core VM (bench/probes/spawn_point.py). EvalOptions takes these
fields' defaults from here; a worker started with either matches the other (process_key).
"""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path


def default_cache_dir() -> Path:
    """Where builds (Triton, torch extensions), nvcc checks and timing locks persist: KS_CACHE_DIR or XDG."""
    if os.environ.get("KS_CACHE_DIR"):
        return Path(os.environ["KS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kernel-scientist"


def pid_namespace_from_env() -> bool | None:
    """KS_PID_NAMESPACE: 1 or 0 forces workers into a PID namespace of their own or not; unset, where allowed."""
    return {"0": False, "1": True}.get(os.environ.get("KS_PID_NAMESPACE", ""))


@dataclass(frozen=True)
class ProcessOptions:
    """The options that shape a worker's process, its environment and its stage limits."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    pid_namespace: bool | None = field(default_factory=pid_namespace_from_env)
    output_cap_kb: int = 64
    timeout_s: float = 120.0
    build_timeout_s: float = 600.0
    lock_timeout_s: float = 1800.0
    max_result_mb: int = 4096


PROCESS_OPTIONS = tuple(f.name for f in fields(ProcessOptions))
DEFAULTS = {f.name: f.default for f in fields(ProcessOptions) if f.default is not MISSING}


def process_key(options) -> str:
    """What a started worker must have been started with: the process fields of a ProcessOptions or EvalOptions."""
    return repr(tuple(getattr(options, name) for name in PROCESS_OPTIONS))
