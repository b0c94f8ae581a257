import pytest
from pydantic import ValidationError

from agents.accounting import LLMCall, cost_of, model_name, totals_by_role
from agents.schemas import Experiment, HypothesisSet, Selection


def experiment(**overrides):
    fields = dict(
        title="t",
        change="c",
        mechanism="m",
        expected_speedup_min=1.1,
        expected_speedup_max=1.4,
        risk="low",
        citations=["a.md#x"],
    )
    return Experiment(**(fields | overrides))


def test_selection_reference_is_optional():
    assert Selection(base_id="c0001", rationale="best").reference_id is None


def test_experiment_rejects_inverted_range_and_unknown_risk():
    with pytest.raises(ValidationError, match="exceeds"):
        experiment(expected_speedup_min=2.0, expected_speedup_max=1.2)
    with pytest.raises(ValidationError):
        experiment(risk="extreme")


def test_hypothesis_set_needs_two_experiments_and_valid_unique_indices():
    two = [experiment(), experiment(title="u")]
    assert HypothesisSet(experiments=two, chosen=[1], choice_rule="r").chosen_experiments[0].title == "u"
    with pytest.raises(ValidationError):
        HypothesisSet(experiments=two[:1], chosen=[0], choice_rule="r")
    with pytest.raises(ValidationError, match="out of range"):
        HypothesisSet(experiments=two, chosen=[2], choice_rule="r")
    with pytest.raises(ValidationError, match="out of range"):
        HypothesisSet(experiments=two, chosen=[-1], choice_rule="r")
    with pytest.raises(ValidationError, match="repeat"):
        HypothesisSet(experiments=two, chosen=[0, 0], choice_rule="r")


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
