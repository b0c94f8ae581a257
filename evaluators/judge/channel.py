"""The worker-to-parent channel: framed marks (stage changes, timing windows) and JSON reports over a pipe."""

from __future__ import annotations

import os
import struct

MARK, BLOB = b"M", b"B"
_HEADER = struct.Struct(">cQ")


class ChannelError(RuntimeError):
    """The stream broke the framing or a size limit: the worker misbehaved."""


class ChannelWriter:
    """Child side; binds os.write before candidate code can replace it."""

    def __init__(self, fd: int):
        self.fd = fd
        self._write = os.write

    def mark(self, text: str) -> None:
        """A short event the parent timestamps on arrival (stage:NAME, wall:begin, wall:end)."""
        self._send(MARK, text.encode())

    def blob(self, payload: bytes) -> None:
        """A report: JSON bytes (event and metadata); tensors travel as files, never over the channel."""
        self._send(BLOB, payload)

    def _send(self, tag: bytes, payload: bytes) -> None:
        view = memoryview(_HEADER.pack(tag, len(payload)) + payload)
        while view:
            view = view[self._write(self.fd, view) :]


def read_frames(fd: int, max_bytes: int):
    """Parent side: yield (tag, payload) until EOF; raises ChannelError on a bad frame."""
    with os.fdopen(fd, "rb", buffering=1 << 16) as stream:
        while True:
            header = stream.read(_HEADER.size)
            if not header:
                return
            if len(header) < _HEADER.size:
                raise ChannelError("truncated frame header")
            tag, size = _HEADER.unpack(header)
            if tag not in (MARK, BLOB):
                raise ChannelError(f"unknown frame tag {tag!r}")
            if size > max_bytes:
                raise ChannelError(f"a {size}-byte result is over the {max_bytes}-byte limit")
            payload = stream.read(size)
            if len(payload) < size:
                raise ChannelError("truncated frame")
            yield tag, payload
