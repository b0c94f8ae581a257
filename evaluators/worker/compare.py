"""Comparison of candidate outputs with reference outputs (shape, dtype, NaN/Inf, tolerance), in the reference worker.

The reference's process never runs candidate code, so it compares on its own device, in float64 and in chunks,
and sends the parent only the verdict of each trial or checked repetition. Floating outputs of 32 bits or fewer are
screened first in float32, a tolerance a little tighter than the one asked: what passes the screen surely passes in
float64, and only what does not is compared again there, where the mismatch is found and described. On an H200 the
float64 comparison of a 1 GiB float32 output took 26 ms (bench/probes/check_reps_parts.py), and the parent has the
reference check two timed repetitions of every timing block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from evaluators.worker.handoff import Handed, HandoffError, read_outputs

# (atol, rtol) when neither the options nor the problem say: tight for fp32, looser for half types.
# fp8 outputs have no sensible default; problems that return fp8 set ATOL/RTOL themselves.
DEFAULT_TOLERANCE = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
    torch.complex128: (1e-7, 1e-7),
    torch.complex64: (1e-4, 1e-4),
}
FP8_FALLBACK = (1e-1, 1e-1)
_STACK = torch.stack
_SCREENED = (torch.float32, torch.float16, torch.bfloat16)
# The float32 screen's rounding (a few units of 2^-24 of the bound) is far inside this share of the tolerance; an atol
# at least SCREEN_ATOL keeps subnormal products out of the bound's rounding.
SCREEN_MARGIN, SCREEN_ATOL = 1 - 1e-5, 1e-30
# A reference's outputs, or a function that computes them when they are compared.
Expected = list[torch.Tensor] | Callable[[], list[torch.Tensor]]


@dataclass
class Mismatch:
    """Why one output of one trial failed: a one-line summary and the details a debugger needs."""

    summary: str
    details: str


def tolerance(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    """The (atol, rtol) for `dtype`; given values win over the per-dtype defaults."""
    default = DEFAULT_TOLERANCE.get(dtype, FP8_FALLBACK if "float8" in str(dtype) else (0.0, 0.0))
    return (default[0] if atol is None else atol, default[1] if rtol is None else rtol)


def judge(
    items: list[tuple[Handed, Expected]], atol, rtol, max_bytes: int, device: str, chunk: int, read=read_outputs
) -> list:
    """Per (candidate's handed-over outputs, expected outputs), None when they match, else the mismatch as a dict.

    `read` turns what was handed over into the candidate's tensors: a file of them, or a descriptor of device
    tensors shared with this process. Expected outputs given as a function are computed once the candidate's are
    open. Stops at the first mismatch: the parent reports the first failing trial or repetition only.
    """
    verdicts = []
    for handed, wanted in items:
        found = expected = None  # the last outputs compared are released before the next are opened
        try:
            found = read(handed, max_bytes)
        except HandoffError as exc:
            mismatch = Mismatch(f"outputs unreadable: {exc}", "")
        else:
            expected = wanted() if callable(wanted) else wanted
            mismatch = compare_outputs(found, expected, atol, rtol, device, chunk)
        verdicts.append(asdict(mismatch) if mismatch else None)
        if mismatch:
            break
    return verdicts


def compare_outputs(
    found: list[torch.Tensor], expected: list[torch.Tensor], atol, rtol, device: str = "cpu", chunk: int = 1 << 62
) -> Mismatch | None:
    """The first problem with `found` against `expected`, or None when every output is within tolerance.

    Compared on `device`, `chunk` elements at a time, so a 6 GiB output never needs its float64 copies at once.
    """
    if len(found) != len(expected):
        return Mismatch(f"returned {len(found)} outputs, expected {len(expected)}", "")
    for j, (out, ref) in enumerate(zip(found, expected, strict=True)):
        problem = _compare_one(out, ref, *tolerance(ref.dtype, atol, rtol), device, chunk)
        if problem:
            return Mismatch(f"output {j}: {problem.summary}", problem.details)
    return None


def _compare_one(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float, device: str, chunk: int):
    if out.shape != ref.shape:
        return Mismatch(f"shape {tuple(out.shape)} found, {tuple(ref.shape)} expected", "")
    if out.dtype != ref.dtype:
        return Mismatch(f"dtype {out.dtype} found, {ref.dtype} expected", "")
    if out.numel() == 0:
        return None
    if ref.is_complex():  # compared as (real, imaginary) pairs: a conversion to float64 would drop the imaginary part
        out, ref = torch.view_as_real(out.resolve_conj()), torch.view_as_real(ref.resolve_conj())
    exact = not ref.is_floating_point()
    tally = _Tally()
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    # A negative rtol cancels part of atol, which the screen's rounding of atol could then pass: no screen.
    screen = ref.dtype in _SCREENED and atol >= SCREEN_ATOL and rtol >= 0
    if screen and _screened(flat_out, flat_ref, atol, rtol, device, chunk):
        return None
    for lo in range(0, ref.numel(), chunk):
        o = flat_out[lo : lo + chunk].to(device)
        r = flat_ref[lo : lo + chunk].to(device)
        problem = _exact_chunk(o, r, lo, tally) if exact else _float_chunk(o, r, lo, atol, rtol, tally)
        if problem:
            return Mismatch(problem.summary.format(where=_index(problem.details, ref.shape)), "")
    if exact:
        if tally.wrong:
            return Mismatch(
                f"{tally.wrong} of {ref.numel()} values differ (first at {_index(tally.first, ref.shape)})", ""
            )
        return None
    if not tally.beyond:
        return None
    found, wanted = float(flat_out[tally.worst].double()), float(flat_ref[tally.worst].double())
    summary = (
        f"max abs err {tally.max_diff:.3g}, max rel err {tally.max_rel:.3g}; "
        f"{tally.beyond} of {ref.numel()} elements beyond atol={atol:g} rtol={rtol:g}; "
        f"worst at {_index(tally.worst, ref.shape)}: found {found:.6g}, expected {wanted:.6g}"
    )
    return Mismatch(summary, _row_sample(flat_out, flat_ref, tally.worst))


def _screened(flat_out, flat_ref, atol: float, rtol: float, device: str, chunk: int) -> bool:
    """Whether every element is within a tolerance SCREEN_MARGIN of the one asked, computed in float32.

    False for anything else (a NaN, an infinity, an element near the bound): the float64 comparison then decides.
    One read from the device for the whole output.
    """
    passes = []
    for lo in range(0, flat_ref.numel(), chunk):
        o = flat_out[lo : lo + chunk].to(device=device, dtype=torch.float32)
        r = flat_ref[lo : lo + chunk].to(device=device, dtype=torch.float32)
        # A reference NaN or infinity bounds nothing (its outputs must be reproduced exactly): -1 fails every element.
        bound = r.abs().mul_(rtol).add_(atol).mul_(SCREEN_MARGIN).nan_to_num_(nan=-1.0, posinf=-1.0)
        passes.append(torch.le(o.sub(r).abs_(), bound).all())
    return bool(_STACK(passes).all())


class _Tally:
    """What the chunks found so far."""

    def __init__(self):
        self.wrong, self.first = 0, None
        self.beyond, self.worst, self.worst_excess = 0, 0, float("-inf")
        self.max_diff, self.max_rel = 0.0, 0.0


def _exact_chunk(o, r, lo, tally):
    wrong = o != r
    count = int(wrong.sum())
    if count and tally.first is None:
        tally.first = lo + int(wrong.nonzero()[0].item())
    tally.wrong += count
    return None


def _float_chunk(o, r, lo, atol, rtol, tally):
    # Two reads from the device a chunk, not five and a boolean gather: on a 6 GiB output each read left the device
    # idle, fifty chunks a comparison.
    o, r = o.double(), r.double()
    o_finite, finite = torch.isfinite(o), torch.isfinite(r)
    bad_nonfinite = ~o_finite & finite
    ref_special = ~finite
    any_bad, any_special = _STACK([bad_nonfinite.any(), ref_special.any()]).tolist()
    if any_bad:
        first = lo + int(bad_nonfinite.nonzero()[0].item())
        n_nan = int((o.isnan() & bad_nonfinite).sum())
        n_inf = int(bad_nonfinite.sum()) - n_nan
        # Counted in this chunk: the first one is what a debugger needs.
        return Mismatch(f"{n_nan} NaN and {n_inf} Inf where the reference is finite (first at {{where}})", first)
    # Non-finite reference values must be matched exactly: a NaN by a NaN, an infinity by the same infinity (turned
    # into numbers first, a 0 passed for a NaN and float64's largest value for an infinity).
    if any_special and not _reproduced(o[ref_special], r[ref_special]):
        first = lo + int(ref_special.nonzero()[0].item())
        return Mismatch("NaN/Inf of the reference not reproduced (near {where})", first)
    diff = torch.where(finite, (o - r).abs(), 0.0)
    scale = r.abs()
    excess = diff - (atol + rtol * scale)
    rel = torch.where(finite, diff / scale.clamp_min(torch.finfo(torch.float64).tiny), 0.0)
    worst_at = excess.argmax()
    max_diff, max_rel, count, worst, worst_excess = _STACK(
        [diff.max(), rel.max(), (excess > 0).sum().double(), worst_at.double(), excess[worst_at]]
    ).tolist()
    tally.max_diff, tally.max_rel = max(tally.max_diff, max_diff), max(tally.max_rel, max_rel)
    if count:
        tally.beyond += int(count)
        if worst_excess > tally.worst_excess:
            tally.worst, tally.worst_excess = lo + int(worst), worst_excess
    return None


def _reproduced(o: torch.Tensor, r: torch.Tensor) -> bool:
    """Whether `o` holds the reference's non-finite values `r` exactly: NaN where NaN, the same infinity elsewhere."""
    return bool(((o == r) | (o.isnan() & r.isnan())).all())


def _index(flat: int, shape) -> tuple[int, ...]:
    index = []
    for size in reversed(tuple(shape)):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))


def _row_sample(o: torch.Tensor, r: torch.Tensor, worst: int, width: int = 6) -> str:
    lo = max(0, worst - width // 2)
    found = [f"{v:.5g}" for v in o[lo : lo + width].double().tolist()]
    expected = [f"{v:.5g}" for v in r[lo : lo + width].double().tolist()]
    return f"around the worst element (flat index {lo}..): found {found}\n  expected {expected}"
