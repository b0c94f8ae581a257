"""The toolchain key: builds are cached per (python, torch, triton, CUDA/HIP, nvcc, machine) combination."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import platform
import shutil
import subprocess

import torch


@functools.cache
def toolchain_key() -> str:
    """A short hash naming this machine's build toolchain; a cache directory per key never mixes builds."""
    parts = [
        platform.python_version(),
        platform.machine(),
        torch.__version__,
        str(torch.version.cuda),
        str(torch.version.hip),
        _package_version("triton"),
        _nvcc_version(),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def resolve_device(device: str) -> str:
    """`auto` -> cuda when a GPU is visible, else cpu; raises ValueError for anything unusable."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; expected auto, cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda asked for, but no CUDA/ROCm GPU is visible")
    return device


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
