"""The parent's side of the channel: one bounded frame per command, read against the parent's own deadline.

Nothing is read ahead: a worker that writes frames nobody asked for fills its own pipe (the kernel bounds it) and
is caught when the parent next looks (`unsolicited`), so a flood costs the parent no memory.
"""

from __future__ import annotations

import json
import os
import select
import time

from evaluators.worker.replies import HEADER

REPLY_LIMIT = 1 << 20  # a reply is JSON metadata; outputs travel as files or device handles, never here


class ChannelError(RuntimeError):
    """The worker broke the protocol: a bad frame, one nobody asked for, or one over the size limit."""


class ChannelClosed(Exception):
    """The worker's end closed (it died or exited)."""


class ChannelTimeout(Exception):
    """No whole reply before the deadline."""


def unsolicited(fd: int) -> bool:
    """Whether bytes (or the end of the stream) wait on the channel while no command is outstanding."""
    return bool(select.select([fd], [], [], 0)[0])


def read_reply(fd: int, command_id: int, deadline: float) -> tuple[str, dict]:
    """The reply to command `command_id`, by `deadline` (perf_counter): (event, meta)."""
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))
    if size > REPLY_LIMIT:
        raise ChannelError(f"a {size}-byte reply, over the {REPLY_LIMIT}-byte limit")
    try:
        data = json.loads(_read_exactly(fd, size, deadline))
    except (ValueError, RecursionError) as exc:
        raise ChannelError(f"a reply that is not JSON ({type(exc).__name__})") from None
    if not (isinstance(data, dict) and isinstance(data.get("event"), str) and isinstance(data.get("meta"), dict)):
        raise ChannelError("a reply without an event and its metadata")
    if data.get("id") != command_id:
        raise ChannelError("a reply to a command the parent did not send (a forged or early frame)")
    return data["event"], data["meta"]


def _read_exactly(fd: int, size: int, deadline: float) -> bytes:
    chunks, left = [], size
    while left:
        remaining = deadline - time.perf_counter()
        if remaining <= 0 or not select.select([fd], [], [], min(remaining, 3600))[0]:
            if time.perf_counter() >= deadline:
                raise ChannelTimeout
            continue
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise ChannelClosed
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
