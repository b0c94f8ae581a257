"""WorkerReport: one JSON report from a worker, decoded without trusting it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from evaluators.judge.channel import ChannelError


@dataclass
class WorkerReport:
    """One report from a worker: an event and its JSON metadata (no tensors ever cross the channel)."""

    event: str
    meta: dict

    @classmethod
    def read(cls, blob: bytes) -> WorkerReport:
        """Decode a report; anything but {"event": str, "meta": dict} broke the protocol."""
        try:
            data = json.loads(blob)
        except (ValueError, RecursionError) as exc:
            raise ChannelError(f"a report that is not JSON ({type(exc).__name__})") from None
        if not (isinstance(data, dict) and isinstance(data.get("event"), str) and isinstance(data.get("meta"), dict)):
            raise ChannelError("a report without an event and its metadata")
        return cls(data["event"], data["meta"])
