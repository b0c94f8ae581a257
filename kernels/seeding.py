"""Seeding before a problem draws its inputs or builds its model: one function every format's runtime calls."""

from __future__ import annotations

import random

import torch

# Bound at import: torch._dynamo rebinds torch.manual_seed when a candidate's torch.compile imports it.
_SEED_CPU, _SEED_CUDA = torch.default_generator.manual_seed, torch.cuda.manual_seed_all


def seed_everything(seed: int) -> None:
    """Seed every generator a problem's input generator or a module's constructor may draw from.

    Python's, the host's and the GPUs' (ROCm's too: torch.cuda is HIP there), the generators torch.manual_seed
    seeds on these machines. Not torch.manual_seed itself, which also visits the XPU, MTIA and MPS backends: on an
    H200 it took 141 us against 13 us for these three, in a draw that took 229 us with it (bench/probes/rep_cost.py).
    """
    random.seed(seed)
    _SEED_CPU(seed)
    _SEED_CUDA(seed)
