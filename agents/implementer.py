"""The implementer: writes the complete candidate source (ModelNew) carrying out one experiment."""

from __future__ import annotations

from functools import partial

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.asking import ask_until_valid, render_prompt
from agents.briefs import ProblemBrief
from agents.parsing import extract_source
from agents.retry import RetryPolicy
from agents.schemas import Experiment

ROLE = "implementer"


def describe_experiment(experiment: Experiment) -> str:
    """The experiment as the implementer reads it."""
    return (
        f"{experiment.title}\n\nChange: {experiment.change}\n\nWhy: {experiment.mechanism}\n\n"
        f"Expected speedup over the base: {experiment.expected_speedup_min}-{experiment.expected_speedup_max}x "
        f"(risk {experiment.risk})."
    )


def implement_experiment(
    model: BaseChatModel,
    *,
    problem: ProblemBrief,
    base_source: str,
    reference_source: str | None,
    experiment: Experiment,
    call_id: str,
    policy: RetryPolicy | None = None,
) -> tuple[str, LLMCall]:
    """The full ModelNew source for the experiment; raises MalformedAnswer if no source can be extracted."""
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
        base_source=base_source.strip(),
        reference_section=reference_section,
        experiment=describe_experiment(experiment),
    )
    parse = partial(extract_source, entry=problem.candidate_entry)
    return ask_until_valid(model, prompt, parse, role=ROLE, call_id=call_id, policy=policy)
