"""The toolchain key (builds are cached per python, torch, triton, CUDA/HIP, nvcc, machine) and device names.

Nothing here imports torch: the parent learns what it needs from torch's version file and the GPU driver
(evaluators/worker/devices.py), so its workers start before it would have finished importing torch.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import platform
import re
import shutil
import subprocess

from evaluators.worker.devices import torch_build, visible_gpus


@functools.cache
def toolchain_key() -> str:
    """A short hash naming this machine's build toolchain; a cache directory per key never mixes builds."""
    build = torch_build()
    parts = [
        platform.python_version(),
        platform.machine(),
        build.version,
        str(build.cuda),
        str(build.hip),
        _package_version("triton"),
        _nvcc_version(),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def named_device(device: str) -> bool:
    """Whether `device` names one outright (cpu, cuda, cuda:N) rather than `auto`; only its form is checked.

    Raises ValueError, with a one-line message, for neither.
    """
    return _device_form(device) is not None


def _device_form(device: str) -> re.Match | None:
    """`device` parsed as cpu, cuda or cuda:N; None for `auto`; ValueError for anything else."""
    if device == "auto":
        return None
    match = re.fullmatch(r"(cpu|cuda)(?::(\d+))?", device)
    if not match or (match[1] == "cpu" and match[2] is not None):
        raise ValueError(f"unknown device {device!r}; expected auto, cpu, cuda or cuda:N")
    return match


def resolve_device(device: str) -> str:
    """`auto` -> cuda when a GPU is visible, else cpu; `cuda:N` is checked against the visible GPUs.

    Raises ValueError, with a one-line message, for anything unusable.
    """
    match = _device_form(device)
    if match is None:
        return "cuda" if visible_gpus() else "cpu"
    if match[1] == "cuda" and not visible_gpus():
        raise ValueError(f"--device {device} asked for, but no CUDA/ROCm GPU is visible")
    if match[2] is not None and int(match[2]) >= len(visible_gpus()):
        count = len(visible_gpus())
        raise ValueError(f"--device {device} asked for, but only {count} GPU(s) are visible (cuda:0..cuda:{count - 1})")
    return device


def device_kind(device: str) -> str:
    """`cpu` or `cuda`: what the workers see (a `cuda:N` worker sees its one GPU as `cuda`)."""
    return device.split(":")[0]


def device_index(device: str) -> int | None:
    """N of `cuda:N`; None for `cpu` and plain `cuda` (the default GPU)."""
    return int(device.split(":")[1]) if ":" in device else None


def same_gpu(a: str, b: str) -> bool:
    """Whether two device names are one device (`cuda` is `cuda:0`)."""
    return (f"{a}:0" if a == "cuda" else a) == (f"{b}:0" if b == "cuda" else b)


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _nvcc_version() -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return "none"
    done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "unknown"
