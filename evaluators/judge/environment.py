"""The worker's environment: an allow-list with secrets removed, build caches, and the one GPU it may see."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from evaluators.judge.toolchain import device_index

if TYPE_CHECKING:
    from evaluators.judge.options import EvalOptions
    from evaluators.judge.process_options import ProcessOptions

REPO_ROOT = Path(__file__).resolve().parents[2]
PASSED_ENV = {
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "LD_LIBRARY_PATH", "CC", "CXX", "OMP_NUM_THREADS",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "TORCH_CUDA_ARCH_LIST",
    "ROCM_PATH", "HIP_PATH", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "PYTORCH_ROCM_ARCH",
    # Multi-GPU hosts that forbid NVLink multicast keep these set for every program, ours included.
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "KS_SIMULATED_DEVICE",  # tests' stand-in for a GPU's memory (worker/device_memory.py)
}  # fmt: skip
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)


def worker_env(
    device: str, scratch: Path, options: ProcessOptions | EvalOptions, toolchain: str, role: str
) -> dict[str, str]:
    """An environment from an allow-list, with anything named like a secret removed even if allowed.

    The reference's worker builds into caches of its own, which a candidate's processes see read-only
    (judge/readonly_code.py): a kernel it compiles is never one a candidate left under the same key.

    For `cuda:N` the worker sees GPU N alone, as its `cuda`.
    """
    # PYTHONDONTWRITEBYTECODE is not passed on: where torch was installed without its .pyc files (images built
    # with it set), every worker compiled torch's sources again as it started.
    env = {k: v for k, v in os.environ.items() if k in PASSED_ENV and not SECRET_NAME.search(k)}
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    build_dir = build_root(options.cache_dir, role) / toolchain
    env |= {
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "PYTHONUNBUFFERED": "1",
        "HF_HUB_OFFLINE": "1",
        "TRITON_CACHE_DIR": str(build_dir / "triton"),
        "TORCH_EXTENSIONS_DIR": str(build_dir / "torch_extensions"),
        "TORCHINDUCTOR_CACHE_DIR": str(build_dir / "inductor"),  # the torch.compile baseline's kernels, per node
        "KS_CACHE_DIR": str(options.cache_dir),
    }
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # for the child only: the parent may be timing on a GPU
        env["OMP_NUM_THREADS"] = "1"
    index = device_index(device)
    if index is not None:
        env |= visible_device_env(index)
    return env


def build_root(cache_dir: Path, role: str) -> Path:
    """Where a role's workers keep what they compile (Triton, torch extensions, inductor): the reference's apart."""
    return cache_dir / ("reference-builds" if role == "reference" else "builds")


def visible_device_env(index: int) -> dict[str, str]:
    """The variable that leaves the parent's GPU `index` as the child's only GPU.

    The parent's own list (UUIDs, MIG ids or numbers) is honoured: its entry `index` is what the parent calls cuda:N.
    """
    name = "HIP_VISIBLE_DEVICES" if os.environ.get("HIP_VISIBLE_DEVICES") else "CUDA_VISIBLE_DEVICES"
    listed = [entry.strip() for entry in os.environ.get(name, "").split(",") if entry.strip()]
    return {name: listed[index] if index < len(listed) else str(index)}
