"""Comparison of candidate outputs with reference outputs (shape, dtype, NaN/Inf, tolerance), in the reference worker.

The reference's process never runs candidate code, so it compares on its own device, in float64, and sends the
parent only the verdict of each trial.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from evaluators.handoff import HandoffError, output_path, read_outputs

# (atol, rtol) when neither the options nor the problem say: tight for fp32, looser for half types.
# fp8 outputs have no sensible default; problems that return fp8 set ATOL/RTOL themselves.
DEFAULT_TOLERANCE = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
FP8_FALLBACK = (1e-1, 1e-1)


@dataclass
class Mismatch:
    """Why one output of one trial failed: a one-line summary and the details a debugger needs."""

    summary: str
    details: str


def tolerance(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    """The (atol, rtol) for `dtype`; given values win over the per-dtype defaults."""
    default = DEFAULT_TOLERANCE.get(dtype, FP8_FALLBACK if "float8" in str(dtype) else (0.0, 0.0))
    return (default[0] if atol is None else atol, default[1] if rtol is None else rtol)


def judge(directory: Path, phase: str, expected: list[list[torch.Tensor]], atol, rtol, max_bytes: int) -> list:
    """Per trial, None when the candidate's outputs in `directory` match, else the mismatch as a dict.

    Stops at the first mismatch: the parent reports the first failing trial only.
    """
    verdicts = []
    for t, wanted in enumerate(expected):
        try:
            found = read_outputs(output_path(directory, phase, t), max_bytes)
        except HandoffError as exc:
            mismatch = Mismatch(f"outputs unreadable: {exc}", "")
        else:
            mismatch = compare_outputs(found, wanted, atol, rtol)
        verdicts.append(asdict(mismatch) if mismatch else None)
        if mismatch:
            break
    return verdicts


def compare_outputs(found: list[torch.Tensor], expected: list[torch.Tensor], atol, rtol) -> Mismatch | None:
    """The first problem with `found` against `expected`, or None when every output is within tolerance."""
    if len(found) != len(expected):
        return Mismatch(f"returned {len(found)} outputs, expected {len(expected)}", "")
    for j, (out, ref) in enumerate(zip(found, expected, strict=True)):
        problem = _compare_one(out, ref, *tolerance(ref.dtype, atol, rtol))
        if problem:
            return Mismatch(f"output {j}: {problem.summary}", problem.details)
    return None


def _compare_one(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> Mismatch | None:
    if out.shape != ref.shape:
        return Mismatch(f"shape {tuple(out.shape)} found, {tuple(ref.shape)} expected", "")
    if out.dtype != ref.dtype:
        return Mismatch(f"dtype {out.dtype} found, {ref.dtype} expected", "")
    if out.numel() == 0:
        return None
    out = out.to(ref.device)  # where the reference's outputs stay: the GPU compares 256 MiB in milliseconds
    if not (ref.is_floating_point() or ref.is_complex()):
        wrong = out != ref
        if wrong.any():
            where = _index(wrong.flatten().nonzero()[0].item(), ref.shape)
            return Mismatch(f"{int(wrong.sum())} of {ref.numel()} values differ (first at {where})", "")
        return None
    o, r = out.double(), ref.double()
    bad_nonfinite = ~torch.isfinite(o) & torch.isfinite(r)
    if bad_nonfinite.any():
        first = bad_nonfinite.flatten().nonzero()[0].item()
        n_nan = int((o.isnan() & bad_nonfinite).sum())
        n_inf = int(bad_nonfinite.sum()) - n_nan
        return Mismatch(
            f"{n_nan} NaN and {n_inf} Inf where the reference is finite (first at {_index(first, ref.shape)})", ""
        )
    # Non-finite reference values must be matched exactly (same NaN places, same signed infinities).
    ref_special = ~torch.isfinite(r)
    if ref_special.any() and not torch.equal(o[ref_special].nan_to_num(0.0), r[ref_special].nan_to_num(0.0)):
        return Mismatch("NaN/Inf of the reference not reproduced", "")
    finite = ~ref_special
    diff = torch.where(finite, (o - r).abs(), torch.zeros_like(o))
    excess = diff - (atol + rtol * r.abs())
    if not (excess > 0).any():
        return None
    worst = int(excess.flatten().argmax())
    rel = diff / r.abs().clamp_min(torch.finfo(torch.float64).tiny)
    where = _index(worst, ref.shape)
    summary = (
        f"max abs err {diff.max().item():.3g}, max rel err {rel[finite].max().item():.3g}; "
        f"{int((excess > 0).sum())} of {ref.numel()} elements beyond atol={atol:g} rtol={rtol:g}; "
        f"worst at {where}: found {o.flatten()[worst].item():.6g}, expected {r.flatten()[worst].item():.6g}"
    )
    return Mismatch(summary, _row_sample(o, r, worst))


def _index(flat: int, shape) -> tuple[int, ...]:
    index = []
    for size in reversed(tuple(shape)):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))


def _row_sample(o: torch.Tensor, r: torch.Tensor, worst: int, width: int = 6) -> str:
    lo = max(0, worst - width // 2)
    found = [f"{v:.5g}" for v in o.flatten()[lo : lo + width].tolist()]
    expected = [f"{v:.5g}" for v in r.flatten()[lo : lo + width].tolist()]
    return f"around the worst element (flat index {lo}..): found {found}\n  expected {expected}"
