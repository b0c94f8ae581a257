"""The worker's side of the channel: one command in, exactly one reply out, carrying the command's id.

The parent sends each command with an id it drew at random; a reply must carry it, so no reply can be sent before
its command was (the parent's clock around each command is what it believes). The functions are bound at import,
before candidate code can replace them; code in this process can still write frames of its own, which is why the
parent reads only one frame per command and checks it (judge/channel.py).
"""

from __future__ import annotations

import json
import os
import struct

HEADER = struct.Struct(">Q")


class Replies:
    """Reads the parent's commands from the control pipe and answers each one once over the channel."""

    def __init__(self, channel_fd: int, control_fd: int, side_fd: int):
        self.channel_fd = channel_fd
        self.control = os.fdopen(control_fd, "rb", buffering=0)
        self.side_fd = side_fd  # a candidate's marks (mark), a reference's socket (worker/window_watch.py)
        self._write, self._dumps = os.write, json.dumps
        self._id: int | None = None

    def next_command(self) -> dict | None:
        """The parent's next command, or None once it closed the control pipe (it has seen enough)."""
        line = self.control.readline()
        if not line:
            return None
        command = json.loads(line)
        self._id = command.pop("id")
        return command

    def reply(self, event: str, meta: dict) -> None:
        """Answer the current command: an event name and JSON metadata (tensors never cross the channel)."""
        if self._id is None:
            raise RuntimeError(f"a {event!r} reply with no command to answer")
        payload = self._dumps({"id": self._id, "event": event, "meta": meta}).encode()
        self._id = None
        view = memoryview(HEADER.pack(len(payload)) + payload)
        while view:
            view = view[self._write(self.channel_fd, view) :]

    def mark(self) -> None:
        """A candidate's mark of its block's end: one byte on its side pipe, whose read end only the reference reads.

        The reference's watch, armed on that read end, begins as the byte arrives (worker/window_watch.py).
        """
        self._write(self.side_fd, b"m")
