"""The parent's comparison: shapes, dtypes, non-finite values and per-dtype tolerances."""

import torch

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
