import pytest

from agents.briefs import CandidateBrief, ProblemBrief
from agents.debugger import clip_diagnostics, debug_candidate
from agents.hypothesizer import retrieval_queries
from agents.implementer import describe_plan, implement_plan
from agents.schemas import Anchor, Plan
from agents.selector import select_parent
from agents.targets import get_target
from tests.agents.fakes import Flaky, scripted

PROBLEM = ProblemBrief(name="row_softmax", doc="Softmax over rows.", source="class Model: ...", device="cuda")
BASE = CandidateBrief(
    id="c0003", source="class ModelNew: ...", speedup=1.2, runtime_ms=0.5, roofline_fraction=0.35, bound="memory"
)
PASSAGES = [
    {"text": "Coalesced 128-byte accesses...", "source": "hopper/memory.md#coalescing", "score": 0.9},
    {"text": "Use vector loads...", "source": "cdna3/hbm.md#vector-loads", "score": 0.8},
]
CODE = (
    "import torch\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
)


def plan(title="vectorize", lo=1.1, hi=1.5, innovation=5, anchors=((1, 1),)):
    return Plan(
        title=title,
        avenue=1,
        rubric=["load 8 bf16 per thread"],
        mechanism="m",
        expected_speedup_min=lo,
        expected_speedup_max=hi,
        risk="low",
        innovation=innovation,
        anchors=[Anchor(start_line=a, end_line=b, note="loads") for a, b in anchors],
    )


# selector


def test_selector_parses_chatter_wrapped_json_and_fills_accounting():
    answer = '{"base_id": "c0003", "reference_id": "c0001", "contrast": "lineage", "rationale": "fastest"}'
    model = scripted(f"Sure!\n```json\n{answer}\n```")
    selection, call = select_parent(
        model, archive_summary="...", candidate_ids=["c0003", "c0001"], call_id="i2.selector"
    )
    assert (selection.base_id, selection.reference_id) == ("c0003", "c0001")
    assert (call.role, call.call_id, call.input_tokens, call.output_tokens) == ("selector", "i2.selector", 100, 20)
    assert call.cost_usd == pytest.approx((100 * 1.25 + 20 * 10) / 1e6) and not call.fell_back


def test_selector_feeds_back_an_unknown_id_then_recovers():
    model = Flaky(
        outcomes=['{"base_id": "c0099", "rationale": "x"}', '{"base_id": "c0001", "rationale": "ok"}'], seen=[]
    )
    selection, call = select_parent(model, archive_summary="s", candidate_ids=["c0003", "c0001"], call_id="i2.selector")
    assert selection.base_id == "c0001" and call.attempts == 2 and call.input_tokens == 200
    assert [call_id for call_id, _ in model.seen] == ["i2.selector", "i2.selector.r1"]
    feedback = model.seen[1][1][-1].content
    assert "c0099" in feedback and "c0003, c0001" in feedback


def test_selector_falls_back_to_best_and_says_so():
    model = scripted("I think c0003.", "not json {", '{"base_id": "zzz", "rationale": "r"}')
    selection, call = select_parent(
        model, archive_summary="s", candidate_ids=["c0003", "c0001"], call_id="i5.selector", best_id="c0001"
    )
    assert selection.base_id == "c0001" and "fell back" in selection.rationale
    assert call.fell_back and call.attempts == 3 and "zzz" in call.error


def test_selector_rejects_reference_equal_to_base():
    model = scripted(
        '{"base_id": "c0003", "reference_id": "c0003", "contrast": "lineage", "rationale": "r"}',
        '{"base_id": "c0003", "reference_id": null, "rationale": "r"}',
    )
    selection, call = select_parent(model, archive_summary="s", candidate_ids=["c0003"], call_id="i1.selector")
    assert selection.reference_id is None and call.attempts == 2


# hypothesizer


def test_retrieval_queries_follow_the_measured_bottleneck():
    memory = retrieval_queries(PROBLEM, BASE)
    assert any("memory-bound" in q and "35%" in q for q in memory)
    compute = retrieval_queries(
        PROBLEM.model_copy(update={"device": "cuda"}),
        BASE.model_copy(update={"bound": "compute", "roofline_fraction": 0.8}),
        get_target("mi300x"),
    )
    assert any("compute-bound" in q for q in compute) and any("CDNA3" in q and "MFMA" in q for q in compute)
    assert any("near roofline" in q for q in compute)
    hopper = retrieval_queries(PROBLEM, BASE, get_target("h100"))
    assert any("TMA" in q and "warpgroups" in q for q in hopper) and not any("CDNA3" in q for q in hopper)
    unmeasured = retrieval_queries(PROBLEM, BASE.model_copy(update={"bound": None, "roofline_fraction": None}))
    assert unmeasured and all("row softmax" in q for q in unmeasured)


# implementer and debugger


def test_implementer_extracts_source_from_chatter_and_passes_the_reference():
    model = Flaky(outcomes=[f"Here is the kernel:\n```python\n{CODE}```\nIt should be faster."], seen=[])
    source, call = implement_plan(
        model,
        problem=PROBLEM,
        base_source="BASE SRC",
        reference_source="REF SRC",
        plan=plan(),
        siblings="SIBLINGS",
        call_id="i1.s0.implementer.a0",
    )
    assert source == CODE and call.call_id == "i1.s0.implementer.a0"
    prompt = model.seen[0][1][0].content
    assert "BASE SRC" in prompt and "REF SRC" in prompt and "vectorize" in prompt and "SIBLINGS" in prompt
    assert "# >>> anchor 1: loads" in prompt and "load 8 bf16 per thread" in prompt
    borrowing = plan().model_copy(update={"from_reference": "its 64-wide tiles"})
    assert "Taken from the reference version: its 64-wide tiles" in describe_plan(borrowing)


def test_implementer_without_reference_omits_the_section_and_retries_prose():
    model = Flaky(outcomes=["I would vectorize the loads.", f"```python\n{CODE}```"], seen=[])
    source, call = implement_plan(
        model,
        problem=PROBLEM,
        base_source="B",
        reference_source=None,
        plan=plan(anchors=()),
        siblings="",
        call_id="i1.s0.implementer.a0",
    )
    assert source == CODE and call.attempts == 2
    assert "Reference version" not in model.seen[0][1][0].content
    assert "class ModelNew" in model.seen[1][1][-1].content


def test_debugger_sends_status_and_diagnostics():
    model = Flaky(outcomes=[f"Fixed the mask.\n```py\n{CODE}```"], seen=[])
    source, call = debug_candidate(
        model,
        problem=PROBLEM,
        source="BROKEN",
        diagnostics="IndexError: out of bounds",
        status="runtime_error",
        plan=plan(),
        siblings="c0004 tried tiles",
        profile="ncu: DRAM 3000 GB/s",
        call_id="i1.s0.debugger.a1",
    )
    prompt = model.seen[0][1][0].content
    assert source == CODE and "runtime_error" in prompt and "IndexError: out of bounds" in prompt and "BROKEN" in prompt
    assert "c0004 tried tiles" in prompt and "ncu: DRAM 3000 GB/s" in prompt and "lines 1-1 (loads)" in prompt


def test_long_diagnostics_keep_head_and_tail_within_bound():
    text = "first error\n" + "x" * 20_000 + "\nlast line"
    clipped = clip_diagnostics(text, limit=1000)
    assert clipped.startswith("first error") and clipped.endswith("last line") and len(clipped) < 1100


def test_debugger_sees_the_base_and_its_own_earlier_versions():
    earlier = [{"attempt": 0, "status": "compile_error", "message": "NameError: tl2", "source": "BASE\nTRY ZERO\n"}]
    model = Flaky(outcomes=[f"```python\n{CODE}```"], seen=[])
    debug_candidate(
        model,
        problem=PROBLEM,
        source="BROKEN AGAIN",
        diagnostics="still broken",
        status="compile_error",
        plan=plan(),
        siblings="",
        profile="",
        call_id="i1.s0.debugger.a2",
        base_source="BASE\n",
        attempts=earlier,
    )
    prompt = model.seen[0][1][0].content
    assert "## The base version the plan starts from\n\n```python\nBASE\n```" in prompt
    assert "version 0 (the implementer): compile_error: NameError: tl2" in prompt and "+TRY ZERO" in prompt
    assert "Do not return a version you already tried" in prompt


def test_selector_reads_the_findings():
    model = Flaky(outcomes=['{"base_id": "c0001", "reference_id": null, "rationale": "r"}'], seen=[])
    select_parent(
        model, archive_summary="ARCHIVE", findings="c0002 'tiles': lesson: held", candidate_ids=["c0001"], call_id="i2"
    )
    assert "c0002 'tiles': lesson: held" in model.seen[0][1][0].content
