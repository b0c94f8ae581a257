"""Grounded edits (STARK): a plan anchors its change to regions of the base; the result is checked as a diff.

The format:
- An anchor is {"start_line", "end_line", "note"}: 1-based, inclusive line numbers of the base source as the
  plans prompt shows it (`numbered`).
- The implementer sees the base with a marker line before and after each anchored region
  (`# >>> anchor N: note` ... `# <<< anchor N`, `with_markers`); it may keep or drop them, and
  `strip_markers` removes them before the check.
- `check_edit(base, candidate, anchors)` diffs the candidate against the base. Changed base lines more than
  `SLACK` lines from every anchor are outside; blank, comment-only, docstring and import lines never count (a new
  import is part of any change, a docstring describes it). More than `ALLOWED_OUTSIDE` such lines and the edit
  strays: the graph sends it to the debugger with `EditCheck.describe()`, and the archive keeps the note.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

from agents.schemas import Anchor
from kernels import python_source

MARKER = re.compile(r"^\s*# (>>>|<<<) anchor \d+.*$")
SLACK = 3
ALLOWED_OUTSIDE = 1
DIFF_LINES = 40
NOT_COUNTED = re.compile(r"^\s*(#.*|import .*|from \S+ import .*)?$")


def numbered(source: str) -> str:
    """The source with right-aligned 1-based line numbers, as plans cite them."""
    lines = source.rstrip("\n").splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{number:>{width}}| {line}" for number, line in enumerate(lines, 1))


def with_markers(source: str, anchors: list[Anchor]) -> str:
    """The source with marker comment lines around each anchored region, indented like its first line."""
    lines = source.rstrip("\n").splitlines()
    opening: dict[int, list[str]] = {}
    closing: dict[int, list[str]] = {}
    for number, anchor in enumerate(anchors, 1):
        start, end = min(anchor.start_line, len(lines)), min(anchor.end_line, len(lines))
        indent = re.match(r"\s*", lines[start - 1]).group(0) if lines else ""
        note = f": {anchor.note}" if anchor.note else ""
        opening.setdefault(start, []).append(f"{indent}# >>> anchor {number}{note}")
        closing.setdefault(end, []).append(f"{indent}# <<< anchor {number}")
    out = []
    for number, line in enumerate(lines, 1):
        out += opening.get(number, []) + [line] + closing.get(number, [])
    return "\n".join(out) + "\n"


def strip_markers(source: str) -> str:
    """The source without anchor marker lines."""
    return "".join(line for line in source.splitlines(keepends=True) if not MARKER.match(line))


def bounded_diff(base: str, candidate: str, max_lines: int = DIFF_LINES) -> str:
    """A unified diff of candidate against base, cut to `max_lines` lines with a note of what was cut."""
    lines = list(
        difflib.unified_diff(
            base.splitlines(), strip_markers(candidate).splitlines(), "base", "candidate", n=1, lineterm=""
        )
    )[2:]
    if not lines:
        return "(no change)"
    cut = f"\n... [{len(lines) - max_lines} more diff lines]" if len(lines) > max_lines else ""
    return "\n".join(lines[:max_lines]) + cut


@dataclass
class EditCheck:
    """What the diff against the base shows: lines changed, and the changed regions outside every anchor."""

    changed: int = 0
    outside_lines: int = 0
    outside: list[tuple[int, int]] = field(default_factory=list)

    @property
    def strays(self) -> bool:
        """True when the edit changes more than a few counted lines far from every anchor."""
        return self.outside_lines > ALLOWED_OUTSIDE

    def describe(self) -> str:
        """One line for the debugger and the archive."""
        regions = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in self.outside[:6])
        return (
            f"edits outside the plan's anchors: {self.outside_lines} of {self.changed} changed lines, at base "
            f"lines {regions} (more than {SLACK} lines from every anchor)"
        )


def docstring_lines(source: str) -> set[int]:
    """0-based indices of the lines holding module, class and function docstrings (none if it does not parse)."""
    try:
        tree = python_source.parse(source)
    except SyntaxError:
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno - 1, first.end_lineno))
    return lines


def _counted(lines: list[str], start: int, docs: set[int]) -> int:
    return sum(1 for n, line in enumerate(lines, start) if n not in docs and not NOT_COUNTED.match(line))


def _near(line: int, anchors: list[Anchor]) -> bool:
    return any(anchor.start_line - SLACK <= line <= anchor.end_line + SLACK for anchor in anchors)


def check_edit(base: str, candidate: str, anchors: list[Anchor]) -> EditCheck:
    """Diff the candidate (markers stripped) against the base and measure how much of it lies outside the anchors."""
    stripped = strip_markers(candidate)
    old, new = base.splitlines(), stripped.splitlines()
    old_docs, new_docs = docstring_lines(base), docstring_lines(stripped)
    check = EditCheck()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        size = max(_counted(old[i1:i2], i1, old_docs), _counted(new[j1:j2], j1, new_docs))
        check.changed += size
        if not anchors or not size:
            continue
        # Base line numbers the hunk touches; an insertion sits between lines i1 and i1 + 1.
        touched = list(range(i1 + 1, i2 + 1)) or [i1 + 1 if i1 < len(old) else len(old)]
        far = [line for line in touched if not _near(line, anchors)]
        if far:
            check.outside_lines += round(size * len(far) / len(touched))
            check.outside.append((far[0], far[-1]))
    return check
