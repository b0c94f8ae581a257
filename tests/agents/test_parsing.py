import pytest

from agents.errors import MalformedAnswer
from agents.parsing import extract_json, extract_source

CODE = (
    "import torch\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
)


def test_json_in_fence_in_prose_or_after_braces_in_text():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('I pick {this} one: {"a": {"b": 2}} done') == {"a": {"b": 2}}
    with pytest.raises(MalformedAnswer, match="no JSON"):
        extract_json("no json here [1, 2]")


def test_source_from_fenced_block_with_chatter_around():
    assert extract_source(f"Here you go:\n```python\n{CODE}```\nThis fuses the loads.") == CODE


def test_source_takes_the_last_block_defining_model_new():
    old = CODE.replace("return x", "return x * 1")
    text = f"Before:\n```python\n{old}```\nHelper:\n```python\ndef helper(): pass\n```\nFinal:\n```python\n{CODE}```"
    assert extract_source(text) == CODE


def test_source_from_an_unclosed_fence_as_when_output_is_cut():
    assert extract_source(f"```python\n{CODE}") == CODE


def test_source_without_fence_drops_leading_and_trailing_prose():
    text = f"Sure, here is the module.\n\n{CODE}\nThis should be 1.3x faster."
    assert extract_source(text) == CODE


def test_no_model_new_is_malformed():
    with pytest.raises(MalformedAnswer, match="ModelNew"):
        extract_source("```python\ndef helper(): pass\n```")
    with pytest.raises(MalformedAnswer, match="ModelNew"):
        extract_source("I would tile the loop.")
