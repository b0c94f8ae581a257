"""The implementer: writes the complete candidate source (ModelNew) carrying out one plan on the base.

The base is shown with marker lines around the plan's anchored regions (agents.anchors), beside the siblings'
attempts from the same base (agents.siblings); the graph checks the result as a diff against the base.
"""

from __future__ import annotations

from functools import partial

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.anchors import with_markers
from agents.asking import ask_until_valid, render_prompt
from agents.briefs import ProblemBrief
from agents.parsing import extract_source
from agents.retry import RetryPolicy
from agents.schemas import Plan

ROLE = "implementer"
ANCHOR_NOTE = (
    "The plan's anchored regions are marked `# >>> anchor N` ... `# <<< anchor N`; change the code between the "
    "markers (you may drop the marker lines)."
)


def describe_plan(plan: Plan) -> str:
    """The plan as the implementer and the debugger read it."""
    steps = "\n".join(f"{n}. {step}" for n, step in enumerate(plan.rubric, 1))
    anchors = "; ".join(f"lines {a.start_line}-{a.end_line} ({a.note or 'no note'})" for a in plan.anchors)
    borrowed = f"Taken from the reference version: {plan.from_reference}\n\n" if plan.from_reference else ""
    return (
        f"{plan.title}\n\nRubric:\n{steps}\n\nWhy: {plan.mechanism}\n\n{borrowed}"
        f"Expected speedup over the base: {plan.expected_speedup_min}-{plan.expected_speedup_max}x "
        f"(risk {plan.risk}).\n\nAnchors in the base: {anchors or 'none: the whole module may change'}"
    )


def implement_plan(
    model: BaseChatModel,
    *,
    problem: ProblemBrief,
    base_source: str,
    reference_source: str | None,
    plan: Plan,
    siblings: str,
    call_id: str,
    policy: RetryPolicy | None = None,
) -> tuple[str, LLMCall]:
    """The full ModelNew source for the plan; raises MalformedAnswer if no source can be extracted."""
    reference_section = (
        f"\n## Reference version (a contrasting earlier candidate; borrow from it where it helps)\n\n"
        f"```python\n{reference_source.strip()}\n```\n"
        if reference_source
        else ""
    )
    prompt = render_prompt(
        ROLE,
        problem_name=problem.name,
        device=problem.device,
        problem_source=problem.source.strip(),
        candidate_form=problem.candidate_form,
        anchor_note=ANCHOR_NOTE if plan.anchors else "The plan names no anchors: any part of the module may change.",
        base_source=with_markers(base_source, plan.anchors).strip(),
        reference_section=reference_section,
        plan=describe_plan(plan),
        siblings=siblings,
    )
    parse = partial(extract_source, entry=problem.candidate_entry)
    return ask_until_valid(model, prompt, parse, role=ROLE, call_id=call_id, policy=policy)
