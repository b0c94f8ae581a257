"""The chat-model factory: Gemini by default, any LangChain provider by "provider:model", or a cassette.

- `make_chat_model(spec, *, role, temperature=None, record_to=None) -> BaseChatModel`:
  "google_genai:gemini-2.5-pro" (`DEFAULT_MODEL`), any "provider:model" of `PROVIDERS`, or "replay:PATH".
  `record_to` wraps a live model in a `RecordingChatModel` (`--record-cassette PATH`).
- `ROLE_TEMPERATURE`: hotter for the hypothesizer (diverse ideas), cold for the code writers.
- `ROLE_MAX_OUTPUT_TOKENS`: the output-token limit each role's live model is created with (a reply it cuts is
  re-asked, never used); `REQUEST_TIMEOUT_S`: every provider's per-request timeout.
- `ModelSettings(default, per_role, temperature, record_to, transcript_to)`: per-role overrides, every call written
  to the run's transcript (`agents.transcript`); `.spec_for(role)`,
  `.make(role)`; `parse_role_overrides(["hypothesizer=google_genai:gemini-2.5-flash"])` for CLIs. Recording a
  role that replays a cassette is refused (`replayed_roles`): copy the cassette instead.
- `models_by_role(default, per_role)`: which spec answers which roles; `describe_models` says it in one line, so
  a run whose roles replay a cassette never reads as run by its default model.

SDK-level retries are switched off (our own loop in `agents.retry` retries, and must see every failure):
langchain-google-genai documents `max_retries=0` as "the SDK default" (its default, 6, makes the SDK retry 429s
and 5xx itself), so Gemini gets `max_retries=1`: one HTTP attempt per call in every SDK version.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, ValidationError, field_validator

from agents.cassette import RecordingChatModel, ReplayChatModel
from agents.errors import FatalLLMError
from agents.transcript import TranscriptChatModel

DEFAULT_MODEL = "google_genai:gemini-2.5-pro"
ROLES = ("selector", "hypothesizer", "implementer", "debugger")
ROLE_TEMPERATURE = {"selector": 0.3, "hypothesizer": 0.9, "implementer": 0.2, "debugger": 0.1}
REQUEST_TIMEOUT_S = 300.0
# Room for a whole module (and a thinking model's reasoning, which Gemini counts as output) in the code roles.
ROLE_MAX_OUTPUT_TOKENS = {"selector": 8192, "hypothesizer": 16384, "implementer": 16384, "debugger": 16384}


@dataclass(frozen=True)
class Provider:
    """Where a LangChain provider's chat class lives, its option names, and the options that make it try once."""

    package: str
    module: str
    cls: str
    # Most SDKs read max_retries=0 as "no retries"; those that do not say otherwise below.
    options: dict = field(default_factory=lambda: {"max_retries": 0})
    limit_key: str = "max_tokens"
    # None: the timeout is set another way (see `_timeout_options`).
    timeout_key: str | None = "timeout"


PROVIDERS: dict[str, Provider] = {
    "google_genai": Provider(
        "langchain-google-genai", "langchain_google_genai", "ChatGoogleGenerativeAI", {"max_retries": 1},
        limit_key="max_output_tokens",
    ),
    "google_vertexai": Provider(
        "langchain-google-vertexai", "langchain_google_vertexai", "ChatVertexAI", limit_key="max_output_tokens"
    ),
    "openai": Provider("langchain-openai", "langchain_openai", "ChatOpenAI"),
    "azure_openai": Provider("langchain-openai", "langchain_openai", "AzureChatOpenAI"),
    "anthropic": Provider("langchain-anthropic", "langchain_anthropic", "ChatAnthropic"),
    "mistralai": Provider("langchain-mistralai", "langchain_mistralai", "ChatMistralAI"),
    "groq": Provider("langchain-groq", "langchain_groq", "ChatGroq"),
    "deepseek": Provider("langchain-deepseek", "langchain_deepseek", "ChatDeepSeek"),
    "xai": Provider("langchain-xai", "langchain_xai", "ChatXAI"),
    "fireworks": Provider("langchain-fireworks", "langchain_fireworks", "ChatFireworks"),
    "together": Provider("langchain-together", "langchain_together", "ChatTogether"),
    "bedrock_converse": Provider("langchain-aws", "langchain_aws", "ChatBedrockConverse", {}, timeout_key=None),
    "ollama": Provider("langchain-ollama", "langchain_ollama", "ChatOllama", {}, "num_predict", timeout_key=None),
}  # fmt: skip


def _timeout_options(name: str, provider: Provider) -> dict:
    """The provider's request timeout (and, for boto, no retries of its own), however it is spelled."""
    if provider.timeout_key is not None:
        return {provider.timeout_key: REQUEST_TIMEOUT_S}
    if name == "ollama":
        return {"client_kwargs": {"timeout": REQUEST_TIMEOUT_S}}
    # Bedrock reads its timeouts and retries from a botocore Config, which langchain-aws brings.
    config = importlib.import_module("botocore.config").Config
    return {"config": config(read_timeout=REQUEST_TIMEOUT_S, retries={"max_attempts": 1, "mode": "standard"})}


def role_temperature(role: str, temperature: float | None = None) -> float:
    """The temperature for a role: the explicit one, else the role's default."""
    if temperature is not None:
        return temperature
    if role not in ROLE_TEMPERATURE:
        raise FatalLLMError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
    return ROLE_TEMPERATURE[role]


def _provider_class(name: str) -> tuple[type[BaseChatModel], Provider]:
    provider = PROVIDERS.get(name)
    if provider is None:
        known = ", ".join(sorted(PROVIDERS))
        raise FatalLLMError(f"unknown model provider {name!r}; use one of {known}, or replay:PATH")
    try:
        module = importlib.import_module(provider.module)
    except ImportError:
        raise FatalLLMError(
            f"provider {name!r} needs the package {provider.package}: pip install {provider.package}"
        ) from None
    return getattr(module, provider.cls), provider


def make_chat_model(
    spec: str = DEFAULT_MODEL, *, role: str, temperature: float | None = None, record_to: Path | str | None = None
) -> BaseChatModel:
    """A chat model for one role from a spec: "provider:model" or "replay:PATH"."""
    kind, sep, rest = spec.partition(":")
    if not sep or not kind or not rest:
        raise FatalLLMError(f"model spec {spec!r} is not 'provider:model' or 'replay:PATH'")
    if kind == "replay":
        return ReplayChatModel(path=Path(rest), role=role)
    cls, provider = _provider_class(kind)
    options = provider.options | _timeout_options(kind, provider)
    if role in ROLE_MAX_OUTPUT_TOKENS:
        options[provider.limit_key] = ROLE_MAX_OUTPUT_TOKENS[role]
    try:
        model = cls(model=rest, temperature=role_temperature(role, temperature), **options)
    except ValidationError as error:  # e.g. no API key in the environment
        raise FatalLLMError(f"cannot create {spec} for the {role}: {error.errors()[0]['msg']}") from None
    if record_to is not None:
        return RecordingChatModel(inner=model, path=Path(record_to), spec=spec)
    return model


def models_by_role(default: str, per_role: dict[str, str]) -> dict[str, list[str]]:
    """Each spec that answers some role, with those roles, in the order of `ROLES`."""
    by_spec: dict[str, list[str]] = {}
    for role in ROLES:
        by_spec.setdefault(per_role.get(role, default), []).append(role)
    return by_spec


def describe_models(default: str, per_role: dict[str, str], *, quote: str = "") -> str:
    """The models that answer a run's calls: the one spec, else "spec (role, ...); spec (role, ...)"."""
    by_spec = models_by_role(default, per_role)
    if len(by_spec) == 1:
        return f"{quote}{next(iter(by_spec))}{quote}"
    return "; ".join(f"{quote}{spec}{quote} ({', '.join(roles)})" for spec, roles in by_spec.items())


def parse_role_overrides(items: list[str]) -> dict[str, str]:
    """`["role=provider:model", ...]` as a dict, with a one-line error for a bad item or an unknown role."""
    overrides = {}
    for item in items:
        role, sep, spec = item.partition("=")
        if not sep or not spec:
            raise FatalLLMError(f"bad model override {item!r}: write ROLE=provider:model")
        if role not in ROLES:
            raise FatalLLMError(f"bad model override {item!r}: unknown role {role!r}; roles: {', '.join(ROLES)}")
        overrides[role] = spec
    return overrides


class ModelSettings(BaseModel):
    """Which model each role uses, at which temperature, and whether calls are recorded to a cassette."""

    default: str = DEFAULT_MODEL
    per_role: dict[str, str] = Field(default_factory=dict)
    temperature: dict[str, float] = Field(default_factory=dict)
    record_to: Path | None = None
    transcript_to: Path | None = None

    @field_validator("per_role", "temperature")
    @classmethod
    def _roles_are_known(cls, value: dict) -> dict:
        unknown = sorted(set(value) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown roles {unknown}; roles: {', '.join(ROLES)}")
        return value

    def spec_for(self, role: str) -> str:
        """The model spec this role uses."""
        return self.per_role.get(role, self.default)

    def replayed_roles(self) -> list[str]:
        """The roles whose model replays a cassette."""
        return [role for role in ROLES if self.spec_for(role).startswith("replay:")]

    def make(self, role: str) -> BaseChatModel:
        """The chat model for this role; recording a replayed role is refused with a one-line error."""
        spec = self.spec_for(role)
        if self.record_to is not None and spec.startswith("replay:"):
            raise FatalLLMError(refuse_recording(self.replayed_roles()))
        model = make_chat_model(spec, role=role, temperature=self.temperature.get(role), record_to=self.record_to)
        return TranscriptChatModel(inner=model, path=self.transcript_to) if self.transcript_to else model


def refuse_recording(roles: list[str]) -> str:
    """Why --record-cassette is refused when roles replay a cassette: there is no live call to record."""
    return (
        f"--record-cassette records live models, but {', '.join(roles)} replay a cassette: copy that cassette "
        "instead, or give those roles a live --model"
    )
