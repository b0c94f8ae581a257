"""The parent's comparison: shapes, dtypes, non-finite values and per-dtype tolerances."""

import pytest
import torch

from evaluators.worker import compare
from evaluators.worker.compare import compare_outputs, tolerance


def test_equal_outputs_pass():
    x = torch.randn(4, 5)
    assert compare_outputs([x.clone()], [x], None, None) is None


def test_fp32_is_tight_and_bf16_looser():
    assert tolerance(torch.float32, None, None) == (1e-4, 1e-4)
    assert tolerance(torch.bfloat16, None, None)[1] > tolerance(torch.float16, None, None)[1] > 1e-4
    assert tolerance(torch.float32, 1e-6, None) == (1e-6, 1e-4)


def test_mismatch_names_error_and_place():
    ref = torch.zeros(3, 4)
    out = ref.clone()
    out[2, 1] = 0.5
    mismatch = compare_outputs([out], [ref], None, None)
    assert "max abs err 0.5" in mismatch.summary
    assert "worst at (2, 1)" in mismatch.summary and "1 of 12 elements" in mismatch.summary


def test_shape_dtype_count_and_nan_are_reported():
    ref = torch.ones(2, 3)
    assert "shape (3, 2) found, (2, 3) expected" in compare_outputs([ref.t()], [ref], None, None).summary
    assert "dtype torch.float16 found" in compare_outputs([ref.half()], [ref], None, None).summary
    assert "returned 2 outputs, expected 1" in compare_outputs([ref, ref], [ref], None, None).summary
    bad = ref.clone()
    bad[0, 0] = float("inf")
    assert "0 NaN and 1 Inf" in compare_outputs([bad], [ref], None, None).summary


def test_reference_nan_must_be_reproduced():
    ref = torch.tensor([1.0, float("nan")])
    assert compare_outputs([ref.clone()], [ref], None, None) is None
    assert "not reproduced" in compare_outputs([torch.tensor([1.0, 2.0])], [ref], None, None).summary


def test_integer_outputs_are_exact():
    ref = torch.arange(6)
    out = ref.clone()
    out[4] = 0
    assert "1 of 6 values differ (first at (4,))" in compare_outputs([out], [ref], None, None).summary


def test_complex_outputs_are_compared_in_both_parts():
    x = torch.randn(6, dtype=torch.complex64)
    assert compare_outputs([x.clone()], [x], None, None) is None
    wrong = x.clone()
    wrong.imag[3] += 1.0  # the real parts all right: a conversion to float64 alone would pass it
    assert "beyond atol" in compare_outputs([wrong], [x], None, None).summary
    assert tolerance(torch.complex64, None, None) == tolerance(torch.float32, None, None)


def _edges(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs against a reference where every kind of element sits: far inside, at the bound's either side, NaN,
    infinities where the reference has them or not, overflow."""
    torch.manual_seed(0)
    ref = torch.randn(4096, dtype=torch.float64) * 10
    atol, rtol = tolerance(dtype, None, None)
    bound = atol + rtol * ref.abs()
    out = ref + bound * torch.empty_like(ref).uniform_(-0.99, 0.99)
    out[:8] = ref[:8] + bound[:8] * torch.tensor([1 - 1e-7, 1 + 1e-7, 1 - 1e-3, 1 + 1e-3, -1, 1, 0.999999, 1.000001])
    ref[8:11] = torch.tensor([float("inf"), float("-inf"), float("nan")])
    out[8:11] = torch.tensor([float("inf"), 1e30, float("nan")])
    return out.to(dtype), ref.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_float32_screen_never_changes_a_verdict(monkeypatch, dtype):
    """Each element alone, and all at once: the verdict with the screen is the float64 comparison's without it."""
    out, ref = _edges(dtype)
    cases = [(out, ref), (ref.clone(), ref)] + [(ref.clone().index_copy_(0, torch.tensor([k]), out[k : k + 1]), ref)
                                               for k in range(12)]  # fmt: skip
    screened = [compare_outputs([o], [r], None, None) for o, r in cases]
    monkeypatch.setattr(compare, "_SCREENED", ())
    exact = [compare_outputs([o], [r], None, None) for o, r in cases]
    assert screened == exact
    assert exact[1] is None and any(exact) and not all(exact)  # the cases hold both verdicts


def test_the_screen_passes_what_is_well_inside_the_tolerance_without_the_float64_pass(monkeypatch):
    out, ref = torch.ones(1000) * 1.00001, torch.ones(1000)
    monkeypatch.setattr(compare, "_float_chunk", None)  # any float64 pass would fail here
    assert compare_outputs([out], [ref], None, None) is None
