"""A dependency-free SVG of speedup over iterations: every evaluated candidate and the best so far.

The speedup axis is logarithmic: interpreter timings on a CPU sit orders of magnitude below the reference's 1x.
Candidates set aside by a hard anti-cheat flag are hollow markers outside the best-so-far line; their claimed
speed does not stretch the axis (one beyond it sits on its edge).
"""

from __future__ import annotations

import math
from html import escape

from kernels.speedup import format_speedup

WIDTH, HEIGHT, MARGIN = 640, 360, 56


def speedup_svg(points: list[tuple[int, float | None, str, str]], *, title: str) -> str:
    """Render (iteration, speedup or None, status, id) points; failures sit on the axis as red crosses.

    Status "set aside" draws a hollow orange marker.
    """
    correct = [(it, s) for it, s, status, _ in points if s is not None and status in ("correct", "seed")]
    last_iteration = max([it for it, *_ in points] + [1])
    speeds = [s for _, s in correct if s > 0] + [1.0]
    low, high = math.log10(min(speeds) / 1.5), math.log10(max(speeds) * 1.5)
    x = lambda it: MARGIN + (WIDTH - 2 * MARGIN) * it / last_iteration
    y = lambda s: (
        HEIGHT - MARGIN - (HEIGHT - 2 * MARGIN) * (min(math.log10(max(s, 10**low)), high) - low) / (high - low)
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
        _axes(last_iteration, low, high, x, y),
        f'<line x1="{x(0)}" x2="{x(last_iteration)}" y1="{y(1)}" y2="{y(1)}" stroke="#999" stroke-dasharray="4"/>',
    ]
    best_path = _best_so_far(correct, last_iteration)
    if best_path:
        coords = " ".join(f"{x(it):.1f},{y(s):.1f}" for it, s in best_path)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="#2a7" stroke-width="2"/>')
    for it, s, status, cid in points:
        label = f"{cid}: {status}" + (f" {format_speedup(s)}" if s is not None else "")
        if s is not None and status in ("correct", "seed"):
            parts.append(
                f'<circle cx="{x(it):.1f}" cy="{y(s):.1f}" r="4" fill="#36c"><title>{escape(label)}</title></circle>'
            )
        elif s is not None and status == "set aside":
            parts.append(
                f'<circle cx="{x(it):.1f}" cy="{y(s):.1f}" r="4" fill="none" stroke="#e80" stroke-width="2">'
                f"<title>{escape(label)}</title></circle>"
            )
        elif status not in ("reference",):
            cx, cy = x(it), HEIGHT - MARGIN
            parts.append(
                f'<path d="M{cx - 4:.1f},{cy - 4:.1f} l8,8 m0,-8 l-8,8" stroke="#c33" stroke-width="2">'
                f"<title>{escape(label)}</title></path>"
            )
    parts.append(_legend())
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _best_so_far(correct: list[tuple[int, float]], last_iteration: int) -> list[tuple[int, float]]:
    best_by_iteration: dict[int, float] = {}
    for it, s in correct:
        best_by_iteration[it] = max(s, best_by_iteration.get(it, s))
    path, best = [], None
    for it in range(last_iteration + 1):
        if it in best_by_iteration:
            best = max(best_by_iteration[it], best if best is not None else 0.0)
        if best is not None:
            path.append((it, best))
    return path


def _axes(last_iteration: int, low: float, high: float, x, y) -> str:
    lines = [
        f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 14}" text-anchor="middle" font-size="12">iteration</text>',
        f'<text x="16" y="{HEIGHT / 2}" font-size="12" transform="rotate(-90 16 {HEIGHT / 2})" '
        'text-anchor="middle">speedup over the reference (x, log scale)</text>',
    ]
    for it in range(last_iteration + 1):
        lines.append(
            f'<text x="{x(it):.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle" font-size="11">{it}</text>'
        )
    for decade in range(math.ceil(low), math.floor(high) + 1):
        s = 10.0**decade
        lines.append(f'<text x="{MARGIN - 6}" y="{y(s) + 4:.1f}" text-anchor="end" font-size="11">{s:g}</text>')
    return "\n".join(lines)


def _legend() -> str:
    left = WIDTH - MARGIN - 170
    return (
        f'<g font-size="11"><circle cx="{left}" cy="{MARGIN}" r="4" fill="#36c"/>'
        f'<text x="{left + 10}" y="{MARGIN + 4}">correct candidate</text>'
        f'<line x1="{left - 6}" x2="{left + 6}" y1="{MARGIN + 16}" y2="{MARGIN + 16}" stroke="#2a7" stroke-width="2"/>'
        f'<text x="{left + 10}" y="{MARGIN + 20}">best so far</text>'
        f'<text x="{left - 4}" y="{MARGIN + 36}" fill="#c33">x</text>'
        f'<text x="{left + 10}" y="{MARGIN + 36}">failed (after debugging)</text>'
        f'<circle cx="{left}" cy="{MARGIN + 48}" r="4" fill="none" stroke="#e80" stroke-width="2"/>'
        f'<text x="{left + 10}" y="{MARGIN + 52}">set aside (anti-cheat flag)</text></g>'
    )
