"""Pull the answer out of a model's reply as a careful reader would; a reply cut off before its end is never taken.

The answer is the JSON object with the expected keys, or a complete candidate source.

- Reasoning blocks (`<think>...</think>` and the like) are set aside first: drafts there are not the answer.
- `answer_object(text, keys, validate)`: the first object holding `keys` that `validate` accepts, looking in fenced
  json blocks, then other fenced blocks, then anywhere in the text; braces elsewhere do not hide it.
- `extract_source(text, entry)`: the last fenced block defining `entry`, else the bare code. A block without its
  closing fence, or one that does not parse, raises `CutOff`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import ValidationError

from agents.errors import CutOff, MalformedAnswer
from kernels import python_source

# An opening fence with an optional language tag; the closing fence may be missing when a reply is cut off.
FENCE = re.compile(r"^```[ \t]*([\w+#-]*)[ \t]*\n(.*?)(^```[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
REASONING = re.compile(r"<(think|thinking|reasoning|thought)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
CODE_START = re.compile(r"^(import |from |#|@|class |def |\"\"\"|[A-Za-z_][\w, ]* = )")
ENTRY_CLASS = "class ModelNew"  # what a candidate's source must contain (a GPU MODE one: "def custom_kernel")
Answer = TypeVar("Answer")


@dataclass(frozen=True)
class Block:
    """One fenced block of a reply: its language tag, its body, and whether its closing fence arrived."""

    language: str
    body: str
    closed: bool


def without_reasoning(text: str) -> str:
    """The reply with its reasoning blocks removed (an unclosed one runs to the end)."""
    return REASONING.sub("", text)


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block, in order."""
    return [Block(m.group(1).lower(), m.group(2), bool(m.group(3))) for m in FENCE.finditer(text)]


def _objects(text: str) -> list[dict]:
    decoder, found, end = json.JSONDecoder(), [], 0
    for start in (index for index, char in enumerate(text) if char == "{"):
        if start < end:
            continue  # inside an object already found
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def json_objects(text: str, keys: tuple[str, ...] = ()) -> list[dict]:
    """Objects holding every key in `keys`: fenced json blocks first, then other blocks, then the rest of the text."""
    text = without_reasoning(text)
    blocks = fenced_blocks(text)
    places = [b.body for b in blocks if b.language == "json"] + [b.body for b in blocks if b.language != "json"]
    places.append(FENCE.sub("", text))
    objects = [value for place in places for value in _objects(place)]
    return [value for value in objects if all(key in value for key in keys)]


def extract_json(text: str, keys: tuple[str, ...] = ()) -> dict:
    """The first JSON object in a reply that holds `keys` (any object when none are named)."""
    return answer_object(text, keys, lambda value: value)


def _cut_inside_json(text: str) -> bool:
    text = without_reasoning(text)
    return any(b.language == "json" and not b.closed for b in fenced_blocks(text)) or text.count("{") > text.count("}")


def answer_object(text: str, keys: tuple[str, ...], validate: Callable[[dict], Answer]) -> Answer:
    """The first object holding `keys` that `validate` accepts; the first one's error when none does."""
    first_error: Exception | None = None
    for value in json_objects(text, keys):
        try:
            return validate(value)
        except (MalformedAnswer, ValidationError, ValueError) as error:
            first_error = first_error or error
    if _cut_inside_json(text):
        raise CutOff("the reply was cut off inside its JSON object")
    if first_error is not None:
        raise first_error
    wanted = f" with the keys {', '.join(keys)}" if keys else ""
    raise MalformedAnswer(f"no JSON object{wanted} found in the answer")


def _parses(source: str) -> SyntaxError | None:
    try:
        python_source.parse(source)
    except SyntaxError as error:
        return error
    return None


def _trim_to_python(text: str, entry: str) -> str:
    """Unfenced code: drop prose before the first code line and after the last line that still parses."""
    lines = text.splitlines()
    first = next((index for index, line in enumerate(lines) if CODE_START.match(line)), 0)
    lines = lines[first:]
    for end in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:end])
        if entry not in candidate:
            break
        if _parses(candidate) is None:
            return candidate.rstrip() + "\n"
    raise CutOff("the reply's code does not parse as Python: it looks cut off")


def extract_source(text: str, entry: str = ENTRY_CLASS) -> str:
    """The complete candidate source in a reply: the last fenced block holding `entry`, else the bare code."""
    text = without_reasoning(text)
    blocks = fenced_blocks(text)
    with_entry = [block for block in blocks if entry in block.body]
    if with_entry:
        # When a reply shows several versions, the last one is the answer it settled on.
        block = with_entry[-1]
        if not block.closed:
            raise CutOff("the reply was cut off: its code block has no closing fence")
        error = _parses(block.body)
        if error is not None:
            raise CutOff(
                f"the code does not parse (SyntaxError at line {error.lineno}: {error.msg}); the reply looks cut "
                "off, or the code has a syntax error"
            )
        return block.body.rstrip() + "\n"
    if blocks and not blocks[-1].closed:
        raise CutOff(f"the reply was cut off: its last code block has no closing fence and no `{entry}` yet")
    if blocks or entry not in text:
        raise MalformedAnswer(f"the answer has no complete source defining `{entry}`")
    return _trim_to_python(text, entry)
