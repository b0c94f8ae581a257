"""The designer's two stages, the paper's choice rule, findings in the next prompt, and the selector's contrast."""

import json

import pytest

from agents.briefs import CandidateBrief, ProblemBrief
from agents.choice import choose_plans
from agents.errors import MalformedAnswer
from agents.findings import finding_for
from agents.hypothesizer import propose_avenues, propose_plans
from agents.notebook import notebook_summary
from agents.schemas import Avenue, Plan, Selection
from agents.selector import select_parent
from kernels.archive import Archive, CandidateRecord
from tests.agents.fakes import Flaky, scripted

PROBLEM = ProblemBrief(name="row_softmax", doc="Softmax over rows.", source="class Model: ...", device="cuda")
BASE = CandidateBrief(
    id="c0003", source="line 1\nline 2\nline 3\nline 4\n", speedup=1.2, runtime_ms=0.5, roofline_fraction=0.35,
    bound="memory", shapes={"M=4096": 1.3, "M=16": 0.9},
)  # fmt: skip
PASSAGES = [
    {"text": "Coalesced 128-byte accesses...", "source": "hopper/memory.md#coalescing"},
    {"text": "Use vector loads...", "source": "cdna3/hbm.md#vector-loads"},
]
AVENUES = [Avenue(title="fuse", direction="d", citations=["hopper/memory.md#coalescing"])] * 2


def avenue_answer(n=2, citations=("[1]",)):
    return json.dumps(
        {"avenues": [{"title": f"a{i}", "direction": "d", "citations": list(citations)} for i in range(n)]}
    )


def plan_dict(title="p", avenue=1, lo=1.0, hi=1.2, innovation=5, risk="low", anchors=((1, 2),), citations=()):
    return {
        "title": title, "avenue": avenue, "rubric": ["step"], "mechanism": "m", "expected_speedup_min": lo,
        "expected_speedup_max": hi, "risk": risk, "innovation": innovation,
        "anchors": [{"start_line": a, "end_line": b, "note": "n"} for a, b in anchors], "citations": list(citations),
    }  # fmt: skip


def plans_answer(*plans):
    return json.dumps({"plans": list(plans) or [plan_dict(), plan_dict("q")]})


def avenues(model, **overrides):
    values = dict(problem=PROBLEM, base=BASE, findings="FINDINGS", profile="PROFILE", passages=PASSAGES, n_avenues=2)
    return propose_avenues(model, **(values | overrides), call_id="i1.hypothesizer.avenues")


def plans(model, **overrides):
    values = dict(problem=PROBLEM, base=BASE, avenues=AVENUES, findings="F", profile="P", passages=PASSAGES, n_plans=2)
    return propose_plans(model, **(values | overrides), call_id="i1.hypothesizer.plans")


# stage one: avenues


def test_avenues_prompt_carries_passages_findings_profile_and_shapes():
    model = Flaky(outcomes=[avenue_answer(citations=("[2]", "profile"))], seen=[])
    found, call = avenues(model)
    prompt = model.seen[0][1][0].content
    assert "source: hopper/memory.md#coalescing" in prompt and "FINDINGS" in prompt and "PROFILE" in prompt
    assert "M=4096 1.3x" in prompt and "exactly 2 distinct avenues" in prompt
    assert found.avenues[0].citations == ["cdna3/hbm.md#vector-loads", "profile"] and call.role == "hypothesizer"


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (avenue_answer(n=3), "exactly 2 avenues"),
        (avenue_answer(citations=("made-up.pdf",)), "made-up.pdf"),
        (avenue_answer(citations=("findings",)), "cites no listed passage"),
        ('{"avenues": "fuse everything"}', "avenues"),
        ("I would fuse the kernels.", "no JSON object"),
    ],
)
def test_a_malformed_avenue_answer_is_fed_back_then_fixed(bad, says):
    model = Flaky(outcomes=[bad, avenue_answer()], seen=[])
    found, call = avenues(model)
    assert len(found.avenues) == 2 and call.attempts == 2
    assert says in model.seen[1][1][-1].content


def test_avenues_may_cite_the_lab_alone_when_no_passage_was_retrieved():
    found, _ = avenues(scripted(avenue_answer(citations=("findings",))), passages=[])
    assert found.avenues[0].citations == ["findings"]


def test_avenues_raise_when_answers_stay_malformed():
    with pytest.raises(MalformedAnswer, match="exactly 2") as caught:
        avenues(scripted(avenue_answer(n=1), avenue_answer(n=1), avenue_answer(n=1)))
    assert caught.value.call.attempts == 3


# the reference beside the base


REFERENCE = CandidateBrief(
    id="c0004", source="ref line 1\nref line 2\n", speedup=1.1, runtime_ms=0.6, roofline_fraction=0.3,
    bound="memory", shapes={"M=4096": 1.0, "M=16": 1.4}, lineage="c0000 1.00x (reference) -> c0004 1.10x (tiles)",
)  # fmt: skip
CONTRAST = Selection(base_id="c0003", reference_id="c0004", contrast="shape", rationale="c0004 wins on M=16")


def test_both_stages_show_the_reference_beside_the_base_and_ask_what_the_difference_taught():
    lesson = json.loads(avenue_answer()) | {"lesson": "Tiles win on small rows."}
    model = Flaky(
        outcomes=[json.dumps(lesson), plans_answer(plan_dict(), plan_dict("q") | {"from_reference": "tiles"})]
    )
    model.seen = []
    found, _ = avenues(model, reference=REFERENCE, selection=CONTRAST)
    made, _ = plans(model, reference=REFERENCE, selection=CONTRAST, lesson=found.lesson)
    first, second = model.seen[0][1][0].content, model.seen[1][1][0].content
    for prompt in (first, second):
        assert "Reference version c0004 (shape contrast with the base)" in prompt and "ref line 2" in prompt
        assert "c0004 wins on M=16" in prompt and "M=16 1.4x" in prompt and "-> c0004 1.10x (tiles)" in prompt
    assert "what the difference between the base and the reference taught" in first
    assert found.lesson == "Tiles win on small rows." and "Tiles win on small rows." in second
    assert "`from_reference`" in second and [p.from_reference for p in made] == [None, "tiles"]


def test_interpreter_speedups_reach_the_designer_with_their_significant_figures():
    # On the CPU every speedup is a tiny interpreter ratio; two decimals wrote them all as 0.00x.
    base = BASE.model_copy(update={"speedup": 0.0012345, "shapes": {"M=4096": 0.00131, "M=16": 0.000912}})
    model = Flaky(outcomes=[avenue_answer()], seen=[])
    avenues(model, base=base)
    prompt = model.seen[0][1][0].content
    assert "speedup 0.00123x over the PyTorch reference" in prompt
    assert "M=4096 0.00131x, M=16 0.000912x" in prompt and "0.00x" not in prompt


def test_without_a_reference_the_prompts_say_so_plainly():
    model = Flaky(outcomes=[avenue_answer(), plans_answer()], seen=[])
    avenues(model)
    plans(model)
    for _, messages in model.seen:
        assert "None this iteration" in messages[0].content and "Reference version c" not in messages[0].content


# stage two: plans


def test_plans_prompt_numbers_the_base_and_lists_the_avenues():
    model = Flaky(outcomes=[plans_answer(plan_dict(citations=["[1]"]), plan_dict("q", avenue=2))], seen=[])
    found, _ = plans(model)
    prompt = model.seen[0][1][0].content
    assert "1| line 1" in prompt and "4| line 4" in prompt and "1. fuse: d" in prompt
    assert found[0].citations == ["hopper/memory.md#coalescing"] and found[1].anchors[0].end_line == 2


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (plans_answer(plan_dict(), plan_dict(avenue=3)), "not one of 1..2"),
        (plans_answer(plan_dict(), plan_dict(anchors=((2, 9),))), "past the base's last line 4"),
        (plans_answer(plan_dict(), plan_dict(anchors=())), "no anchors"),
        (plans_answer(plan_dict(), plan_dict(innovation=0)), "innovation"),
        (plans_answer(plan_dict()), "exactly 2 plans"),
    ],
)
def test_a_malformed_plan_answer_is_fed_back_then_fixed(bad, says):
    model = Flaky(outcomes=[bad, plans_answer()], seen=[])
    found, call = plans(model)
    assert len(found) == 2 and call.attempts == 2
    assert says in model.seen[1][1][-1].content


# the paper's choice rule, on hand-made plans


def make(title, lo, hi, innovation, risk="low"):
    return Plan(**plan_dict(title, lo=lo, hi=hi, innovation=innovation, risk=risk))


def test_choice_keeps_most_innovative_then_highest_maximum_then_highest_minimum():
    candidates = [
        make("safe", 1.10, 1.15, 2),
        make("bold", 0.80, 1.30, 9),
        make("big", 0.90, 2.00, 4),
        make("steady", 1.05, 1.40, 3),
        make("meh", 0.95, 1.05, 1),
    ]
    chosen = choose_plans(candidates, 3)
    assert [c.index for c in chosen] == [1, 2, 0]
    assert chosen[0].reason.startswith("most innovative") and "2x" in chosen[1].reason
    assert chosen[2].reason.startswith("highest minimum")
    # A fourth pick fills by the expected midpoint; fewer than three take the rule's parts in order.
    assert [c.index for c in choose_plans(candidates, 4)] == [1, 2, 0, 3]
    assert [c.index for c in choose_plans(candidates, 1)] == [1]


def test_choice_picks_are_distinct_and_ties_go_to_midpoint_then_risk_then_order():
    same = [make("a", 1.0, 1.1, 5, "high"), make("b", 1.0, 1.1, 5, "low"), make("c", 1.0, 1.3, 5)]
    # All equally innovative: the highest midpoint (c) wins the first pick; c is then gone for the maximum.
    assert [c.index for c in choose_plans(same, 3)] == [2, 1, 0]
    assert len({c.index for c in choose_plans(same * 2, 6)}) == 6
    assert choose_plans(same[:2], 3) == choose_plans(same[:2], 2)


# findings flow into the next prompt


def test_findings_are_written_from_the_numbers_and_read_by_the_next_design():
    archive = Archive()
    archive.add(CandidateRecord(id="c0001", source="s", status="seed", speedup=2.0))
    roofline = {"bound": "memory", "fraction": 0.81}
    experiment = plan_dict("exp2 SiLU", lo=1.02, hi=1.08)
    flat = CandidateRecord(
        id="c0002", parent_id="c0001", iteration=1, source="s", status="correct", speedup=2.01,
        experiment=experiment, eval={"roofline": roofline},
    )  # fmt: skip
    archive.add(flat)
    finding = finding_for(flat, archive.get("c0001"))
    assert "no gain (+0%) over c0001" in finding and "below its expected 1.02-1.08x" in finding
    assert "memory bound at 81% of roofline" in finding
    broken = CandidateRecord(
        id="c0003", parent_id="c0001", iteration=1, slot=1, source="s", status="incorrect", debug_attempts=2,
        experiment=plan_dict("tiles"), eval={"message": "max abs err 0.9"},
    )  # fmt: skip
    assert "the change broke the numerics" in finding_for(broken, archive.get("c0001"))
    archive.add(broken)
    stored = {"c0002": "c0002 'exp2 SiLU': no gain; the kernel is memory bound (stored)"}
    summary = notebook_summary(archive, stored)
    assert "(stored)" in summary and "iter 1, parent c0001" in summary and "broke the numerics" in summary
    model = Flaky(outcomes=[avenue_answer()], seen=[])
    avenues(model, findings=summary)
    assert "memory bound (stored)" in model.seen[0][1][0].content


def test_per_shape_split_is_a_finding():
    shapes = lambda a, b: [
        {"name": "big", "kind": "benchmark", "speedup": a},
        {"name": "small", "kind": "benchmark", "speedup": b},
    ]
    parent = CandidateRecord(id="p", source="s", status="seed", speedup=1.0, eval={"shapes": shapes(1.0, 1.0)})
    child = CandidateRecord(
        id="c", parent_id="p", source="s", status="correct", speedup=1.0, eval={"shapes": shapes(1.3, 0.8)}
    )
    assert "faster on big (+30%), slower on small (-20%)" in finding_for(child, parent)


# the selector's contrast


def test_a_claimed_contrast_must_hold_in_the_archive():
    lines = {"c0002": "c0002", "c0003": "c0002", "c0004": "c0004"}
    shapes = {"c0002": {"big": 2.0, "small": 1.0}, "c0003": {"big": 1.5, "small": 0.9}, "c0004": {"big": 1, "small": 3}}
    answers = [
        '{"base_id": "c0002", "reference_id": "c0003", "contrast": "lineage", "rationale": "r"}',
        '{"base_id": "c0002", "reference_id": "c0003", "contrast": "shape", "rationale": "r"}',
        '{"base_id": "c0002", "reference_id": "c0004", "contrast": "shape", "rationale": "small shapes"}',
    ]
    model = Flaky(outcomes=answers, seen=[])
    selection, call = select_parent(
        model, archive_summary="s", candidate_ids=list(lines), call_id="i2.selector", lines=lines, shapes=shapes
    )
    assert (selection.reference_id, selection.contrast, call.attempts) == ("c0004", "shape", 3)
    assert "same line of descent" in model.seen[1][1][-1].content
    assert "not faster than c0002 on any shape" in model.seen[2][1][-1].content


def test_findings_say_what_was_learned_and_what_was_borrowed():
    parent = CandidateRecord(id="c0002", source="s", status="correct", speedup=2.0)
    experiment = plan_dict("warps", lo=1.0, hi=1.1) | {"mechanism": "bounded registers", "from_reference": "its tiles"}
    child = CandidateRecord(
        id="c0005", parent_id="c0002", reference_id="c0003", iteration=2, source="s", status="correct", speedup=2.1,
        experiment=experiment, eval={"speedup_band": [2.08, 2.12]},
    )  # fmt: skip
    finding = finding_for(child, parent)
    assert "gained +5%" in finding and "lesson: 'bounded registers' held here: build on it" in finding
    unbanded = finding_for(child.model_copy(update={"eval": {}}), parent)
    assert "+5% over c0002 (2x -> 2.1x) with no noise band measured: not counted as a gain" in unbanded
    assert "held here" not in unbanded
    assert "it borrowed from c0003: its tiles" in finding
    slower = child.model_copy(update={"speedup": 1.5})
    assert "lesson: 'bounded registers' costs time here; do not repeat it unchanged" in finding_for(slower, parent)


def test_a_finding_says_when_the_figure_holds_the_calls_host_time():
    parent = CandidateRecord(id="c0002", source="s", status="correct", speedup=2.0)
    flags = [{"code": "timing_disputed", "severity": "soft", "text": "its process says 0.09 ms, the parent's 0.13"}]
    child = CandidateRecord(
        id="c0005", parent_id="c0002", iteration=2, source="s", status="correct", speedup=1.4,
        experiment=plan_dict("launches"), eval={"speedup_band": [1.3, 1.5], "flags": flags},
    )  # fmt: skip
    finding = finding_for(child, parent)
    assert "regressed -30%" in finding and "counts its calls' host time (launches, Python per call)" in finding
    bound = child.model_copy(update={"eval": {"speedup_band": [1.3, 1.5], "flags": [{"code": "host_bound"}]}})
    assert "longer to issue on the host than the device takes to run them" in finding_for(bound, parent)
    assert "host time" not in finding_for(child.model_copy(update={"eval": {"speedup_band": [1.3, 1.5]}}), parent)
