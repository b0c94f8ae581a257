"""Answers read as a careful person would: the expected object, never a reply that was cut off."""

import json

import pytest
from langchain_core.messages import AIMessage

from agents.asking import ask_until_valid
from agents.errors import CutOff, MalformedAnswer
from agents.parsing import answer_object, extract_json, extract_source
from agents.replies import cut_by_length
from tests.agents.fakes import USAGE, Flaky, PricedFake

CODE = (
    "import torch\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
)
ANSWER = {"base_id": "c0001", "reference_id": None, "contrast": None, "rationale": "r"}


def test_json_in_fence_in_prose_or_after_braces_in_text():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('I pick {this} one: {"a": {"b": 2}} done') == {"a": {"b": 2}}
    with pytest.raises(MalformedAnswer, match="no JSON"):
        extract_json("no json here [1, 2]")


def test_the_object_with_the_expected_keys_wins_over_earlier_dicts_and_reasoning():
    decoys = (
        '<think>Maybe {"base_id": "c9999"}; braces {like this} are thoughts.</think>\n'
        'Settings I considered:\n```python\nconfig = {"BLOCK": 1024}\n```\n'
        '```json\n{"note": "not the answer"}\n```\n'
    )
    text = decoys + f"```json\n{json.dumps(ANSWER)}\n```"
    assert extract_json(text, ("base_id",)) == ANSWER
    # Bare in prose after a dict without the keys, too.
    assert extract_json(f'Given {{"x": 1}}, my pick: {json.dumps(ANSWER)}', ("base_id",)) == ANSWER


def test_an_object_that_does_not_validate_gives_way_to_one_that_does():
    def validate(value):
        if value["base_id"] != "c0001":
            raise MalformedAnswer(f"{value['base_id']} not offered")
        return value

    text = f'Draft: {{"base_id": "nope"}}\n```json\n{json.dumps(ANSWER)}\n```'
    assert answer_object(text, ("base_id",), validate) == ANSWER
    with pytest.raises(MalformedAnswer, match="nope not offered"):
        answer_object('{"base_id": "nope"}', ("base_id",), validate)


def test_json_cut_off_is_said_to_be_cut_off():
    with pytest.raises(CutOff, match="cut off inside its JSON"):
        extract_json('```json\n{"avenues": [{"title": "fuse", "direc', ("avenues",))
    with pytest.raises(CutOff):
        extract_json('{"avenues": [{"title": "fuse"}, {"title"', ("avenues",))


def test_source_from_fenced_block_with_chatter_around():
    assert extract_source(f"Here you go:\n```python\n{CODE}```\nThis fuses the loads.") == CODE


def test_source_takes_the_last_block_defining_model_new():
    old = CODE.replace("return x", "return x * 1")
    text = f"Before:\n```python\n{old}```\nHelper:\n```python\ndef helper(): pass\n```\nFinal:\n```python\n{CODE}```"
    assert extract_source(text) == CODE


def test_a_cut_off_source_is_never_a_candidate():
    with pytest.raises(CutOff, match="no closing fence"):
        extract_source(f"```python\n{CODE}")  # parses, but the fence never closed
    with pytest.raises(CutOff, match="no closing fence"):
        extract_source(f"```python\n{CODE[:40]}")  # cut before the class was written
    with pytest.raises(CutOff, match="does not parse"):
        extract_source(f"```python\n{CODE}    def more(self, x):\n        return (x\n```")
    with pytest.raises(CutOff, match="does not parse"):
        extract_source(
            "Here:\n\nimport torch\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return (x"
        )


def test_source_without_fence_drops_leading_and_trailing_prose():
    text = f"Sure, here is the module.\n\n{CODE}\nThis should be 1.3x faster."
    assert extract_source(text) == CODE


def test_no_model_new_is_malformed():
    with pytest.raises(MalformedAnswer, match="ModelNew"):
        extract_source("```python\ndef helper(): pass\n```")
    with pytest.raises(MalformedAnswer, match="ModelNew"):
        extract_source("I would tile the loop.")


def test_stop_reasons_of_length_across_providers():
    for metadata in ({"finish_reason": "length"}, {"finish_reason": "MAX_TOKENS"}, {"stop_reason": "max_tokens"}):
        assert cut_by_length(AIMessage("x", response_metadata=metadata))
    assert not cut_by_length(AIMessage("x", response_metadata={"finish_reason": "STOP"}))
    assert not cut_by_length(AIMessage("x"))


def test_cut_off_and_empty_replies_are_re_asked_and_told_why():
    whole = f"```python\n{CODE}```"
    cut = AIMessage(whole, usage_metadata=USAGE, response_metadata={"finish_reason": "length"})
    model = PricedFake(responses=[AIMessage("", usage_metadata=USAGE), cut, AIMessage(whole, usage_metadata=USAGE)])
    source, call = ask_until_valid(
        model, "write it", extract_source, role="implementer", call_id="i1.s0.implementer.a0"
    )
    assert source == CODE and call.attempts == 3


def test_the_re_ask_says_plainly_the_reply_was_cut_off():
    model = Flaky(outcomes=[f"```python\n{CODE[:60]}", f"```python\n{CODE}```"], seen=[])
    ask_until_valid(model, "write it", extract_source, role="implementer", call_id="i1.s0.implementer.a0")
    (first_id, _), (second_id, messages) = model.seen
    assert (first_id, second_id) == ("i1.s0.implementer.a0", "i1.s0.implementer.a0.r1")
    assert messages[-1].content.startswith("Your reply was cut off before it ended")
