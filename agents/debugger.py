"""The debugger: returns a fixed source from the one sent back (failed, or off its anchors) and the diagnostics.

It sees the base the plan starts from (to confine a stray edit to the anchors) and its own earlier attempts on
this candidate (`earlier_attempts`: each one's diff against the base and how it ended), so it does not repeat one.
"""

from __future__ import annotations

from functools import partial

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.anchors import bounded_diff
from agents.asking import ask_until_valid, render_prompt
from agents.briefs import ProblemBrief
from agents.implementer import describe_plan
from agents.parsing import extract_source
from agents.retry import RetryPolicy
from agents.schemas import Plan
from agents.text import clip

ROLE = "debugger"
DIAGNOSTICS_CHARS = 6000
ATTEMPT_DIFF_LINES = 30


def clip_diagnostics(diagnostics: str, limit: int = DIAGNOSTICS_CHARS) -> str:
    """Long diagnostics keep their head (the first error) and tail (the traceback's end), bounding the prompt."""
    text = diagnostics.strip() or "(no diagnostics)"
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters cut] ...\n{text[-half:]}"


def earlier_attempts(base_source: str, attempts: list[dict]) -> str:
    """The candidate's earlier versions ({"attempt", "status", "message", "source"}): diff against the base, outcome."""
    if not attempts:
        return "None: this is the first repair of this candidate."
    return "\n".join(
        f"- version {a['attempt']} ({'the implementer' if a['attempt'] == 0 else 'your repair'}): {a['status']}: "
        f"{clip(a.get('message'), 240)}\n```diff\n{bounded_diff(base_source, a['source'], ATTEMPT_DIFF_LINES)}\n```"
        for a in attempts
    )


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
    base_source: str = "",
    attempts: list[dict] | None = None,
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
        base_source=base_source.strip() or "(not given)",
        earlier=earlier_attempts(base_source, attempts or []),
        status=status,
        diagnostics=clip_diagnostics(diagnostics),
        siblings=siblings,
        profile=profile,
    )
    parse = partial(extract_source, entry=problem.candidate_entry)
    return ask_until_valid(model, prompt, parse, role=ROLE, call_id=call_id, policy=policy)
