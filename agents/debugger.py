"""The debugger: returns a fixed source from the one sent back (failed, or off its anchors) and the diagnostics."""

from __future__ import annotations

from functools import partial

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.asking import ask_until_valid, render_prompt
from agents.briefs import ProblemBrief
from agents.implementer import describe_plan
from agents.parsing import extract_source
from agents.retry import RetryPolicy
from agents.schemas import Plan

ROLE = "debugger"
DIAGNOSTICS_CHARS = 6000


def clip_diagnostics(diagnostics: str, limit: int = DIAGNOSTICS_CHARS) -> str:
    """Long diagnostics keep their head (the first error) and tail (the traceback's end), bounding the prompt."""
    text = diagnostics.strip() or "(no diagnostics)"
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"


def debug_candidate(
    model: BaseChatModel,
    *,
    problem: ProblemBrief,
    source: str,
    diagnostics: str,
    status: str,
    plan: Plan,
    siblings: str,
    profile: str,
    call_id: str,
    policy: RetryPolicy | None = None,
) -> tuple[str, LLMCall]:
    """A fixed ModelNew source; raises MalformedAnswer if no source can be extracted."""
    prompt = render_prompt(
        ROLE,
        problem_name=problem.name,
        device=problem.device,
        problem_source=problem.source.strip(),
        candidate_form=problem.candidate_form,
        plan=describe_plan(plan),
        source=source.strip(),
        status=status,
        diagnostics=clip_diagnostics(diagnostics),
        siblings=siblings,
        profile=profile,
    )
    parse = partial(extract_source, entry=problem.candidate_entry)
    return ask_until_valid(model, prompt, parse, role=ROLE, call_id=call_id, policy=policy)
