"""What torch was built for and which GPUs this process sees, found without importing torch.

The parent of the workers (the CLIs, the graph, a suite) never runs a tensor, and importing torch cost it 4-5 s on
an H100 host before any worker could start. The CUDA driver answers the same questions in milliseconds: cuInit
honours CUDA_VISIBLE_DEVICES as torch does, and creates no context. A ROCm build of torch is asked through torch.
"""

from __future__ import annotations

import ast
import ctypes
import functools
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from kernels import python_source


@dataclass(frozen=True)
class TorchBuild:
    """The installed torch: its version and the CUDA or HIP version it was built against (None if not)."""

    version: str
    cuda: str | None
    hip: str | None


@dataclass(frozen=True)
class Gpu:
    """One visible GPU: its index as torch numbers it here, its name, and an id stable across renumberings."""

    index: int
    name: str
    uuid: str


@functools.cache
def torch_build() -> TorchBuild:
    """The installed torch's version facts, read from its `version.py` (literal assignments), not by importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise RuntimeError("torch is not installed")
    facts = {}
    for node in python_source.parse((Path(spec.origin).parent / "version.py").read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and isinstance(getattr(node, "value", None), ast.Constant):
            facts[target.id] = node.value.value
    version = facts.get("__version__") or importlib.metadata.version("torch")
    return TorchBuild(version, facts.get("cuda"), facts.get("hip"))


@functools.cache
def visible_gpus() -> tuple[Gpu, ...]:
    """The GPUs torch would see in this process, in torch's order; () on a CPU-only build or without a driver."""
    build = torch_build()
    if build.hip:
        return _gpus_through_torch()
    if not build.cuda:
        return ()
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return ()
    if driver.cuInit(0) != 0:
        return ()
    count = ctypes.c_int()
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return ()
    get_uuid = getattr(driver, "cuDeviceGetUuid_v2", None) or driver.cuDeviceGetUuid
    gpus = []
    for index in range(count.value):
        handle, name, uuid = ctypes.c_int(), ctypes.create_string_buffer(256), ctypes.create_string_buffer(16)
        if driver.cuDeviceGet(ctypes.byref(handle), index) != 0:
            return tuple(gpus)
        if driver.cuDeviceGetName(name, 256, handle) != 0 or get_uuid(uuid, handle) != 0:
            return tuple(gpus)
        gpus.append(Gpu(index, name.value.decode(errors="replace"), _uuid_text(uuid.raw)))
    return tuple(gpus)


def _uuid_text(raw: bytes) -> str:
    hexed = raw.hex()
    return "-".join((hexed[:8], hexed[8:12], hexed[12:16], hexed[16:20], hexed[20:]))


def _gpus_through_torch() -> tuple[Gpu, ...]:
    import torch  # ROCm: the HIP runtime's own count and names

    if not torch.cuda.is_available():
        return ()
    return tuple(
        Gpu(i, torch.cuda.get_device_name(i), str(torch.cuda.get_device_properties(i).uuid))
        for i in range(torch.cuda.device_count())
    )


def driver_version() -> str:
    """The GPU driver's version (NVIDIA's or AMD's kernel module), or "none": a cached timing holds under it alone."""
    for path in ("/proc/driver/nvidia/version", "/sys/module/amdgpu/version"):
        try:
            words = Path(path).read_text().split()
        except OSError:
            continue
        return next((w for w in words if w[:1].isdigit() and "." in w), "unknown")
    return "none"
