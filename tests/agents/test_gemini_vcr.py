"""The Gemini path through the real ChatGoogleGenerativeAI class, replaying hand-authored HTTP cassettes (VCR)."""

from pathlib import Path

import pytest
import vcr as vcrpy

from agents.errors import FatalLLMError
from agents.models import make_chat_model
from agents.retry import RetryPolicy
from agents.selector import select_parent

CASSETTES = Path(__file__).parents[1] / "cassettes" / "gemini"
NO_WAIT = RetryPolicy(max_attempts=3, sleep=lambda seconds: None)


@pytest.fixture(scope="module")
def vcr_config():
    return {"filter_headers": ["x-goog-api-key"], "record_mode": "none"}


@pytest.fixture(scope="module")
def vcr_cassette_dir():
    return str(CASSETTES)


@pytest.fixture
def gemini(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "not-a-real-key")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    return make_chat_model("google_genai:gemini-2.5-pro", role="selector")


def choose(model):
    return select_parent(
        model, archive_summary="...", candidate_ids=["c0004", "c0002", "c0001"], call_id="i3.selector", policy=NO_WAIT
    )


@pytest.mark.vcr("selector_generate_content.yaml")
def test_selector_through_gemini_rest(gemini, vcr):
    selection, call = choose(gemini)
    assert (selection.base_id, selection.reference_id) == ("c0004", "c0002")
    assert vcr.play_count == 1 and vcr.requests[0].headers.get("x-goog-api-key") is None
    # Thinking tokens are billed as output: 61 answer + 518 thinking.
    assert (call.model, call.input_tokens, call.output_tokens) == ("gemini-2.5-pro", 812, 579)
    assert call.cost_usd == pytest.approx((812 * 1.25 + 579 * 10) / 1e6)


@pytest.mark.vcr("rate_limited_then_ok.yaml")
def test_rate_limit_then_success_is_retried_by_us_not_the_sdk(gemini, vcr):
    selection, call = choose(gemini)
    assert selection.base_id == "c0001"
    assert vcr.play_count == 2 and call.attempts == 2


@pytest.mark.parametrize("status", ["401", "403"])
def test_auth_errors_end_the_run_without_retry(gemini, status):
    with vcrpy.use_cassette(
        str(CASSETTES / f"auth_error_{status}.yaml"), record_mode="none", filter_headers=["x-goog-api-key"]
    ) as cassette:
        with pytest.raises(
            FatalLLMError, match=rf"selector call i3.selector failed \(check the provider.s API key\): .*{status}"
        ) as caught:
            choose(gemini)
    assert cassette.play_count == 1 and "\n" not in str(caught.value)
