"""A speedup as prompts and reports write it: three significant figures, whatever its size.

Speedups span six orders of magnitude: Triton's interpreter on the CPU gives ratios near 0.001, GPUs near 1 to
100, and a cheat flagged by the evaluator thousands. A fixed number of decimals prints the first as `0.00x`; `%g`
prints the last in exponent notation. `format_speedup(0.0012345) == "0.00123x"`, `format_speedup(1.2549) ==
"1.25x"`, `format_speedup(12.34) == "12.3x"`, `format_speedup(1972.4) == "1972x"`, `format_speedup(None) == "-"`.
"""

from __future__ import annotations

import math

SIGNIFICANT_DIGITS = 3


def format_speedup(value: float | None, *, missing: str = "-", digits: int = SIGNIFICANT_DIGITS) -> str:
    """`value` times as fast, e.g. "0.00123x"; `missing` when there is no measurement.

    `digits` significant figures (whole numbers kept whole), no trailing zeros, never exponent notation.
    """
    if value is None:
        return missing
    if not math.isfinite(value) or value == 0:
        return f"{value:g}x"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}x"
