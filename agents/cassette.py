"""Chat-model cassettes: record every call of a live model, replay them offline and deterministically.

A cassette is one JSON file:

    {"authored_by_hand": false, "model": "google_genai:gemini-2.5-pro", "recorded_at": "...", "note": "...",
     "calls": [{"call_id": "i1.selector", "role": "selector", "model": "...",
                "messages": [{"role": "human", "content": "..."}],
                "response": {"content": "...", "usage_metadata": {...}, "response_metadata": {...}}}, ...]}

Calls are keyed by `call_id`, which the graph assigns (f"i{iteration}.s{slot}.{role}.a{attempt}",
f"i{iteration}.selector", f"i{iteration}.hypothesizer") and role functions pass to the model as
`config={"metadata": {"ks_call_id": call_id, "ks_role": role}, "tags": [role]}`; langchain-core hands that metadata to
`_generate` through `run_manager.metadata`. Keying by id rather than by prompt text keeps replays stable when
parallel experiments finish in a different order. A call id recorded twice replays its answers in order.
`response_metadata` (optional) keeps the provider's stop reason, so a reply cut by the token limit replays as one.

- `ReplayChatModel(path=..., role=...)`: answers from the cassette; a call it does not hold raises
  `FatalLLMError` naming the call id and role. Its `model` is "replay:PATH", what really answers; `recorded_from`
  is the cassette's origin (its recorded model, or "authored by hand"), `priced_as` the price table its token
  counts are costed with (the cassette's "model").
- `replay_of(model)`: the `ReplayChatModel` under any wrappers (the transcript, test doubles), or None for a live model.
- `RecordingChatModel(inner=..., path=..., spec=...)`: forwards each call to a live model and appends it to
  the cassette as it happens (`--record-cassette PATH`); several roles may record into one file.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from agents.errors import FatalLLMError

CALL_ID_KEY = "ks_call_id"
ROLE_KEY = "ks_role"

# One lock per cassette file: roles share a file and parallel experiments call models from several threads.
_FILE_LOCKS: defaultdict[Path, threading.Lock] = defaultdict(threading.Lock)


def call_id_of(run_manager: CallbackManagerForLLMRun | None) -> str | None:
    """The call id the role function put in the run's metadata, if any."""
    return (run_manager.metadata if run_manager else {}).get(CALL_ID_KEY)


def role_of(run_manager: CallbackManagerForLLMRun | None) -> str:
    """The role that made the call (its metadata; LangGraph adds tags of its own, so tags are not reliable)."""
    metadata = run_manager.metadata if run_manager else {}
    return str(metadata.get(ROLE_KEY) or "")


def message_to_json(message: BaseMessage) -> dict[str, Any]:
    """A message as the cassette stores it: its role and its text."""
    content = message.content if isinstance(message.content, str) else str(message.text)
    return {"role": message.type, "content": content}


def recorded_from(header: dict[str, Any]) -> str:
    """Where a cassette's answers came from: the model it was recorded from, or "authored by hand".

    A cassette that does not say it was recorded is taken as authored: only a recording names a model that answered.
    """
    if header.get("authored_by_hand", True):
        return "authored by hand"
    return str(header.get("model") or "an unnamed model")


def read_cassette(path: Path) -> dict[str, Any]:
    """A cassette's JSON, with a one-line error when the file is missing or is not a cassette."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise FatalLLMError(f"cassette not found: {path}") from None
    except json.JSONDecodeError as error:
        raise FatalLLMError(f"cassette {path} is not valid JSON: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("calls"), list):
        raise FatalLLMError(f"cassette {path} has no 'calls' list")
    return data


class ReplayChatModel(BaseChatModel):
    """Answers each call from a cassette by its call id; offline and deterministic."""

    path: Path
    role: str = ""
    # The cassette's "model": the price table for accounting. A hand-authored cassette names one too, so it is
    # never shown as the model that answered (`model` is).
    priced_as: str = ""
    recorded_from: str = ""
    _answers: dict[str, list[dict]] = PrivateAttr(default_factory=dict)
    _served: defaultdict[str, int] = PrivateAttr(default_factory=lambda: defaultdict(int))
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any) -> None:
        """Load the cassette once; its header says where its answers came from and how they are priced."""
        data = read_cassette(self.path)
        self.priced_as = self.priced_as or str(data.get("model") or "")
        self.recorded_from = self.recorded_from or recorded_from(data)
        for call in data["calls"]:
            self._answers.setdefault(call["call_id"], []).append(call["response"])

    @property
    def model(self) -> str:
        """What answers: this cassette, never the model it names (transcripts and accounting show this)."""
        return f"replay:{self.path}"

    @property
    def _llm_type(self) -> str:
        return "ks-replay"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call_id = call_id_of(run_manager)
        if call_id is None:
            raise FatalLLMError(f"replay from {self.path} needs a call id (metadata {CALL_ID_KEY!r}); role {self.role}")
        with self._lock:
            answers = self._answers.get(call_id, [])
            index = self._served[call_id]
            if index >= len(answers):
                held = "not" if not answers else f"only {len(answers)} time(s), not {index + 1}"
                raise FatalLLMError(f"cassette {self.path} does {held} hold call {call_id} (role {self.role or '?'})")
            self._served[call_id] += 1
        response = answers[index]
        message = AIMessage(
            content=response["content"],
            usage_metadata=response.get("usage_metadata") or None,
            response_metadata=response.get("response_metadata") or {},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def replay_of(model: BaseChatModel) -> ReplayChatModel | None:
    """The cassette that answers for `model`, or None for a live model.

    Wrappers (the transcript, test doubles) keep the model they forward to as `inner`.
    """
    while model is not None:
        if isinstance(model, ReplayChatModel):
            return model
        model = getattr(model, "inner", None)
    return None


def _plain(metadata: dict | None) -> dict:
    """Response metadata as JSON can hold it (SDK enums and objects as their text)."""
    return json.loads(json.dumps(metadata or {}, default=str))


class RecordingChatModel(BaseChatModel):
    """Forwards each call to a live model and appends the exchange to a cassette as it happens."""

    inner: BaseChatModel
    path: Path
    spec: str = ""
    note: str = ""

    @property
    def _llm_type(self) -> str:
        return "ks-recording"

    @property
    def model(self) -> str:
        """The live model's spec, for accounting."""
        return self.spec or getattr(self.inner, "model", "") or self.inner._llm_type

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call_id = call_id_of(run_manager)
        if call_id is None:
            raise FatalLLMError(f"recording to {self.path} needs a call id (metadata {CALL_ID_KEY!r})")
        role = role_of(run_manager)
        config = {"metadata": {CALL_ID_KEY: call_id, ROLE_KEY: role}}
        answer = self.inner.invoke(messages, stop=stop, config=config, **kwargs)
        content = answer.content if isinstance(answer.content, str) else str(answer.text)
        self._append(
            {
                "call_id": call_id,
                "role": role,
                "model": self.model,
                "messages": [message_to_json(message) for message in messages],
                "response": {
                    "content": content,
                    "usage_metadata": dict(answer.usage_metadata or {}),
                    "response_metadata": _plain(answer.response_metadata),
                },
            }
        )
        message = AIMessage(
            content=content, usage_metadata=answer.usage_metadata, response_metadata=answer.response_metadata
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _append(self, call: dict[str, Any]) -> None:
        path = Path(self.path).resolve()
        with _FILE_LOCKS[path]:
            if path.exists():
                data = read_cassette(path)
            else:
                data = {
                    "authored_by_hand": False,
                    "model": self.model,
                    "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "note": self.note or "recorded with --record-cassette",
                    "calls": [],
                }
            data["calls"].append(call)
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write beside, then rename: an interrupted run never leaves half a cassette.
            partial = path.with_suffix(path.suffix + ".partial")
            partial.write_text(json.dumps(data, indent=1) + "\n")
            partial.replace(path)
