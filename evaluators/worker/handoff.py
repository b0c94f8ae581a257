"""The candidate's outputs, handed to the reference worker as files for comparison on the reference's device.

The directory is on tmpfs (/dev/shm) where there is one, so a 256 MiB output costs a memory copy, not a pipe
and a parent-side decode. What the files hold is the candidate's claim: the reader never follows links, never
reads past the size it saw, loads with weights_only=True, and turns anything unreadable into a HandoffError.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

_SAVE = torch.save  # bound at import: a candidate's patched torch.save never sees the outputs it wrote


class HandoffError(Exception):
    """The candidate's output file is missing, oversized or not a list of tensors (one-line message)."""


def output_path(directory: str | Path, shape: int, phase: str, index: int) -> Path:
    """Where the candidate leaves its outputs of shape `shape`'s trial ("trial") or timed repetition ("rep") `index`."""
    return Path(directory) / f"s{shape}-{phase}{index}.pt"


def write_outputs(path: Path, outputs: list[torch.Tensor]) -> None:
    """Candidate side: one trial's outputs, plain CPU tensors, as a torch.save file."""
    _SAVE(outputs, path)


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
def untrusted_file(path: Path, max_bytes: int) -> Iterator[tuple[int, int]]:
    """An open descriptor on `path` and its size, once it is known to be a regular file of at most `max_bytes`.

    No link is followed, and a FIFO put in the file's place cannot hang the reader (O_NONBLOCK; regular files
    ignore it). Anything else is a HandoffError: the file is the candidate's claim.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise HandoffError(f"{path.name} cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HandoffError(f"{path.name} is not a regular file")
        if info.st_size > max_bytes:
            raise HandoffError(f"{path.name} holds {info.st_size} bytes, over the {max_bytes}-byte limit")
        yield fd, info.st_size
    finally:
        os.close(fd)


def read_outputs(path: Path, max_bytes: int) -> list[torch.Tensor]:
    """Reference side: the tensors in `path`, read without trusting anything about the file."""
    with untrusted_file(path, max_bytes) as (fd, size):
        try:
            # Straight from the file into the tensors' storage: no second 256 MiB copy in between.
            stream = io.BufferedReader(_BoundedFile(fd, size), 1 << 20)
            loaded = torch.load(stream, map_location="cpu", weights_only=True)
        except Exception as exc:  # any malformed file is the candidate's, whatever the loader raises
            raise HandoffError(f"{path.name} is not a readable tensor file ({type(exc).__name__})") from None
    if not isinstance(loaded, list) or not all(type(t) is torch.Tensor for t in loaded):
        raise HandoffError(f"{path.name} does not hold a list of tensors")
    # Dense tensors only, as a candidate's outputs reach the harness: the comparison cannot read a sparse or
    # quantized layout, and its failure there blamed the problem.
    if not all(t.layout is torch.strided and not t.is_quantized for t in loaded):
        raise HandoffError(f"{path.name} holds a tensor that is not dense")
    return loaded
