"""Red team, the output handoff: what the reference loads from the candidate's sealed files, and what a candidate
can reach of another evaluation's worker.

Each attack in handoff/ is the control (control.py) with the attack appended. Each test asserts what an honest
evaluator says; a hole still open is an xfail(strict=True) naming it, so the test starts passing once it is fixed.
"""

import pytest

from evaluators import evaluate
from evaluators.judge import spares
from kernels.problem import load_problem
from tests.evaluators.redteam.conftest import honest_beside
from tests.evaluators.redteam.test_redteam import CONTROL, HERE


def attack(name: str, **fill: str) -> str:
    text = (HERE / "handoff" / f"{name}.py").read_text()
    for key, value in fill.items():
        text = text.replace(f"@{key}@", value)
    return f"{CONTROL}\n\n{text}"


def test_the_forged_numel_kernel_is_really_wrong(own_problem, options):
    # The same kernel, its outputs left as the harness handed them over: the trials catch it.
    source = attack("forge_numel_attribute").replace("_os.dup2(planted, fd)", "pass")
    result = evaluate(load_problem(own_problem), source, "cpu", options.model_copy(update={"timing": False}))
    assert result.status == "incorrect", result.message


def test_an_output_with_a_forged_numel_is_still_compared(own_problem, options):
    result = evaluate(load_problem(own_problem), attack("forge_numel_attribute"), "cpu", options)
    assert result.status == "incorrect", (result.status, result.message)


@pytest.mark.parametrize("kind", ["meta", "nested"])
def test_an_output_the_comparison_cannot_read_is_the_candidates(own_problem, options, kind):
    untimed = options.model_copy(update={"timing": False})
    result = evaluate(load_problem(own_problem), attack("unreadable_tensor_kind", KIND=kind), "cpu", untimed)
    assert result.status == "incorrect", result.message


def test_an_output_that_inflates_in_the_reference_is_the_candidates(own_problem, options):
    short = options.model_copy(update={"timing": False, "timeout_s": 5})
    result = evaluate(load_problem(own_problem), attack("inflate_in_reference"), "cpu", short)
    assert result.status in ("incorrect", "runtime_error", "timeout"), result.message


def test_a_candidate_cannot_replace_another_evaluations_source(own_problem, options):
    try:
        # Its thread plants in the spare its own evaluation started, half a second after it holds.
        honest = honest_beside(attack("plant_fifo_in_others_scratch"), "planting", own_problem, options, settle_s=0.5)
    finally:
        spares.close_all()  # a spare with a FIFO for its source must never be claimed
    assert honest.status == "correct", (honest.status, honest.message, (options.cache_dir / "swapped").exists())
