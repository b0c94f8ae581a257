"""Pull the answer out of a model's reply: a JSON object, or a complete candidate source, around any chatter."""

from __future__ import annotations

import ast
import json
import re

from agents.errors import MalformedAnswer

# An opening fence with an optional language tag; the closing fence may be missing when a reply is cut off.
FENCE = re.compile(r"^```[ \t]*([\w+#-]*)[ \t]*\n(.*?)(?:^```[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
CODE_START = re.compile(r"^(import |from |#|@|class |def |\"\"\"|[A-Za-z_][\w, ]* = )")
ENTRY_CLASS = "class ModelNew"  # what a candidate's source must contain (a GPU MODE one: "def custom_kernel")


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(match.group(1).lower(), match.group(2)) for match in FENCE.finditer(text)]


def extract_json(text: str) -> dict:
    """The first JSON object in a reply: fenced blocks first, then anywhere in the text."""
    candidates = [body for _, body in fenced_blocks(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (index for index, char in enumerate(candidate) if char == "{"):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise MalformedAnswer("no JSON object found in the answer")


def _trim_to_python(text: str, entry: str) -> str:
    """Unfenced code: drop prose before the first code line and after the last line that still parses."""
    lines = text.splitlines()
    first = next((index for index, line in enumerate(lines) if CODE_START.match(line)), 0)
    lines = lines[first:]
    for end in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:end])
        if entry not in candidate:
            break
        try:
            ast.parse(candidate)
        except SyntaxError:
            continue
        return candidate.rstrip() + "\n"
    return "\n".join(lines).rstrip() + "\n"


def extract_source(text: str, entry: str = ENTRY_CLASS) -> str:
    """The complete candidate source in a reply: the last fenced block holding `entry`, else the bare code."""
    with_entry = [body for _, body in fenced_blocks(text) if entry in body]
    if with_entry:
        # When a reply shows several versions, the last one is the answer it settled on.
        return with_entry[-1].rstrip() + "\n"
    if fenced_blocks(text) or entry not in text:
        raise MalformedAnswer(f"the answer has no complete source defining `{entry}`")
    return _trim_to_python(text, entry)
