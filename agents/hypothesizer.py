"""The hypothesizer, the lab's experiment designer, in two stages: broad avenues, then concrete plans.

Stage one (`propose_avenues`, prompt hypothesizer_avenues.md) names `n_avenues` directions grounded in the
retrieved passages, the findings of earlier experiments and the base's profiler evidence, each cited. Stage two
(`propose_plans`, hypothesizer_plans.md) turns them into `n_plans` plans, each with a rubric, a min/max uplift,
a risk, an innovation score and anchors in the base source; `agents.choice.choose_plans` keeps the ones to run.
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
from agents.parsing import extract_json
from agents.retry import RetryPolicy
from agents.schemas import Avenue, Plan

ROLE = "hypothesizer"
PASSAGE_CHARS = 1200
# Citations that point inside the lab rather than at a passage.
INTERNAL_CITATIONS = ("findings", "profile", "notebook")
TARGETS = {"AMD MI300 CDNA3": ("mi300", "cdna", "rocm", "hip"), "NVIDIA Hopper": ("h100", "h200", "hopper")}
AVENUES = TypeAdapter(list[Avenue])
PLANS = TypeAdapter(list[Plan])


def _field(passage: Any, name: str) -> str:
    # Passages are retrieval.Passage objects; plain dicts (from JSON) work too.
    return str(passage.get(name, "") if isinstance(passage, dict) else getattr(passage, name, ""))


def retrieval_queries(problem: ProblemBrief, base: CandidateBrief) -> list[str]:
    """Queries about the base's likely bottleneck, from its measured bound and fraction of roofline."""
    device = problem.device.lower()
    target = next((name for name, marks in TARGETS.items() if any(mark in device for mark in marks)), "GPU")
    topic = problem.name.replace("_", " ")
    if base.bound is None or base.roofline_fraction is None:
        return [f"{topic} kernel optimization {target}", f"{topic} Triton kernel tiling and memory access"]
    percent = f"{base.roofline_fraction * 100:.0f}% of peak"
    if base.bound == "memory":
        queries = [
            f"memory-bound {topic} kernel at {percent} bandwidth: coalescing, vectorized loads, fusion",
            f"raise achieved HBM bandwidth {target}: occupancy, cache reuse, fewer passes over memory",
        ]
    else:
        queries = [
            f"compute-bound {topic} kernel at {percent} FLOP/s: tensor cores, tile sizes, pipelining",
            f"matrix core utilization {target}: block sizes, software pipelining, register pressure",
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


def _describe_base(base: CandidateBrief) -> str:
    if base.roofline_fraction is None:
        return "no roofline measurement"
    return f"{base.bound or 'unknown'}-bound at {base.roofline_fraction * 100:.1f}% of the device's peak"


def _describe_shapes(base: CandidateBrief) -> str:
    if len(base.shapes) < 2:
        return ""
    return "Speedup per benchmark shape: " + ", ".join(f"{name} {speed:.2f}x" for name, speed in base.shapes.items())


def _base_values(problem: ProblemBrief, base: CandidateBrief, findings: str, profile: str) -> dict[str, str]:
    return {
        "problem_name": problem.name,
        "device": problem.device,
        "problem_roofline": str(problem.roofline or "unknown"),
        "base_id": base.id,
        "base_speedup": f"{base.speedup:.3f}x" if base.speedup is not None else "unmeasured",
        "base_runtime": f"{base.runtime_ms:.4f}" if base.runtime_ms is not None else "unmeasured",
        "base_roofline": _describe_base(base),
        "base_shapes": _describe_shapes(base),
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


def _items(text: str, key: str) -> list:
    answer = extract_json(text)
    if not isinstance(answer.get(key), list):
        raise MalformedAnswer(f"the answer has no {key!r} list")
    return answer[key]


def parse_avenues(text: str, sources: list[str], n_avenues: int) -> list[Avenue]:
    """The avenues in an answer: exactly `n_avenues`, each citing a listed passage when there are any."""
    avenues = AVENUES.validate_python(_items(text, "avenues"))
    if len(avenues) != n_avenues:
        raise MalformedAnswer(f"write exactly {n_avenues} avenues, not {len(avenues)}")
    for avenue in avenues:
        avenue.citations = resolve_citations(avenue.citations, sources, avenue.title)
        if sources and not set(avenue.citations) & set(sources):
            raise MalformedAnswer(f"avenue {avenue.title!r} cites no listed passage; ground it in one")
    return avenues


def parse_plans(text: str, sources: list[str], n_plans: int, n_avenues: int, base_lines: int) -> list[Plan]:
    """The plans in an answer: exactly `n_plans`, each on a listed avenue, anchored inside the base, cited."""
    plans = PLANS.validate_python(_items(text, "plans"))
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
    policy: RetryPolicy | None = None,
) -> tuple[list[Avenue], LLMCall]:
    """Stage one: `n_avenues` broad, cited directions; raises MalformedAnswer."""
    prompt = render_prompt(
        f"{ROLE}_avenues",
        **_base_values(problem, base, findings, profile),
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
    policy: RetryPolicy | None = None,
) -> tuple[list[Plan], LLMCall]:
    """Stage two: `n_plans` concrete, anchored plans on the avenues; raises MalformedAnswer."""
    sources = [_field(passage, "source") for passage in passages]
    prompt = render_prompt(
        f"{ROLE}_plans",
        **_base_values(problem, base, findings, profile),
        base_numbered=numbered(base.source),
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
