"""One model call with retries: back off on rate limits, timeouts and server errors; stop on the rest.

Transient errors are recognised for every provider `--model` accepts without importing their packages (which may
be absent): langchain-core's `ModelError`, an HTTP status however the SDK carries it (botocore's response dict
included), or the class names the SDKs use (`RateLimitError`, `ResourceExhausted`, `ThrottlingException`, ...).
Authentication, permission and bad-request errors are not worth a second try; they, and anything we cannot
classify, raise `FatalLLMError` with a one-line message at once, so the run ends cleanly and can be resumed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from langchain_core.exceptions import ModelAuthenticationError, ModelError, ModelPermissionDeniedError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from agents.accounting import LLMCall, cost_of
from agents.cassette import CALL_ID_KEY, ROLE_KEY, replay_of
from agents.errors import FatalLLMError

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
FATAL_STATUS = frozenset({400, 401, 402, 403, 404, 413, 422})
# Class names across SDKs: openai and its compatibles, anthropic, google-genai and google-api-core, mistralai,
# groq, ollama (httpx), botocore (Bedrock), requests and urllib3.
TRANSIENT_NAMES = frozenset(
    {
        "RateLimitError", "APITimeoutError", "APIConnectionError", "InternalServerError", "OverloadedError",
        "ServiceUnavailableError", "ServerError", "ResourceExhausted", "ServiceUnavailable", "DeadlineExceeded",
        "TooManyRequests", "BadGateway", "GatewayTimeout", "Aborted",
        "ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException", "InternalServerException",
        "ModelTimeoutException", "ReadTimeoutError", "ConnectTimeoutError", "EndpointConnectionError",
        "ConnectionClosedError", "RemoteProtocolError", "ReadTimeout", "ConnectTimeout", "ProtocolError",
    }
)  # fmt: skip
FATAL_NAMES = frozenset(
    {
        "AuthenticationError", "PermissionDeniedError", "BadRequestError", "NotFoundError", "UnprocessableEntityError",
        "Unauthenticated", "PermissionDenied", "InvalidArgument", "NotFound", "Forbidden", "Unauthorized",
        "AccessDeniedException", "ValidationException", "ResourceNotFoundException", "UnrecognizedClientException",
        "ExpiredTokenException", "NoCredentialsError", "DefaultCredentialsError",
    }
)  # fmt: skip


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure."""

    max_attempts: int = 6
    first_delay_s: float = 2.0
    max_delay_s: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def delay(self, attempt: int) -> float:
        """Exponential backoff with jitter, so parallel experiments do not retry in step."""
        return min(self.max_delay_s, self.first_delay_s * 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)


def _status_code(error: BaseException) -> int | None:
    # SDKs spell it differently: google-genai `.code`, openai/anthropic `.status_code`, httpx `.response`,
    # botocore a `.response` dict.
    for name in ("status_code", "code", "http_status"):
        value = getattr(error, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        value = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    else:
        value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _by_name(error: BaseException) -> bool | None:
    """Transient or fatal by the class names of the error's type and its bases (and botocore's error code)."""
    names = {cls.__name__ for cls in type(error).__mro__}
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        names.add(str(response.get("Error", {}).get("Code", "")))
    if names & FATAL_NAMES:
        return False
    if names & TRANSIENT_NAMES:
        return True
    return None


def is_transient(error: BaseException) -> bool | None:
    """True for errors worth retrying, False for fatal ones, None when unknown (a bug, not the service)."""
    if isinstance(error, FatalLLMError):
        return False
    if isinstance(error, ModelError):
        return error.is_retryable
    status = _status_code(error)
    if status in RETRYABLE_STATUS or (status is not None and status >= 500):
        return True
    if status in FATAL_STATUS:
        return False
    # httpx carries the Gemini SDK's requests (and most others'); its timeouts and dropped connections surface as is.
    if isinstance(error, TimeoutError | ConnectionError | httpx.TimeoutException | httpx.NetworkError):
        return True
    return _by_name(error)


def _hint(error: BaseException) -> str:
    refused = isinstance(error, ModelAuthenticationError | ModelPermissionDeniedError)
    return " (check the provider's API key)" if refused or _status_code(error) in (401, 403) else ""


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def model_label(model: BaseChatModel) -> str:
    """What answers the model's calls: the configured model, "replay:PATH" for a cassette, else its type."""
    return str(getattr(model, "model", "") or getattr(model, "model_name", "") or model._llm_type)


def price_label(model: BaseChatModel) -> str:
    """The model whose prices cost a call: a cassette's own (its header's "model"), else the model's name."""
    replay = replay_of(model)
    return replay.priced_as if replay is not None else model_label(model)


def invoke_with_retries(
    model: BaseChatModel,
    messages: list[BaseMessage],
    *,
    role: str,
    call_id: str,
    policy: RetryPolicy | None = None,
) -> tuple[AIMessage, LLMCall]:
    """Call the model once, retrying transient failures; the answer and its accounting."""
    policy = policy or RetryPolicy()
    config = {"metadata": {CALL_ID_KEY: call_id, ROLE_KEY: role}, "tags": [role]}
    started = time.monotonic()
    for attempt in range(1, policy.max_attempts + 1):
        try:
            answer = model.invoke(messages, config=config)
            break
        except Exception as error:
            transient = is_transient(error)
            if transient is None:
                raise FatalLLMError(f"{role} call {call_id} failed unexpectedly: {_one_line(error)}") from error
            if not transient:
                raise FatalLLMError(f"{role} call {call_id} failed{_hint(error)}: {_one_line(error)}") from error
            if attempt == policy.max_attempts:
                raise FatalLLMError(
                    f"{role} call {call_id} still failing after {attempt} attempts: {_one_line(error)}"
                ) from error
            policy.sleep(policy.delay(attempt))
    usage = answer.usage_metadata or {}
    name = model_label(model)
    call = LLMCall(
        role=role,
        call_id=call_id,
        model=name,
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cost_usd=cost_of(price_label(model), usage),
        attempts=attempt,
        seconds=round(time.monotonic() - started, 3),
    )
    return answer, call
