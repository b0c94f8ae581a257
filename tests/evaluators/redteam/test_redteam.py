"""Our own red team: one attack per class of the trust boundary, each beside a control that differs only in it.

Every attack gets what an honest evaluator says: incorrect, timed at its real speed, stopped as tampering, or set
aside by a hard flag; never correct and faster with no hard flag. The same candidates run on CUDA (`-m gpu`).
"""

import tracemalloc
from pathlib import Path

import pytest
import torch

from evaluators import EvalOptions, evaluate
from tests.evaluators.conftest import PROBLEM

HERE = Path(__file__).parent
CONTROL = (HERE / "control.py").read_text()
WORK_MS = 20.0  # the control's work per call
ATTACKS = sorted(p.stem for p in (HERE / "attacks").glob("*.py"))
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def source(attack: str | None) -> str:
    return CONTROL if attack is None else f"{CONTROL}\n\n{(HERE / 'attacks' / f'{attack}.py').read_text()}"


def judge(attack: str | None, device: str, cache_dir: Path, **fields):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    options = EvalOptions(**({"timeout_s": 10, "cache_dir": cache_dir} | fields))
    return evaluate(str(PROBLEM), source(attack), device, options)


def false_accept(result) -> bool:
    """Correct, faster than the reference, and no hard flag: what no attack may get."""
    hard = [f for f in result.flags if f.severity == "hard"]
    return result.status == "correct" and (result.speedup or 0) > 1 and not hard


_control_ms: dict[str, float] = {}


def control_ms(device: str, cache_dir: Path) -> float:
    """The control's runtime on a GPU (its spin runs at the GPU's clock), measured once per session."""
    if device not in _control_ms:
        result = judge(None, device, cache_dir)
        assert result.status == "correct", result.message
        _control_ms[device] = result.runtime_ms
    return _control_ms[device]


@pytest.mark.parametrize("device", DEVICES)
def test_the_control_is_correct_unflagged_and_timed_at_its_real_speed(device, cache_dir):
    result = judge(None, device, cache_dir)
    assert result.status == "correct", result.message
    assert not [f.text for f in result.flags if f.severity == "hard"]
    assert result.runtime_ms >= 0.5 * WORK_MS


# What each attack gets: (status, a fragment of its message or flags); None where several honest outcomes exist. A
# status by device where the two differ; a fragment with the one device it is checked on.
EXPECTED = {
    "forge_times_via_frames": ("correct", None),  # timed at its real speed by the parent's clock
    # Each block's mean is reported; a block of ten loses its forged tenth: within the flat 10 % the timer was once
    # allowed (6 % under its control on an H200), beyond a long call's 3 % plus a few launches now (wall.py).
    "forge_most_reps_keep_mean": ("correct", ("the parent's clock", "cuda")),
    "forge_zero_times": ("correct", None),  # the parent's figure, and a verdict (no division by zero)
    "forge_nan_times": ("runtime_error", "not a finite, non-negative number"),
    "patch_clock_instance": ("correct", None),
    "predict_inputs": ("correct", None),  # one call does its block's work: inside the block's mean
    "drop_held_reps": ("incorrect", "timed repetition"),  # a repetition not handed over cannot be read
    "overwrite_held_copies": ("incorrect", "timed repetition"),
    # Sealed in files before the reply on the CPU; on a GPU incorrect where the rewrite lands after the reference's pin,
    # correct at its real speed where the pin ran after it (worker/pins.py).
    "rewrite_after_reply": ({"cpu": "incorrect", "cuda": None}, ("timed repetition", "cpu")),
    # Its calls' work done in the block's seal: counted as theirs (the CPU's span holds the seal; a GPU's charges it).
    "finish_in_the_seal": ("correct", None),
    "dup2_after_reply": ("incorrect", "timed repetition"),  # its own file put at the handed descriptor: too late
    "forge_time_in_output_iter": ("runtime_error", "expected a torch.Tensor"),
    "forge_reply": (None, None),
    "forge_stage_marks": ("runtime_error", "the candidate process sent"),
    "flood_channel": ("runtime_error", "over the 1048576-byte limit"),
    "jit_named_decorator": ("correct", "no custom kernel"),
    "forged_error_report": ("runtime_error", "runtime_error in correctness"),  # a report's kind is never a verdict
    "blames_the_problem": ("runtime_error", "ProblemError"),  # the candidate's, not the problem's
    "sparse_trial_output": ("incorrect", "trial 0"),  # an output the comparison cannot read is the candidate's
    "spoil_kernel_profile": ("correct", "no custom kernel"),  # no measured share is no evidence
    # Its own kernels did none of the device time. On the CPU the sleep standing for the work is nobody's kernel time,
    # so the interpreter's split is between a do-nothing program and two small operators: checked on CUDA only.
    "noop_triton_launch": ("correct", ("no custom kernel", "cuda")),
}


# Attacks the evaluator does not answer yet (findings): each fails its test, marked so that the suite stays green.
OPEN: dict[str, str] = {}


def test_every_attack_has_an_expected_verdict():
    assert set(EXPECTED) == set(ATTACKS)
    assert set(OPEN) <= set(ATTACKS)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "attack",
    [pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=OPEN[a])) if a in OPEN else a for a in ATTACKS],
)
def test_no_attack_is_a_false_accept(attack, device, cache_dir):
    tracemalloc.start()
    result = judge(attack, device, cache_dir)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert not false_accept(result), (result.status, result.speedup, result.suspicious)
    status, fragment = EXPECTED[attack]
    status = status.get(device) if isinstance(status, dict) else status
    fragment, only_on = fragment if isinstance(fragment, tuple) else (fragment, device)
    if status is not None:
        assert result.status == status, result.message
    if fragment is not None and device == only_on:
        assert fragment in result.message or any(fragment in s for s in result.suspicious), result.message
    if result.status == "correct":
        # Whatever its own timer said, the time reported is what the work took. On the CPU the call sleeps WORK_MS,
        # a floor no noise goes under; evaluations doing the control's work read 26-34 ms on an idle 2-core
        # machine, so a ratio to the control measured that noise (CI failed on 26.7 against 33.6 ms).
        real = WORK_MS if device == "cpu" else control_ms(device, cache_dir)
        assert result.runtime_ms >= 0.8 * real or result.set_aside, (result.runtime_ms, real, result.suspicious)
    assert peak < 64 << 20, f"the parent grew by {peak >> 20} MiB"  # a flood costs the parent nothing


@pytest.mark.parametrize("device", DEVICES)
def test_a_stall_that_sends_frames_still_ends_at_the_parents_deadline(device, cache_dir):
    stall = CONTROL.replace("        slow_work()\n", "        import time\n        time.sleep(3600)\n", 1)
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    options = EvalOptions(timeout_s=3, build_timeout_s=3, timing=False, cache_dir=cache_dir)
    result = evaluate(str(PROBLEM), stall, device, options)
    # On a GPU the build calls the model once (Triton compiles there), so the stall ends that stage.
    stage = "build" if device == "cuda" else "correctness"
    assert result.status == "timeout" and f"{stage} stage exceeded its 3 s limit" in result.message
