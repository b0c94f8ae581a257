"""Worker-side wrapper of load_inline: cache-friendly names from the source hash, and nvcc-only checks on cpu."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

from evaluators.worker.on_import import when_imported


class BuildFailure(RuntimeError):
    """The candidate's C++/CUDA source did not compile; the message ends with the compiler log's tail."""


class UnsupportedOnDevice(RuntimeError):
    """The candidate cannot run on this device (CUDA C++ on cpu), though it may be fine elsewhere."""


def install(device: str, cache_dir: Path) -> None:
    """Replace torch.utils.cpp_extension.load_inline before the candidate can call it (as the module is imported)."""
    when_imported("torch.utils.cpp_extension", lambda module: _wrap(module, device, cache_dir))


def _wrap(cpp_extension, device: str, cache_dir: Path) -> None:
    original = cpp_extension.load_inline

    def load_inline(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        key = repr((cpp_sources, cuda_sources, args, sorted(kwargs.items(), key=lambda kv: kv[0])))
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        if device == "cpu" and cuda_sources:
            check_cuda_source(_joined(cuda_sources), cache_dir)
        # Named by content: two candidates never overwrite each other's build, and a re-run reuses it.
        return original(f"{name}_{digest}", cpp_sources, cuda_sources, *args, **kwargs)

    cpp_extension.load_inline = load_inline


def check_cuda_source(source: str, cache_dir: Path) -> None:
    """Compile-check CUDA C++ with nvcc (no GPU needed); always raises: a build failure or 'unsupported'."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise UnsupportedOnDevice("CUDA C++ needs a GPU to run and nvcc to compile-check; neither is here")
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    record = cache_dir / "nvcc-checks" / f"{digest}.json"
    if record.exists():
        verdict = json.loads(record.read_text())
    else:
        verdict = _run_nvcc(nvcc, source, record.parent / digest)
        record.write_text(json.dumps(verdict))
    if not verdict["ok"]:
        errors = [line for line in verdict["log"].splitlines() if "error" in line] or ["see the log"]
        raise BuildFailure(f"nvcc failed: {errors[0].strip()}\n{verdict['log'][-4000:]}")
    raise UnsupportedOnDevice("CUDA C++ compiles with nvcc (checked), but it cannot run on cpu")


def _run_nvcc(nvcc: str, source: str, workdir: Path) -> dict:
    import torch
    from torch.utils.cpp_extension import include_paths

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "kernel.cu").write_text(source)
    includes = [f"-I{p}" for p in [*include_paths(), sysconfig.get_paths()["include"]]]
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    command = [nvcc, "-std=c++17", "-c", "kernel.cu", "-o", "kernel.o", abi, *includes]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
    shutil.rmtree(workdir, ignore_errors=True)
    return {"ok": done.returncode == 0, "log": (done.stdout + done.stderr)[-8000:]}


def _joined(sources) -> str:
    return sources if isinstance(sources, str) else "\n".join(sources)
