"""The candidate's outputs, handed to the reference worker in sealed memory files for comparison on its device.

Each handed-over item is a memory file (memfd) the candidate's harness writes and then seals against any write,
shrink or growth, kept open until the parent's next command. It has no name in any directory: the reference opens
it through the candidate's descriptor (/proc/PID/fd/N, with the PID from the parent), which a candidate in its own
PID namespace cannot name for another evaluation, and the seal keeps anyone, the candidate included, from changing
it once handed over. Files side by side in a shared directory let one candidate overwrite another evaluation's
outputs before its reference read them. A 256 MiB output still costs a memory copy, not a pipe and a parent-side
decode. What the file holds is the candidate's claim: the reader takes only a sealed regular memory file, never
reads past the size it saw, loads with weights_only=True, and turns anything unreadable into a HandoffError.
"""

from __future__ import annotations

import fcntl
import io
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import torch

# Bound at import: a candidate's patches never see the outputs the harness writes, nor how they are sealed.
_SAVE, _MEMFD, _FCNTL, _FDOPEN = torch.save, os.memfd_create, fcntl.fcntl, os.fdopen
SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


class HandoffError(Exception):
    """The candidate's handed-over output is missing, unsealed, oversized or not a list of tensors (one line)."""


@dataclass(frozen=True)
class Handed:
    """Where the reference finds one handed-over item: descriptor `fd` of the candidate's process `pid`."""

    pid: int
    fd: int
    name: str

    @property
    def path(self) -> Path:
        return Path(f"/proc/{self.pid}/fd/{self.fd}")


def output_name(shape: int, phase: str, index: int) -> str:
    """The name of shape `shape`'s trial ("trial") or timed repetition ("rep") `index` outputs, as handed over."""
    return f"s{shape}-{phase}{index}"


def sealed(name: str, write: Callable[[BinaryIO], None]) -> int:
    """Candidate side: a memory file holding what `write` wrote, sealed; its descriptor, which the caller keeps open."""
    fd = _MEMFD(name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    with _FDOPEN(fd, "wb", closefd=False) as file:
        write(file)
    _FCNTL(fd, fcntl.F_ADD_SEALS, SEALS | fcntl.F_SEAL_SEAL)
    return fd


def write_outputs(name: str, outputs: list[torch.Tensor]) -> int:
    """Candidate side: one trial's outputs, plain CPU tensors, as a sealed torch.save file; its descriptor."""
    return sealed(name, lambda file: _SAVE(outputs, file))


class _BoundedFile(io.RawIOBase):
    """A read-only view of the first `size` bytes of an open file: what the file grows into later is never read."""

    def __init__(self, fd: int, size: int):
        super().__init__()
        self.fd, self.size, self.pos = fd, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = max(0, {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset)
        return self.pos

    def readinto(self, buffer) -> int:
        wanted = max(0, min(len(buffer), self.size - self.pos))
        got = os.preadv(self.fd, [memoryview(buffer)[:wanted]], self.pos) if wanted else 0
        self.pos += got
        return got


@contextmanager
def untrusted_file(handed: Handed, max_bytes: int) -> Iterator[tuple[int, int]]:
    """An open descriptor on the handed-over file and its size, once it is a sealed memory file of at most `max_bytes`.

    The path is the kernel's own link to the candidate's descriptor. A FIFO put at that descriptor cannot hang the
    reader (O_NONBLOCK; regular files ignore it). Anything else is a HandoffError: the file is the candidate's claim.
    """
    try:
        fd = os.open(handed.path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise HandoffError(f"{handed.name} cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HandoffError(f"{handed.name} is not a regular file")
        try:
            seals = _FCNTL(fd, fcntl.F_GET_SEALS)
        except OSError:
            raise HandoffError(f"{handed.name} is not a memory file that can be sealed") from None
        if seals & SEALS != SEALS:
            raise HandoffError(f"{handed.name} is not sealed: it could still change while it is read")
        if info.st_size > max_bytes:
            raise HandoffError(f"{handed.name} holds {info.st_size} bytes, over the {max_bytes}-byte limit")
        yield fd, info.st_size
    finally:
        os.close(fd)


def read_outputs(handed: Handed, max_bytes: int) -> list[torch.Tensor]:
    """Reference side: the tensors handed over, read without trusting anything about the file."""
    with untrusted_file(handed, max_bytes) as (fd, size):
        # Straight from the file into the tensors' storage: no second 256 MiB copy in between.
        stream = io.BufferedReader(_BoundedFile(fd, size), 1 << 20)
        _check_archive(stream, size, handed.name)
        stream.seek(0)
        try:
            loaded = torch.load(stream, map_location="cpu", weights_only=True)
        except Exception as exc:  # any malformed file is the candidate's, whatever the loader raises
            raise HandoffError(f"{handed.name} is not a readable tensor file ({type(exc).__name__})") from None
    if not isinstance(loaded, list) or not all(type(t) is torch.Tensor for t in loaded):
        raise HandoffError(f"{handed.name} does not hold a list of tensors")
    for tensor in loaded:
        if why := _not_plain(tensor):
            raise HandoffError(f"{handed.name} holds a tensor {why}")
    return loaded


def _check_archive(stream, size: int, name: str) -> None:
    """torch.save's zip archive, every record stored as it is, before torch.load reads any of it.

    What the loader allocates is then bounded by the bytes handed over: a 4 MiB deflated record made the reference
    inflate 4 GiB.
    """
    try:
        records = zipfile.ZipFile(stream).infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise HandoffError(f"{name} is not a torch.save archive") from None
    stored = all(r.compress_type == zipfile.ZIP_STORED and r.file_size == r.compress_size for r in records)
    if not stored or sum(r.file_size for r in records) > size:
        raise HandoffError(f"{name} holds compressed records, which torch.save never writes")


def _not_plain(tensor: torch.Tensor) -> str | None:
    """Why a loaded tensor is not plain data the comparison can read, or None.

    weights_only still restores a saved tensor's Python attributes: one named numel made the comparison see no
    elements. Its properties (device, layout) cannot be shadowed that way; its methods can, so none is left to it.
    Dense CPU tensors only, as a candidate's outputs reach the harness: the comparison cannot read a sparse,
    quantized, nested or meta tensor, and its failure there blamed the problem.
    """
    if vars(tensor):
        return "that carries Python attributes"
    if tensor.layout is not torch.strided or tensor.is_quantized or tensor.is_nested or tensor.device.type != "cpu":
        return "that is not dense on the CPU"
    return None
