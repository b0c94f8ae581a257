"""The selector: picks the base version and a contrasting reference (by shape strength or lineage), and says why.

It reads the archive summary and the findings of earlier experiments (what each outcome taught).
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.asking import ask_until_valid, render_prompt
from agents.errors import MalformedAnswer
from agents.parsing import answer_object
from agents.retry import RetryPolicy
from agents.schemas import Selection

ROLE = "selector"


def check_contrast(
    selection: Selection, lines: dict[str, str] | None, shapes: dict[str, dict[str, float]] | None
) -> None:
    """A claimed contrast must hold where the archive can tell: another line, or faster on some shape."""
    base, reference = selection.base_id, selection.reference_id
    if reference is None:
        return
    if selection.contrast == "lineage" and lines and lines.get(base) == lines.get(reference):
        raise MalformedAnswer(f"{reference} is on the same line of descent as {base} ({lines[base]}); not a contrast")
    if selection.contrast == "shape" and shapes and shapes.get(base) and shapes.get(reference):
        mine, theirs = shapes[base], shapes[reference]
        if not any(theirs[name] > mine[name] for name in theirs.keys() & mine.keys()):
            raise MalformedAnswer(f"{reference} is not faster than {base} on any shape; not a shape contrast")


def parse_selection(
    text: str,
    candidate_ids: list[str],
    lines: dict[str, str] | None = None,
    shapes: dict[str, dict[str, float]] | None = None,
) -> Selection:
    """The selection in an answer, with ids checked against those offered and the contrast against the archive."""
    return answer_object(text, ("base_id",), lambda answer: _checked(answer, candidate_ids, lines, shapes))


def _checked(
    answer: dict,
    candidate_ids: list[str],
    lines: dict[str, str] | None,
    shapes: dict[str, dict[str, float]] | None,
) -> Selection:
    selection = Selection.model_validate(answer)
    offered = ", ".join(candidate_ids)
    if selection.base_id not in candidate_ids:
        raise MalformedAnswer(f"base_id {selection.base_id!r} is not one of {offered}")
    if selection.reference_id is not None and selection.reference_id not in candidate_ids:
        raise MalformedAnswer(f"reference_id {selection.reference_id!r} is not one of {offered} (or null)")
    if selection.reference_id == selection.base_id:
        raise MalformedAnswer("reference_id must differ from base_id (or be null)")
    check_contrast(selection, lines, shapes)
    return selection


def select_parent(
    model: BaseChatModel,
    *,
    archive_summary: str,
    candidate_ids: list[str],
    call_id: str,
    best_id: str | None = None,
    lines: dict[str, str] | None = None,
    shapes: dict[str, dict[str, float]] | None = None,
    findings: str = "No experiments yet.",
    policy: RetryPolicy | None = None,
) -> tuple[Selection, LLMCall]:
    """The base to improve next; falls back to the best (`best_id`, else the first id) if answers stay malformed.

    `lines` (id -> line of descent) and `shapes` (id -> speedup per shape) let a claimed contrast be checked.
    """
    if not candidate_ids:
        raise ValueError("the selector needs at least one candidate id")
    prompt = render_prompt(
        ROLE, archive_summary=archive_summary, findings=findings, candidate_ids=", ".join(candidate_ids)
    )
    try:
        return ask_until_valid(
            model,
            prompt,
            lambda text: parse_selection(text, candidate_ids, lines, shapes),
            role=ROLE,
            call_id=call_id,
            policy=policy,
        )
    except MalformedAnswer as failure:
        fallback = best_id or candidate_ids[0]
        selection = Selection(
            base_id=fallback, reference_id=None, rationale=f"selector fell back to the best so far ({failure})"
        )
        return selection, failure.call.model_copy(update={"fell_back": True})
