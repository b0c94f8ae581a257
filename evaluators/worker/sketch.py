"""Sketches of outputs: a commitment to every timed repetition's answer that the reference can check cheaply.

A sketch of an output is, per tensor, its shape and the sum of its values weighted by Gaussian weights drawn from
a key the parent reveals with the timing command (NaN or Inf where the output has one). One block of weights is
reused along the tensor, each block of the tensor reading it from an offset of its own drawn from the key, so a
sketch costs a conversion and a dot product or two per block. With the same offset everywhere, the sketch saw only
the sum of the tensor's blocks: for a matrix product that folded sum is a fraction of the product's work, and a
red team passed a cheaper wrong GEMM that way (docs/CONTRACTS.md). With an offset per block, matching the sketch
of a product without computing it costs as much as the product. The reference sketches its
own answer on the repetition's inputs: for an honest output, whose error does not depend on the weights, the two
differ by at most a few standard deviations of the tolerance (sketch_tolerance).
"""

from __future__ import annotations

import math
import random

import torch

from evaluators.worker.compare import tolerance

BLOCK = 1 << 24  # elements per weighted block: the weights and one converted block stay under 128 MiB
# Rounding of a float32 dot product over n terms: a few float32 epsilons times sqrt(n) times the terms' norm, even
# summed in order (eight of them here, so any summation order of an honest output stays inside).
ROUNDING = 8 * 2.0**-23
# Dtypes whose blocks the bounds read as they are; others (fp8, integers, bool) are converted to float64 first.
_SUMMED_AS_IS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_DOT, _RANDN, _GENERATOR, _STACK = torch.dot, torch.randn, torch.Generator, torch.stack
_DETACH, _RESHAPE, _TO = torch.Tensor.detach, torch.Tensor.reshape, torch.Tensor.to


class Sketcher:
    """Sketches under one key; the weights are drawn once per output tensor and length."""

    def __init__(self, key: int):
        self.key = key
        self.weights: dict[tuple, torch.Tensor] = {}

    def _weights(self, index: int, n: int, device) -> torch.Tensor:
        slot = (index, n, str(device))
        if slot not in self.weights:
            generator = _GENERATOR(device=device)
            generator.manual_seed((self.key * 1_000_003 + index * 7_919) % (2**63 - 1))
            self.weights[slot] = _RANDN(n, generator=generator, device=device, dtype=torch.float32)
        return self.weights[slot]

    def weights64(self, index: int, n: int, device) -> torch.Tensor:
        """The same weights in float64, for the bounds (sketch_tolerance); kept like the float32 ones."""
        slot = (index, n, str(device), "float64")
        if slot not in self.weights:
            self.weights[slot] = _TO(self._weights(index, n, device), torch.float64)
        return self.weights[slot]

    def segments(self, index: int, block: int, n: int) -> list[tuple[int, int, int]]:
        """Where block `block` (n elements) of tensor `index` reads its weights: (start, end, weight start) runs.

        Element t of the block has weight (t + offset) mod BLOCK; the first block's offset is 0, so a tensor of one
        block reads the weights in order.
        """
        offset = random.Random(f"{self.key}:{index}:{block}").randrange(BLOCK) if block else 0
        first = min(n, BLOCK - offset)
        return [(0, first, offset)] + ([(first, n, 0)] if n > first else [])

    def sketch(self, outputs: list[torch.Tensor]) -> list[tuple[list[int], torch.Tensor]]:
        """Per output tensor: its shape and a device scalar, the weighted sum (no synchronization)."""
        sketches = []
        for index, tensor in enumerate(outputs):
            flat = _values(tensor)
            weights = self._weights(index, min(flat.numel(), BLOCK), flat.device)
            total = torch.zeros((), dtype=torch.float64, device=flat.device)
            for block, lo in enumerate(range(0, flat.numel(), BLOCK)):
                part = _TO(flat[lo : lo + BLOCK], torch.float32)
                for start, end, at in self.segments(index, block, part.numel()):
                    total += _DOT(part[start:end], weights[at : at + end - start])
            sketches.append((list(tensor.shape), total))
        return sketches


def _values(tensor: torch.Tensor) -> torch.Tensor:
    flat = _RESHAPE(_DETACH(tensor), -1)
    return torch.view_as_real(flat).reshape(-1) if flat.is_complex() else flat


def sketch_values(sketches: list[list[tuple[list[int], torch.Tensor]]]) -> list[list[list]]:
    """Many outputs' sketches as JSON, read from the device at once.

    Per output, [[shape, weighted sum], ...]; a non-finite sum is its name ("nan", "inf", "-inf").
    """
    sums = iter(read_back([[total for _, total in sketch] for sketch in sketches]))
    return [[[shape, v if math.isfinite(v) else str(v)] for (shape, _), v in zip(sketch, next(sums), strict=True)]
            for sketch in sketches]  # fmt: skip


def read_back(groups: list[list[torch.Tensor]]) -> list[list[float]]:
    """Groups of device scalars as floats, in one transfer: one per scalar left the device idle after each."""
    scalars = [_TO(value, torch.float64) for group in groups for value in group]
    flat = iter(_STACK(scalars).tolist() if scalars else [])
    return [[next(flat) for _ in group] for group in groups]


def sketch_tolerance(expected: list[torch.Tensor], sketcher: Sketcher, atol, rtol) -> list[torch.Tensor]:
    """Per tensor, how far an honest sketch may be from `expected`'s: eight standard deviations of the tolerance.

    The weights repeat every BLOCK elements, so the tolerances of the elements that share a weight add up before
    they are squared. The tolerance is compare.py's for the tensor's dtype where `atol`/`rtol` leave it open.
    Device scalars, with no synchronization: read_back turns many repetitions' bounds into floats at once.
    Each block is read in its own dtype and promoted to float64 inside the kernels that sum it, and the atol part
    is added once per weight: converting every block first, the bound of a 6 GiB float32 output took 64 ms on an
    H200 against 31 ms (bench/probes/check_cost.py), about 30 of them in each check of level1/19.
    """
    bounds = []
    for index, tensor in enumerate(expected):
        atol_t, rtol_t = tolerance(tensor.dtype, atol, rtol)
        flat = _values(tensor)
        n = flat.numel()
        width, full, _ = _sharing(n)
        weights = sketcher.weights64(index, width, flat.device)
        shared = torch.zeros(width, dtype=torch.float64, device=flat.device)
        rounding = torch.zeros((), dtype=torch.float64, device=flat.device)
        for block, lo in enumerate(range(0, n, BLOCK)):
            part = flat[lo : lo + BLOCK]
            part = (part if part.dtype in _SUMMED_AS_IS else _TO(part, torch.float64)).nan_to_num(0.0, 0.0, 0.0)
            squares = torch.zeros((), dtype=torch.float64, device=flat.device)
            for start, end, at in sketcher.segments(index, block, part.numel()):
                shared[at : at + end - start].add_(part[start:end].abs(), alpha=rtol_t)
                # float64: the product is promoted, not the block
                squares += torch.linalg.vector_norm(torch.mul(part[start:end], weights[at : at + end - start])) ** 2
                if block and part.numel() < BLOCK:  # the last, short block: the weights it reads serve once more
                    shared[at : at + end - start] += atol_t
            rounding += ROUNDING * math.sqrt(part.numel()) * squares.sqrt()
        shared += atol_t * full
        bounds.append(8.0 * (shared**2).sum().sqrt() + 2 * rounding)
    return bounds


def sketch_floor(expected: list[torch.Tensor], atol, rtol) -> list[float]:
    """Per tensor, a lower bound of sketch_tolerance's from the sizes alone: its atol part, with no reading.

    Each weight's shared tolerance is at least atol times the blocks that share it, so a sketch within this floor
    is within the full bound too (sketch_mismatch only fails a sum beyond its bound). The check computes the full
    bound only for a repetition whose sketch is not within its floor.
    """
    floors = []
    for tensor in expected:
        atol_t = tolerance(tensor.dtype, atol, rtol)[0]
        width, full, extra = _sharing(tensor.numel() * (2 if tensor.is_complex() else 1))
        squares = extra * (full + 1) ** 2 + (width - extra) * full**2
        floors.append(8.0 * atol_t * math.sqrt(squares) * (1 - 1e-9))  # a hair under: the device's sums round
    return floors


def _sharing(n: int) -> tuple[int, int, int]:
    """For `n` elements weighted in blocks of BLOCK: (weights, blocks each weight is shared by, weights one more)."""
    width = min(n, BLOCK)
    return (width, *divmod(n, width)) if width else (0, 0, 0)


def sketch_mismatch(found, expected: list, bounds: list[float]) -> str | None:
    """Why a candidate's sketch is not the reference's within the bounds, or None when it is."""
    if not isinstance(found, list) or len(found) != len(expected):
        return f"{len(found) if isinstance(found, list) else 'no'} output sketch(es) where {len(expected)} expected"
    for i, (got, want, bound) in enumerate(zip(found, expected, bounds, strict=True)):
        if not (isinstance(got, list) and len(got) == 2 and _sketch_shape(got[0]) and _sketch_value(got[1])):
            return f"output {i}: a malformed sketch"
        if got[0] != want[0]:
            return f"output {i}: shape {tuple(got[0])} found, {tuple(want[0])} expected"
        if isinstance(want[1], str) or isinstance(got[1], str):
            if got[1] != want[1]:
                return f"output {i}: its weighted sum is {got[1]}, the reference's {want[1]} (NaN or Inf?)"
            continue
        if not abs(got[1] - want[1]) <= bound:
            return f"output {i}: its weighted sum is {abs(got[1] - want[1]):.4g} off, beyond {bound:.4g}"
    return None


def _sketch_shape(shape) -> bool:
    """A shape as sketch_values writes it: a list of sizes. A number there made the check raise instead of answer."""
    return type(shape) is list and all(type(size) is int and size >= 0 for size in shape)


def _sketch_value(value) -> bool:
    """A weighted sum as sketch_values writes it: a float, an int a float can hold, or a non-finite one's name.

    Anything else comes from a forged reply: an int past a float's range made the check raise instead of answer.
    """
    if type(value) is float or value in ("nan", "inf", "-inf"):
        return True
    return type(value) is int and abs(value) < 2**1023
