"""The run's transcript: every model call (re-asks and debugger rounds included) as one JSON line.

`TranscriptChatModel(inner=..., path=...)` forwards each call and appends to `path` (`<run_dir>/transcript.jsonl`)
{"call_id", "role", "model", "prompt" (the messages sent, as text), "answer" (the reply's text), "input_tokens",
"output_tokens", "seconds", "stop_reason"}; a call that raised gets "error" instead of an answer. Replays are
transcribed too, so a replayed run's prompts can be read beside the cassette's answers: their "model" is what
answered, "replay:PATH", and "recorded_from" says where the cassette's answers came from (the model it was
recorded from, or "authored by hand").
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agents.cassette import CALL_ID_KEY, ROLE_KEY, call_id_of, replay_of, role_of
from agents.replies import stop_reason

TRANSCRIPT_FILE = "transcript.jsonl"
_LOCKS: defaultdict[Path, threading.Lock] = defaultdict(threading.Lock)


def as_text(messages: list[BaseMessage]) -> str:
    """The messages sent, each headed by its role."""
    return "\n\n".join(f"[{message.type}]\n{message.text}" for message in messages)


class TranscriptChatModel(BaseChatModel):
    """Forwards each call to the wrapped model and appends the exchange to the transcript."""

    inner: BaseChatModel
    path: Path

    @property
    def _llm_type(self) -> str:
        return "ks-transcript"

    @property
    def model(self) -> str:
        """What answers: the wrapped model's name, "replay:PATH" for a cassette."""
        return str(getattr(self.inner, "model", "") or getattr(self.inner, "model_name", "") or self.inner._llm_type)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call_id = call_id_of(run_manager)
        role = role_of(run_manager)
        entry = {"call_id": call_id, "role": role, "model": self.model}
        if (replay := replay_of(self.inner)) is not None:
            entry["recorded_from"] = replay.recorded_from
        entry["prompt"] = as_text(messages)
        started = time.monotonic()
        config = {"metadata": {CALL_ID_KEY: call_id, ROLE_KEY: role}, "tags": [role]}
        try:
            answer = self.inner.invoke(messages, stop=stop, config=config, **kwargs)
        except Exception as error:
            self._append(entry | {"error": f"{type(error).__name__}: {error}", "seconds": _since(started)})
            raise
        usage = answer.usage_metadata or {}
        self._append(
            entry
            | {
                "answer": str(answer.text),
                "input_tokens": usage.get("input_tokens", 0),
                "output_tokens": usage.get("output_tokens", 0),
                "seconds": _since(started),
                "stop_reason": stop_reason(answer),
            }
        )
        return ChatResult(generations=[ChatGeneration(message=answer)])

    def _append(self, entry: dict) -> None:
        path = Path(self.path).resolve()
        with _LOCKS[path]:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as handle:
                handle.write(json.dumps(entry) + "\n")


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)
