"""The chat-model factory: Gemini by default, any LangChain provider by "provider:model", or a cassette.

- `make_chat_model(spec, *, role, temperature=None, record_to=None) -> BaseChatModel`:
  "google_genai:gemini-2.5-pro" (`DEFAULT_MODEL`), any "provider:model" of `PROVIDERS`, or "replay:PATH".
  `record_to` wraps a live model in a `RecordingChatModel` (`--record-cassette PATH`).
- `ROLE_TEMPERATURE`: hotter for the hypothesizer (diverse ideas), cold for the code writers.
- `ModelSettings(default, per_role, temperature, record_to)`: per-role overrides; `.spec_for(role)`,
  `.make(role)`; `parse_role_overrides(["hypothesizer=google_genai:gemini-2.5-flash"])` for CLIs.

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

DEFAULT_MODEL = "google_genai:gemini-2.5-pro"
ROLES = ("selector", "hypothesizer", "implementer", "debugger")
ROLE_TEMPERATURE = {"selector": 0.3, "hypothesizer": 0.9, "implementer": 0.2, "debugger": 0.1}
REQUEST_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Provider:
    """Where a LangChain provider's chat class lives, and the options that make it try only once per call."""

    package: str
    module: str
    cls: str
    # Most SDKs read max_retries=0 as "no retries"; those that do not say otherwise below.
    options: dict = field(default_factory=lambda: {"max_retries": 0})


PROVIDERS: dict[str, Provider] = {
    "google_genai": Provider(
        "langchain-google-genai",
        "langchain_google_genai",
        "ChatGoogleGenerativeAI",
        {"max_retries": 1, "timeout": REQUEST_TIMEOUT_S},
    ),
    "google_vertexai": Provider("langchain-google-vertexai", "langchain_google_vertexai", "ChatVertexAI"),
    "openai": Provider("langchain-openai", "langchain_openai", "ChatOpenAI"),
    "azure_openai": Provider("langchain-openai", "langchain_openai", "AzureChatOpenAI"),
    "anthropic": Provider("langchain-anthropic", "langchain_anthropic", "ChatAnthropic"),
    "mistralai": Provider("langchain-mistralai", "langchain_mistralai", "ChatMistralAI"),
    "groq": Provider("langchain-groq", "langchain_groq", "ChatGroq"),
    "deepseek": Provider("langchain-deepseek", "langchain_deepseek", "ChatDeepSeek"),
    "xai": Provider("langchain-xai", "langchain_xai", "ChatXAI"),
    "fireworks": Provider("langchain-fireworks", "langchain_fireworks", "ChatFireworks"),
    "together": Provider("langchain-together", "langchain_together", "ChatTogether"),
    "bedrock_converse": Provider("langchain-aws", "langchain_aws", "ChatBedrockConverse", {}),
    "ollama": Provider("langchain-ollama", "langchain_ollama", "ChatOllama", {}),
}


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
    try:
        model = cls(model=rest, temperature=role_temperature(role, temperature), **provider.options)
    except ValidationError as error:  # e.g. no API key in the environment
        raise FatalLLMError(f"cannot create {spec} for the {role}: {error.errors()[0]['msg']}") from None
    if record_to is not None:
        return RecordingChatModel(inner=model, path=Path(record_to), spec=spec)
    return model


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

    def make(self, role: str) -> BaseChatModel:
        """The chat model for this role."""
        spec = self.spec_for(role)
        record_to = None if spec.startswith("replay:") else self.record_to
        return make_chat_model(spec, role=role, temperature=self.temperature.get(role), record_to=record_to)
