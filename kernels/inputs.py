"""The one input-drawing helper bundled problems import: unit-variance samples from a named distribution."""

from __future__ import annotations

import math

import torch

from kernels.problem_types import DISTRIBUTIONS


def draw(shape: tuple[int, ...], dist: str = "normal", dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Unit-variance samples of `shape`: normal, uniform, or heavy (Student-t with 3 degrees of freedom).

    Drawn on the current default device (the evaluator sets it), in float32, then cast to `dtype`.
    """
    if dist == "normal":
        values = torch.randn(shape)
    elif dist == "uniform":
        values = (torch.rand(shape) * 2 - 1) * math.sqrt(3)
    elif dist == "heavy":
        # Student-t(3) as normal / sqrt(chi2(3) / 3), rescaled to unit variance (its variance is 3).
        # In float64: float32 sqrt was seen to round differently between processes on the CPU, and an fp8 cast
        # of the result turned that into different inputs for the reference and the candidate.
        chi2 = torch.randn((3, *shape), dtype=torch.float64).square().sum(0)
        values = (torch.randn(shape, dtype=torch.float64) / (chi2 / 3).sqrt() / math.sqrt(3)).float()
    else:
        raise ValueError(f"unknown input distribution {dist!r}; expected one of {', '.join(DISTRIBUTIONS)}")
    return values if dtype == torch.float32 else values.to(dtype)
