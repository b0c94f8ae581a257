import pytest
from pydantic import ValidationError

from agents.accounting import LLMCall, cost_of, model_name, totals_by_role
from agents.schemas import Plan, Selection


def plan(**overrides):
    fields = dict(
        title="t",
        avenue=1,
        rubric=["c"],
        mechanism="m",
        expected_speedup_min=1.1,
        expected_speedup_max=1.4,
        risk="low",
        innovation=5,
        anchors=[{"start_line": 3, "end_line": 9}],
        citations=["a.md#x"],
    )
    return Plan(**(fields | overrides))


def test_selection_reference_needs_its_contrast():
    assert Selection(base_id="c0001", rationale="best").reference_id is None
    with pytest.raises(ValidationError, match="contrast"):
        Selection(base_id="c0001", reference_id="c0002", rationale="r")
    assert Selection(base_id="c0001", reference_id="c0002", contrast="shape", rationale="r").contrast == "shape"


def test_plan_rejects_inverted_range_unknown_risk_bad_innovation_and_inverted_anchor():
    with pytest.raises(ValidationError, match="exceeds"):
        plan(expected_speedup_min=2.0, expected_speedup_max=1.2)
    with pytest.raises(ValidationError):
        plan(risk="extreme")
    with pytest.raises(ValidationError):
        plan(innovation=11)
    with pytest.raises(ValidationError):
        plan(rubric=[])
    with pytest.raises(ValidationError, match="after end_line"):
        plan(anchors=[{"start_line": 9, "end_line": 3}])


def test_cost_uses_the_price_table_and_long_context_tier():
    usage = {"input_tokens": 100_000, "output_tokens": 100_000}
    assert cost_of("google_genai:gemini-2.5-pro", usage) == pytest.approx(0.125 + 1.0)
    assert cost_of("models/gemini-2.5-flash", usage) == pytest.approx(0.03 + 0.25)
    long = {"input_tokens": 300_000, "output_tokens": 0}
    assert cost_of("gemini-2.5-pro", long) == pytest.approx(0.75)
    assert cost_of("someone:unpriced", usage) == 0.0
    assert model_name("google_genai:gemini-2.5-pro") == "gemini-2.5-pro"


def test_calls_add_up_and_total_per_role():
    first = LLMCall(role="selector", call_id="i1.selector", model="m", input_tokens=10, output_tokens=2, cost_usd=0.5)
    retry = LLMCall(role="selector", call_id="i1.selector.r1", model="m", input_tokens=20, output_tokens=3, cost_usd=1)
    joined = first.plus(retry)
    assert (joined.call_id, joined.input_tokens, joined.output_tokens, joined.attempts) == ("i1.selector", 30, 5, 2)
    other = LLMCall(role="debugger", call_id="i1.s0.debugger.a1", model="m", input_tokens=7)
    totals = totals_by_role([joined, other])
    assert totals["selector"]["input_tokens"] == 30 and totals["selector"]["cost_usd"] == pytest.approx(1.5)
    assert totals["debugger"]["calls"] == 1
