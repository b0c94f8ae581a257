"""Text as the prompts show it."""

from __future__ import annotations


def clip(text: str | None, limit: int) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `limit` characters with "..." where it was longer."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
