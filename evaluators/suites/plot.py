"""A dependency-free SVG histogram of a suite's speedups: trusted correct kernels by speedup, then the rest.

Bins are powers of two around 1x (speedups span orders of magnitude, and 1x must be a bin edge); two extra bars
count the problems set aside by a hard flag and those that failed or were not judged.
"""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT, MARGIN = 640, 360, 56
LIMIT = 6  # bins span 2^-6 to 2^6


def speedup_histogram_svg(speedups: list[float], set_aside: int, failed: int, unfit: int, *, title: str) -> str:
    """Render the histogram; `speedups` are the trusted correct problems' speedups over eager.

    `unfit` counts the problems too large for the device: the machine's limit, shown apart from the failures.
    """
    bars = _bins(speedups) + [("set aside", set_aside, "#e90"), ("failed", failed, "#c33")]
    bars += [("does not fit", unfit, "#999")]
    top = max([count for _, count, _ in bars] + [1])
    slot = (WIDTH - 2 * MARGIN) / len(bars)
    height = lambda count: (HEIGHT - 2 * MARGIN) * count / top
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" text-anchor="middle" font-size="12">'
        "speedup over PyTorch eager (correct, not set aside), then the rest</text>",
        f'<text x="16" y="{HEIGHT / 2}" font-size="12" transform="rotate(-90 16 {HEIGHT / 2})" '
        'text-anchor="middle">problems</text>',
    ]
    for index, (label, count, color) in enumerate(bars):
        x, h = MARGIN + index * slot, height(count)
        y = HEIGHT - MARGIN - h
        parts.append(
            f'<rect x="{x + 3:.1f}" y="{y:.1f}" width="{slot - 6:.1f}" height="{h:.1f}" fill="{color}">'
            f"<title>{escape(label)}: {count}</title></rect>"
        )
        parts.append(f'<text x="{x + slot / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle" font-size="11">{count}</text>')
        parts.append(
            f'<text x="{x + slot / 2:.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle" font-size="10">'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _bins(speedups: list[float]) -> list[tuple[str, int, str]]:
    """(label, count, colour) per power-of-two bin from the slowest to the fastest speedup, 1x always an edge.

    At most 12 bins: speedups beyond 2^-6 or 2^6 fall into the open-ended first or last bin.
    """
    logs = [min(max(math.log2(s), -LIMIT), LIMIT - 0.5) for s in speedups if s > 0]
    low = min([math.floor(v) for v in logs] + [-1])
    high = max([math.floor(v) + 1 for v in logs] + [1])
    bins = []
    for edge in range(low, high):
        label = f"{2.0**edge:.3g}-{2.0 ** (edge + 1):.3g}x"
        if edge == -LIMIT:
            label = f"<{2.0 ** (edge + 1):.3g}x"
        elif edge == LIMIT - 1:
            label = f">={2.0**edge:.3g}x"
        count = sum(edge <= v < edge + 1 for v in logs)
        bins.append((label, count, "#2a7" if edge >= 0 else "#36c"))
    return bins
