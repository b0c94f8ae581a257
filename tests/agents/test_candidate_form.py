"""The implementer and the debugger are told which form to write, and accept answers in that form only."""

from agents.briefs import ProblemBrief
from agents.debugger import debug_candidate
from agents.implementer import implement_plan
from agents.schemas import Plan
from tests.agents.fakes import Flaky

GPUMODE = ProblemBrief(name="row-scale", source="def generate_input(...): ...", format="gpumode")
KERNELBENCH = ProblemBrief(name="relu", source="class Model: ...")
SUBMISSION = "from task import input_t\n\n\ndef custom_kernel(data):\n    x, scale, out = data\n    return out\n"
PLAN = Plan(
    title="t", rubric=["c"], mechanism="m", expected_speedup_min=1.0, expected_speedup_max=1.1, risk="low", innovation=1
)


def implement(problem: ProblemBrief, model: Flaky) -> str:
    source, _ = implement_plan(
        model,
        problem=problem,
        base_source="B",
        reference_source=None,
        plan=PLAN,
        siblings="(none)",
        call_id="i1.s0.a0",
    )
    return source


def test_a_gpumode_implementer_writes_custom_kernel():
    model = Flaky(outcomes=[f"```python\n{SUBMISSION}```"], seen=[])
    assert implement(GPUMODE, model) == SUBMISSION
    prompt = model.seen[0][1][0].content
    assert "defines `custom_kernel(data)`" in prompt and "class ModelNew" not in prompt


def test_a_kernelbench_implementer_asks_again_for_modelnew():
    modelnew = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    model = Flaky(outcomes=[f"```python\n{SUBMISSION}```", f"```python\n{modelnew}```"], seen=[])
    assert implement(KERNELBENCH, model) == modelnew
    assert "defines `class ModelNew(nn.Module)`" in model.seen[0][1][0].content


def test_the_debugger_keeps_the_gpumode_form():
    model = Flaky(outcomes=[f"Fixed.\n```python\n{SUBMISSION}```"], seen=[])
    source, _ = debug_candidate(
        model,
        problem=GPUMODE,
        source="BROKEN",
        diagnostics="x",
        status="runtime_error",
        plan=PLAN,
        siblings="(none)",
        profile="(none)",
        call_id="i1.s0.d1",
    )
    assert source == SUBMISSION and "Keep the candidate's form. The module defines `custom_kernel(data)`" in (
        model.seen[0][1][0].content
    )
