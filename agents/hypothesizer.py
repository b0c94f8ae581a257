"""The hypothesizer: retrieves literature about the base's bottleneck and proposes experiments, then chooses."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.accounting import LLMCall
from agents.asking import ask_until_valid, render_prompt
from agents.briefs import CandidateBrief, ProblemBrief
from agents.errors import MalformedAnswer
from agents.parsing import extract_json
from agents.retry import RetryPolicy
from agents.schemas import HypothesisSet

ROLE = "hypothesizer"
PASSAGE_CHARS = 1200
NOTEBOOK_CITATION = "notebook"
TARGETS = {"AMD MI300 CDNA3": ("mi300", "cdna", "rocm", "hip"), "NVIDIA Hopper": ("h100", "h200", "hopper")}


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


def _describe_base(base: CandidateBrief) -> str:
    if base.roofline_fraction is None:
        return "no roofline measurement"
    return f"{base.bound or 'unknown'}-bound at {base.roofline_fraction * 100:.1f}% of the device's peak"


def parse_hypotheses(text: str, sources: list[str], n_chosen: int) -> HypothesisSet:
    """The hypothesis set in an answer; citations resolved to real passage sources, the choice count checked."""
    hypotheses = HypothesisSet.model_validate(extract_json(text))
    wanted = min(n_chosen, len(hypotheses.experiments))
    if len(hypotheses.chosen) != wanted:
        raise MalformedAnswer(f"choose exactly {wanted} experiments, not {len(hypotheses.chosen)}")
    for experiment in hypotheses.experiments:
        resolved = []
        for citation in experiment.citations:
            number = re.fullmatch(r"\[?(\d+)\]?", citation.strip())
            if number and 1 <= int(number.group(1)) <= len(sources):
                resolved.append(sources[int(number.group(1)) - 1])
            elif citation in sources or citation == NOTEBOOK_CITATION:
                resolved.append(citation)
            else:
                raise MalformedAnswer(f"citation {citation!r} in {experiment.title!r} is not a listed source")
        experiment.citations = resolved
    return hypotheses


def propose_experiments(
    model: BaseChatModel,
    *,
    problem: ProblemBrief,
    base: CandidateBrief,
    notebook: str,
    passages: list[Any],
    n_experiments: int,
    n_chosen: int,
    call_id: str,
    policy: RetryPolicy | None = None,
) -> tuple[HypothesisSet, LLMCall]:
    """Several experiments on the base, and the ones chosen by the paper's rule; raises MalformedAnswer."""
    prompt = render_prompt(
        ROLE,
        problem_name=problem.name,
        device=problem.device,
        problem_doc=problem.doc or "(no description)",
        problem_roofline=problem.roofline or "unknown",
        base_id=base.id,
        base_speedup=f"{base.speedup:.3f}x" if base.speedup is not None else "unmeasured",
        base_runtime=f"{base.runtime_ms:.4f}" if base.runtime_ms is not None else "unmeasured",
        base_roofline=_describe_base(base),
        base_source=base.source.strip(),
        notebook=notebook,
        passages=format_passages(passages),
        n_experiments=max(2, n_experiments),
        n_chosen=n_chosen,
    )
    sources = [_field(passage, "source") for passage in passages]
    return ask_until_valid(
        model, prompt, lambda text: parse_hypotheses(text, sources, n_chosen), role=ROLE, call_id=call_id, policy=policy
    )
