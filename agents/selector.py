"""The selector: picks the base version (and optionally a contrasting reference) from the archive summary."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.asking import ask_until_valid, render_prompt
from agents.errors import MalformedAnswer
from agents.parsing import extract_json
from agents.retry import RetryPolicy
from agents.schemas import Selection

ROLE = "selector"


def parse_selection(text: str, candidate_ids: list[str]) -> Selection:
    """The selection in an answer, with ids checked against those offered."""
    selection = Selection.model_validate(extract_json(text))
    offered = ", ".join(candidate_ids)
    if selection.base_id not in candidate_ids:
        raise MalformedAnswer(f"base_id {selection.base_id!r} is not one of {offered}")
    if selection.reference_id is not None and selection.reference_id not in candidate_ids:
        raise MalformedAnswer(f"reference_id {selection.reference_id!r} is not one of {offered} (or null)")
    if selection.reference_id == selection.base_id:
        raise MalformedAnswer("reference_id must differ from base_id (or be null)")
    return selection


def select_parent(
    model: BaseChatModel,
    *,
    archive_summary: str,
    candidate_ids: list[str],
    call_id: str,
    best_id: str | None = None,
    policy: RetryPolicy | None = None,
) -> tuple[Selection, LLMCall]:
    """The base to improve next; falls back to the best (`best_id`, else the first id) if answers stay malformed."""
    if not candidate_ids:
        raise ValueError("the selector needs at least one candidate id")
    prompt = render_prompt(ROLE, archive_summary=archive_summary, candidate_ids=", ".join(candidate_ids))
    try:
        return ask_until_valid(
            model, prompt, lambda text: parse_selection(text, candidate_ids), role=ROLE, call_id=call_id, policy=policy
        )
    except MalformedAnswer as failure:
        fallback = best_id or candidate_ids[0]
        selection = Selection(
            base_id=fallback, reference_id=None, rationale=f"selector fell back to the best so far ({failure})"
        )
        return selection, failure.call.model_copy(update={"fell_back": True})
