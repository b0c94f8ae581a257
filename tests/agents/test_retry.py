import httpx
import pytest
from langchain_core.exceptions import ModelAuthenticationError, ModelRateLimitError

from agents.errors import FatalLLMError
from agents.retry import RetryPolicy, invoke_with_retries, is_transient
from tests.agents.fakes import Flaky


class StatusError(Exception):
    def __init__(self, status_code):
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def policy(sleeps):
    return RetryPolicy(max_attempts=4, first_delay_s=1.0, sleep=sleeps.append)


def test_rate_limit_then_success_backs_off_exponentially():
    sleeps = []
    model = Flaky(outcomes=[ModelRateLimitError("429"), StatusError(503), "ok"], seen=[])
    answer, call = invoke_with_retries(model, [], role="selector", call_id="i1.selector", policy=policy(sleeps))
    assert answer.content == "ok" and call.attempts == 3 and call.input_tokens == 100
    assert len(sleeps) == 2 and 0.8 <= sleeps[0] <= 1.2 and 1.6 <= sleeps[1] <= 2.4
    assert [call_id for call_id, _ in model.seen] == ["i1.selector"] * 3


def test_authentication_error_is_fatal_without_retry():
    sleeps = []
    model = Flaky(outcomes=[ModelAuthenticationError("API key not valid"), "never"], seen=[])
    with pytest.raises(
        FatalLLMError, match=r"selector call i1.selector failed \(check the provider.s API key\): .*API key not valid"
    ):
        invoke_with_retries(model, [], role="selector", call_id="i1.selector", policy=policy(sleeps))
    assert sleeps == [] and len(model.seen) == 1


def test_retries_spent_end_the_run_with_a_clear_message():
    sleeps = []
    model = Flaky(outcomes=[httpx.ReadTimeout("slow")] * 4, seen=[])
    with pytest.raises(FatalLLMError, match="still failing after 4 attempts: ReadTimeout"):
        invoke_with_retries(model, [], role="debugger", call_id="i1.s0.debugger.a1", policy=policy(sleeps))
    assert len(sleeps) == 3


def test_classification():
    assert is_transient(StatusError(429)) and is_transient(StatusError(502)) and is_transient(TimeoutError())
    assert is_transient(StatusError(400)) is False and is_transient(StatusError(403)) is False
    assert is_transient(KeyError("bug")) is None


def test_an_unclassified_error_ends_the_run_with_one_line_not_a_traceback():
    model = Flaky(outcomes=[KeyError("bug"), "never"], seen=[])
    with pytest.raises(FatalLLMError, match="selector call x failed unexpectedly: KeyError: 'bug'") as caught:
        invoke_with_retries(model, [], role="selector", call_id="x", policy=policy([]))
    assert isinstance(caught.value.__cause__, KeyError) and len(model.seen) == 1


def sdk_error(module: str, name: str, base: type = Exception, **attributes) -> Exception:
    """An exception shaped like a provider SDK's (its class name and module), without importing the SDK."""
    cls = type(name, (base,), {"__module__": module})
    error = cls("service says no")
    for key, value in attributes.items():
        setattr(error, key, value)
    return error


@pytest.mark.parametrize(
    "error",
    [
        sdk_error("openai", "RateLimitError"),
        sdk_error("openai", "APITimeoutError"),
        sdk_error("anthropic", "OverloadedError"),
        sdk_error("anthropic", "InternalServerError"),
        sdk_error("google.api_core.exceptions", "ResourceExhausted"),
        sdk_error("google.api_core.exceptions", "ServiceUnavailable"),
        sdk_error("google.genai.errors", "ServerError", code=503),
        sdk_error("mistralai", "SDKError", status_code=429),
        sdk_error("groq", "APIConnectionError"),
        sdk_error("botocore.exceptions", "ReadTimeoutError"),
        sdk_error("botocore.exceptions", "ClientError", response={"Error": {"Code": "ThrottlingException"}}),
        sdk_error("ollama", "ResponseError", status_code=503),
        sdk_error("requests.exceptions", "ReadTimeout"),
        # A subclass of a transient SDK class, as SDKs define per-endpoint errors.
        sdk_error("openai", "ChatRateLimit", base=type("RateLimitError", (Exception,), {})),
    ],
    ids=lambda e: f"{type(e).__module__}.{type(e).__name__}",
)
def test_transient_errors_of_each_provider_are_retried(error):
    sleeps = []
    model = Flaky(outcomes=[error, "ok"], seen=[])
    answer, call = invoke_with_retries(model, [], role="selector", call_id="i1.selector", policy=policy(sleeps))
    assert answer.content == "ok" and call.attempts == 2 and len(sleeps) == 1


@pytest.mark.parametrize(
    "error",
    [
        sdk_error("openai", "AuthenticationError"),
        sdk_error("anthropic", "BadRequestError"),
        sdk_error("google.api_core.exceptions", "PermissionDenied"),
        sdk_error("google.genai.errors", "ClientError", code=400),
        sdk_error("botocore.exceptions", "ClientError", response={"Error": {"Code": "AccessDeniedException"}}),
        sdk_error("botocore.exceptions", "NoCredentialsError"),
    ],
    ids=lambda e: f"{type(e).__module__}.{type(e).__name__}",
)
def test_fatal_errors_of_each_provider_stop_at_once(error):
    sleeps = []
    model = Flaky(outcomes=[error, "never"], seen=[])
    with pytest.raises(FatalLLMError, match="selector call i1.selector failed"):
        invoke_with_retries(model, [], role="selector", call_id="i1.selector", policy=policy(sleeps))
    assert sleeps == [] and len(model.seen) == 1
