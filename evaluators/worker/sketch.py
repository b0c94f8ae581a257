"""Sketches of outputs: a commitment to every timed repetition's answer that the reference can check cheaply.

A sketch of an output is, per tensor, its shape, its count of NaN, +Inf and -Inf, and the sum of its finite values
weighted by Gaussian weights drawn from a key the parent reveals with the timing command. The reference computes
the same sketch of its own answer on the repetition's inputs: for an honest output, whose error does not depend on
the weights, the two differ by at most a few standard deviations of the tolerance (sketch_tolerance).
"""

from __future__ import annotations

import math

import torch

from evaluators.worker.compare import tolerance

CHUNK = 1 << 22  # elements weighted at a time: bounds the weights' memory on the largest outputs
_EMPTY, _STACK, _ISFINITE, _WHERE = torch.empty, torch.stack, torch.isfinite, torch.where
_RANDN, _GENERATOR, _ZEROS = torch.randn, torch.Generator, torch.zeros
_DETACH, _RESHAPE, _TO = torch.Tensor.detach, torch.Tensor.reshape, torch.Tensor.to


def _weights(key: int, tensor_index: int, lo: int, n: int, device) -> torch.Tensor:
    generator = _GENERATOR(device=device)
    generator.manual_seed((key * 1_000_003 + tensor_index * 7_919 + lo // CHUNK) % (2**63 - 1))
    return _RANDN(n, generator=generator, device=device, dtype=torch.float64)


def sketch_tensors(outputs: list[torch.Tensor], key: int) -> list[tuple[list[int], torch.Tensor]]:
    """Per output tensor: its shape and a device tensor [weighted sum, NaN, +Inf, -Inf] (no synchronization)."""
    sketches = []
    for index, tensor in enumerate(outputs):
        flat = _RESHAPE(_DETACH(tensor), -1)
        if flat.is_complex():
            flat = torch.view_as_real(flat).reshape(-1)
        total = _ZEROS(4, dtype=torch.float64, device=flat.device)
        for lo in range(0, flat.numel(), CHUNK):
            part = _TO(flat[lo : lo + CHUNK], torch.float64)
            finite = _ISFINITE(part)
            weighted = (_WHERE(finite, part, 0.0) * _weights(key, index, lo, part.numel(), flat.device)).sum()
            total += _STACK([weighted, part.isnan().sum(), part.isposinf().sum(), part.isneginf().sum()]).to(
                torch.float64
            )
        sketches.append((list(tensor.shape), total))
    return sketches


def sketch_values(sketches: list[tuple[list[int], torch.Tensor]]) -> list[list]:
    """The sketches as JSON: [[shape, weighted sum, NaN, +Inf, -Inf], ...] (synchronizes once)."""
    if not sketches:
        return []
    values = _STACK([total for _, total in sketches]).tolist()
    return [[shape, *row] for (shape, _), row in zip(sketches, values, strict=True)]


def sketch_tolerance(expected: list[torch.Tensor], atol: float | None, rtol: float | None) -> list[float]:
    """Per tensor, how far an honest sketch may drift: eight standard deviations of the weighted tolerance.

    The tolerance is compare.py's for the tensor's dtype, where `atol`/`rtol` leave it open.
    """
    bounds = []
    for tensor in expected:
        atol_t, rtol_t = tolerance(tensor.dtype, atol, rtol)
        flat = _RESHAPE(_DETACH(tensor), -1)
        if flat.is_complex():
            flat = torch.view_as_real(flat).reshape(-1)
        squares = 0.0
        for lo in range(0, flat.numel(), CHUNK):
            part = _TO(flat[lo : lo + CHUNK], torch.float64).abs().nan_to_num(0.0, 0.0, 0.0)
            squares += float(((atol_t + rtol_t * part) ** 2).sum())
        bounds.append(8.0 * math.sqrt(squares) + 1e-9 * flat.numel())
    return bounds


def sketch_mismatch(found: list, expected: list, bounds: list[float]) -> str | None:
    """Why a candidate's sketch is not the reference's within the bounds, or None when it is."""
    if not isinstance(found, list) or len(found) != len(expected):
        return f"{len(found) if isinstance(found, list) else 'no'} output sketch(es) where {len(expected)} expected"
    for i, (got, want, bound) in enumerate(zip(found, expected, bounds, strict=True)):
        if not (isinstance(got, list) and len(got) == 5 and all(isinstance(v, (int, float)) for v in got[1:])):
            return f"output {i}: a malformed sketch"
        if got[0] != want[0]:
            return f"output {i}: shape {tuple(got[0])} found, {tuple(want[0])} expected"
        if got[2:] != want[2:]:
            return f"output {i}: NaN/+Inf/-Inf counts {got[2:]} found, {want[2:]} expected"
        if not abs(got[1] - want[1]) <= bound:  # NaN in a forged sum fails too
            return f"output {i}: its weighted sum is {abs(got[1] - want[1]):.4g} off, beyond {bound:.4g}"
    return None
