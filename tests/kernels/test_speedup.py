"""How speedups are written: three significant figures at every size, so interpreter ratios do not read 0.00x."""

import pytest

from kernels.speedup import format_speedup


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0012345, "0.00123x"),  # a Triton-interpreter ratio on the CPU
        (0.000912, "0.000912x"),
        (0.003, "0.003x"),
        (1.0, "1x"),
        (1.2549, "1.25x"),
        (12.34, "12.3x"),
        (1972.4, "1972x"),  # whole numbers stay whole, never 1.97e+03
        (0.0099996, "0.01x"),
        (float("inf"), "infx"),
        (0.0, "0x"),
    ],
)
def test_a_speedup_keeps_three_significant_figures(value, text):
    assert format_speedup(value) == text


def test_a_missing_speedup_is_written_as_asked():
    assert format_speedup(None) == "-"
    assert format_speedup(None, missing="unmeasured") == "unmeasured"
