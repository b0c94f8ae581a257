"""Honest but odd: rebinds torch.manual_seed (as torch._dynamo does on import) to a function that fails if called.

The harness seeds through torch.random.manual_seed, bound before the candidate is imported, so it never calls
this one: the evaluation is correct and nothing is flagged.
"""

import torch
import torch.nn as nn


def _never(seed):
    raise RuntimeError("the harness seeded through torch.manual_seed")


torch.manual_seed = _never


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.weight + 1.0
