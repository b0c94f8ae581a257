"""What a reply's metadata says about how it ended: a stop reason of length means the output-token limit cut it.

Providers spell it differently: OpenAI and most OpenAI-compatible APIs `finish_reason: "length"`, Gemini
`finish_reason: "MAX_TOKENS"`, Anthropic and Bedrock `stop_reason` / `stopReason: "max_tokens"`, Ollama
`done_reason: "length"`.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage

STOP_KEYS = ("finish_reason", "stop_reason", "stopReason", "done_reason")
LENGTH = frozenset({"length", "max_tokens", "max_output_tokens"})


def stop_reason(message: AIMessage) -> str | None:
    """The provider's stop reason, as it wrote it, or None."""
    metadata = message.response_metadata or {}
    return next((str(metadata[key]) for key in STOP_KEYS if metadata.get(key)), None)


def cut_by_length(message: AIMessage) -> bool:
    """True when the output-token limit ended the reply."""
    reason = stop_reason(message)
    return reason is not None and reason.lower().removeprefix("finishreason.") in LENGTH
