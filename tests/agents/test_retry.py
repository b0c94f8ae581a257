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


def test_unknown_errors_propagate_unchanged():
    model = Flaky(outcomes=[KeyError("bug")], seen=[])
    with pytest.raises(KeyError):
        invoke_with_retries(model, [], role="selector", call_id="x", policy=policy([]))
