"""Grounded edits: anchors shown to the implementer, the diff check against the base, and the siblings' digest."""

from agents.anchors import bounded_diff, check_edit, numbered, strip_markers, with_markers
from agents.implementer import implement_plan
from agents.schemas import Anchor, Plan
from agents.siblings import sibling_digest
from kernels.archive import Archive, CandidateRecord
from tests.agents.fakes import Flaky

BASE = "\n".join(
    ['"""A kernel."""', "import torch", "", "def load(x):", "    y = x * 2", "    return y", ""]
    + [f"CONSTANT_{n} = {n}" for n in range(20)]
    + ["", "def launch(x):", "    return load(x) + 1", ""]
)
LOAD = [Anchor(start_line=4, end_line=6, note="the load")]
CODE = "import torch\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    pass\n"


def edit(source: str, old: str, new: str) -> str:
    assert old in source
    return source.replace(old, new)


def test_markers_wrap_each_anchor_and_strip_back_to_the_source():
    marked = with_markers(BASE, LOAD)
    assert "# >>> anchor 1: the load\ndef load(x):" in marked and "    return y\n# <<< anchor 1" in marked
    assert strip_markers(marked) == BASE.rstrip("\n") + "\n"
    assert numbered(BASE).splitlines()[3] == " 4| def load(x):"


def test_an_edit_inside_its_anchor_passes_with_a_new_import_and_docstring():
    candidate = edit(BASE, "    y = x * 2", "    y = x * 2\n    y = y.contiguous()")
    candidate = edit(candidate, '"""A kernel."""', '"""A faster kernel."""\nimport triton')
    check = check_edit(BASE, with_markers(candidate, LOAD), LOAD)
    assert not check.strays and check.outside_lines == 0 and check.changed == 1


def test_an_edit_far_outside_the_anchors_strays_and_says_where():
    candidate = edit(BASE, "    return load(x) + 1", "    out = load(x)\n    return out + 1")
    candidate = edit(candidate, "CONSTANT_10 = 10", "CONSTANT_10 = 11")
    check = check_edit(BASE, candidate, LOAD)
    assert check.strays and check.outside_lines == 3
    assert "outside the plan's anchors" in check.describe() and "base lines 18, 30" in check.describe()
    # One stray line is tolerated; no anchors means the plan allowed any change.
    assert not check_edit(BASE, edit(BASE, "CONSTANT_10 = 10", "CONSTANT_10 = 11"), LOAD).strays
    assert not check_edit(BASE, candidate, []).strays


def test_bounded_diff_is_cut_with_a_note():
    candidate = "\n".join(f"new {n}" for n in range(100))
    diff = bounded_diff(BASE, candidate, max_lines=10)
    assert len(diff.splitlines()) == 11 and "more diff lines" in diff
    assert bounded_diff(BASE, BASE) == "(no change)"


def sibling(n: int, parent: str, status: str, speedup=None) -> CandidateRecord:
    plan = {"title": f"idea {n}", "rubric": [f"step of idea {n}"], "expected_speedup_min": 1.0}
    plan["expected_speedup_max"] = 1.2
    source = edit(BASE, "    y = x * 2", f"    y = x * {n + 2}")
    return CandidateRecord(
        id=f"c{n:04d}", parent_id=parent, iteration=n, source=source, status=status, speedup=speedup, experiment=plan
    )


def test_siblings_show_plan_diff_and_outcome_within_a_budget_and_reach_the_implementer():
    archive = Archive()
    archive.add(CandidateRecord(id="c0000", source=BASE, status="seed", speedup=1.0))
    for n in range(1, 6):
        archive.add(sibling(n, "c0000", "correct" if n % 2 else "compile_error", 1.1 if n % 2 else None))
    archive.add(sibling(6, "c0001", "correct", 1.3))  # a grandchild: not a sibling of c0000's children
    digest = sibling_digest(archive, "c0000", {"c0005": "c0005: gained +10% (stored finding)"}, concurrent=["tiles"])
    assert "right now: tiles" in digest and "step of idea 5" in digest and "(stored finding)" in digest
    assert "+    y = x * 7" in digest and "idea 6" not in digest
    assert "c0004" in digest and "compile_error" in digest and "2 earlier attempts from this base not shown" in digest
    assert len(sibling_digest(archive, "c0000", {}, budget_chars=600)) < 900
    model = Flaky(outcomes=[f"```python\n{CODE}```"], seen=[])
    plan = Plan(
        title="t", avenue=1, rubric=["r"], mechanism="m", expected_speedup_min=1, expected_speedup_max=1.1,
        risk="low", innovation=3, anchors=LOAD,
    )  # fmt: skip
    implement_plan(
        model, problem=_problem(), base_source=BASE, reference_source=None, plan=plan, siblings=digest, call_id="x"
    )
    assert "step of idea 5" in model.seen[0][1][0].content


def _problem():
    from agents.briefs import ProblemBrief

    return ProblemBrief(name="p", source="class Model: ...")
