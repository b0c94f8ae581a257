"""The hypothesizer, the lab's experiment designer, in two stages: broad avenues, then concrete plans.

Both stages see the base and, beside it, the selector's contrasting reference (source, measurements, lineage,
the contrast and the selector's rationale), and the target architecture (`agents.targets`). Stage one
(`propose_avenues`, prompt hypothesizer_avenues.md) says what the difference between base and reference taught
(`Avenues.lesson`) and names `n_avenues` directions grounded in the retrieved passages, the findings of earlier
experiments and the base's profiler evidence, each cited. Stage two (`propose_plans`, hypothesizer_plans.md)
turns them into `n_plans` plans, each with a rubric, a min/max uplift, a risk, an innovation score, anchors in the
base source and what it borrows from the reference; `agents.choice.choose_plans` keeps the ones to run.
Call ids: f"{call_id}" as the graph gives them (f"i{n}.hypothesizer.avenues", f"i{n}.hypothesizer.plans").
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import TypeAdapter

from agents.accounting import LLMCall
from agents.anchors import numbered
from agents.asking import ask_until_valid, render_prompt
from agents.briefs import CandidateBrief, ProblemBrief
from agents.errors import MalformedAnswer
from agents.parsing import answer_object
from agents.retry import RetryPolicy
from agents.schemas import Avenue, Avenues, Plan, Selection
from agents.targets import TARGETS, Target
from kernels.speedup import format_speedup

ROLE = "hypothesizer"
PASSAGE_CHARS = 1200
# Citations that point inside the lab rather than at a passage.
INTERNAL_CITATIONS = ("findings", "profile", "notebook")
NO_REFERENCE = (
    "None this iteration (the first iteration, or a strategy that picks no reference): there is no contrasting "
    "version to learn from. Reason from the base, the findings and the literature, and answer `lesson` with null."
)
PLANS = TypeAdapter(list[Plan])


def _field(passage: Any, name: str) -> str:
    # Passages are retrieval.Passage objects; plain dicts (from JSON) work too.
    return str(passage.get(name, "") if isinstance(passage, dict) else getattr(passage, name, ""))


def retrieval_queries(problem: ProblemBrief, base: CandidateBrief, target: Target | None = None) -> list[str]:
    """Queries about the base's likely bottleneck on the target, from its measured bound and fraction of roofline.

    The last query asks the target's own documents, in its vocabulary, about that bottleneck.
    """
    target = target or TARGETS["cpu"]
    terms = target.search_terms
    topic = problem.name.replace("_", " ")
    if base.bound is None or base.roofline_fraction is None:
        return [
            f"{topic} kernel optimization {terms}",
            f"{topic} Triton kernel tiling and memory access",
            f"{target.title} kernel tuning ({topic}): {terms}",
        ]
    percent = f"{base.roofline_fraction * 100:.0f}% of peak"
    if base.bound == "memory":
        queries = [
            f"memory-bound {topic} kernel at {percent} bandwidth: coalescing, vectorized loads, fusion",
            f"raise achieved HBM bandwidth {terms}: occupancy, cache reuse, fewer passes over memory",
            f"{target.title} memory-bound kernel: bandwidth, {terms}",
        ]
    else:
        queries = [
            f"compute-bound {topic} kernel at {percent} FLOP/s: tensor cores, tile sizes, pipelining",
            f"matrix core utilization {terms}: block sizes, software pipelining, register pressure",
            f"{target.title} compute-bound kernel: {terms}",
        ]
    if base.roofline_fraction > 0.7:
        queries.append(f"{topic} near roofline: launch overhead, tail effects, fusing neighbouring operations")
    return queries


def format_passages(passages: list[Any]) -> str:
    """Passages for the prompt, each headed by its source so the model can cite it exactly."""
    if not passages:
        return "(no passages retrieved)"
    return "\n\n".join(
        f"[{n}] source: {_field(p, 'source')}\n{_field(p, 'text')[:PASSAGE_CHARS]}" for n, p in enumerate(passages, 1)
    )


def format_sources(sources: list[str]) -> str:
    """The passage sources alone, numbered as in the first stage (the plans stage does not repeat the text)."""
    listed = [f"[{n}] {source}" for n, source in enumerate(sources, 1)]
    return "\n".join(listed + [f"{', '.join(INTERNAL_CITATIONS[:2])} (the sections above)"])


def format_avenues(avenues: list[Avenue]) -> str:
    """The first stage's avenues, numbered, as the plans stage reads them."""
    return "\n".join(
        f"{n}. {avenue.title}: {avenue.direction} (sources: {', '.join(avenue.citations) or 'none'})"
        for n, avenue in enumerate(avenues, 1)
    )


def _describe_roofline(candidate: CandidateBrief) -> str:
    if candidate.roofline_fraction is None:
        return "no roofline measurement"
    return f"{candidate.bound or 'unknown'}-bound at {candidate.roofline_fraction * 100:.1f}% of the device's peak"


def _describe_shapes(candidate: CandidateBrief) -> str:
    if len(candidate.shapes) < 2:
        return ""
    shapes = ", ".join(f"{name} {format_speedup(speed)}" for name, speed in candidate.shapes.items())
    return f"Speedup per benchmark shape: {shapes}"


def measured(candidate: CandidateBrief) -> str:
    """What was measured on a candidate, in one or two lines."""
    speedup = format_speedup(candidate.speedup, missing="unmeasured")
    runtime = f"{candidate.runtime_ms:.4f} ms" if candidate.runtime_ms is not None else "unmeasured"
    line = (
        f"Measured: speedup {speedup} over the PyTorch reference, runtime {runtime}, {_describe_roofline(candidate)}."
    )
    lineage = f"\nLineage (oldest first): {candidate.lineage}" if candidate.lineage else ""
    shapes = f"\n{_describe_shapes(candidate)}" if _describe_shapes(candidate) else ""
    return line + shapes + lineage


def reference_section(reference: CandidateBrief | None, selection: Selection | None) -> str:
    """The reference beside the base: the selector's contrast and rationale, its measurements, lineage and source."""
    why = f"The selector's rationale: {selection.rationale}\n\n" if selection and selection.rationale else ""
    if reference is None:
        return f"{why}{NO_REFERENCE}"
    contrast = selection.contrast if selection and selection.contrast else "unstated"
    return (
        f"{why}Reference version {reference.id} ({contrast} contrast with the base).\n{measured(reference)}\n\n"
        f"```python\n{reference.source.strip()}\n```"
    )


def _values(
    problem: ProblemBrief,
    base: CandidateBrief,
    findings: str,
    profile: str,
    reference: CandidateBrief | None,
    selection: Selection | None,
    target: Target | None,
) -> dict[str, str]:
    target = target or TARGETS["cpu"]
    return {
        "problem_name": problem.name,
        "device": problem.device,
        "target_name": target.name,
        "target": target.describe(),
        "problem_roofline": str(problem.roofline or "unknown"),
        "base_id": base.id,
        "base_measured": measured(base),
        "reference_section": reference_section(reference, selection),
        "findings": findings,
        "profile": profile,
    }


def resolve_citations(citations: list[str], sources: list[str], owner: str) -> list[str]:
    """Citations as listed sources: "[2]" or "2" by number, a source verbatim, or one of the lab's own sections."""
    resolved = []
    for citation in citations:
        number = re.fullmatch(r"\[?(\d+)\]?", citation.strip())
        if number and 1 <= int(number.group(1)) <= len(sources):
            resolved.append(sources[int(number.group(1)) - 1])
        elif citation in sources or citation in INTERNAL_CITATIONS:
            resolved.append(citation)
        else:
            raise MalformedAnswer(f"citation {citation!r} in {owner!r} is not a listed source")
    return resolved


def _listed(answer: dict, key: str) -> list:
    if not isinstance(answer.get(key), list):
        raise MalformedAnswer(f"the answer has no {key!r} list")
    return answer[key]


def parse_avenues(text: str, sources: list[str], n_avenues: int) -> Avenues:
    """The avenues in an answer: exactly `n_avenues`, each citing a listed passage when there are any."""
    return answer_object(text, ("avenues",), lambda answer: _checked_avenues(answer, sources, n_avenues))


def _checked_avenues(answer: dict, sources: list[str], n_avenues: int) -> Avenues:
    _listed(answer, "avenues")
    found = Avenues.model_validate(answer)
    if len(found.avenues) != n_avenues:
        raise MalformedAnswer(f"write exactly {n_avenues} avenues, not {len(found.avenues)}")
    for avenue in found.avenues:
        avenue.citations = resolve_citations(avenue.citations, sources, avenue.title)
        if sources and not set(avenue.citations) & set(sources):
            raise MalformedAnswer(f"avenue {avenue.title!r} cites no listed passage; ground it in one")
    return found


def parse_plans(text: str, sources: list[str], n_plans: int, n_avenues: int, base_lines: int) -> list[Plan]:
    """The plans in an answer: exactly `n_plans`, each on a listed avenue, anchored inside the base, cited."""
    return answer_object(
        text, ("plans",), lambda answer: _checked_plans(answer, sources, n_plans, n_avenues, base_lines)
    )


def _checked_plans(answer: dict, sources: list[str], n_plans: int, n_avenues: int, base_lines: int) -> list[Plan]:
    plans = PLANS.validate_python(_listed(answer, "plans"))
    if len(plans) != n_plans:
        raise MalformedAnswer(f"write exactly {n_plans} plans, not {len(plans)}")
    for plan in plans:
        if plan.avenue is None or not 1 <= plan.avenue <= n_avenues:
            raise MalformedAnswer(f"plan {plan.title!r}: avenue {plan.avenue} is not one of 1..{n_avenues}")
        if not plan.anchors:
            raise MalformedAnswer(f"plan {plan.title!r} has no anchors in the base source")
        for anchor in plan.anchors:
            if anchor.end_line > base_lines:
                raise MalformedAnswer(
                    f"plan {plan.title!r}: anchor {anchor.start_line}-{anchor.end_line} is past the base's "
                    f"last line {base_lines}"
                )
        plan.citations = resolve_citations(plan.citations, sources, plan.title)
    return plans


def propose_avenues(
    model: BaseChatModel,
    *,
    problem: ProblemBrief,
    base: CandidateBrief,
    findings: str,
    profile: str,
    passages: list[Any],
    n_avenues: int,
    call_id: str,
    reference: CandidateBrief | None = None,
    selection: Selection | None = None,
    target: Target | None = None,
    policy: RetryPolicy | None = None,
) -> tuple[Avenues, LLMCall]:
    """Stage one: the lesson of the base/reference contrast and `n_avenues` broad, cited directions.

    Raises MalformedAnswer.
    """
    prompt = render_prompt(
        f"{ROLE}_avenues",
        **_values(problem, base, findings, profile, reference, selection, target),
        problem_doc=problem.doc or "(no description)",
        base_source=base.source.strip(),
        passages=format_passages(passages),
        n_avenues=n_avenues,
    )
    sources = [_field(passage, "source") for passage in passages]
    return ask_until_valid(
        model, prompt, lambda text: parse_avenues(text, sources, n_avenues), role=ROLE, call_id=call_id, policy=policy
    )


def propose_plans(
    model: BaseChatModel,
    *,
    problem: ProblemBrief,
    base: CandidateBrief,
    avenues: list[Avenue],
    findings: str,
    profile: str,
    passages: list[Any],
    n_plans: int,
    call_id: str,
    lesson: str | None = None,
    reference: CandidateBrief | None = None,
    selection: Selection | None = None,
    target: Target | None = None,
    policy: RetryPolicy | None = None,
) -> tuple[list[Plan], LLMCall]:
    """Stage two: `n_plans` concrete, anchored plans on the avenues, each saying what it borrows from the reference.

    Raises MalformedAnswer.
    """
    sources = [_field(passage, "source") for passage in passages]
    prompt = render_prompt(
        f"{ROLE}_plans",
        **_values(problem, base, findings, profile, reference, selection, target),
        base_numbered=numbered(base.source),
        lesson=lesson or ("(no reference this iteration)" if reference is None else "(the first stage gave none)"),
        avenues=format_avenues(avenues),
        sources=format_sources(sources),
        n_plans=n_plans,
    )
    base_lines = len(base.source.rstrip("\n").splitlines())
    return ask_until_valid(
        model,
        prompt,
        lambda text: parse_plans(text, sources, n_plans, len(avenues), base_lines),
        role=ROLE,
        call_id=call_id,
        policy=policy,
    )
