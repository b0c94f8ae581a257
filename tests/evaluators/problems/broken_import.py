"""Test problem that fails when imported: the evaluator must call it broken (exit 2), not blame a candidate."""

import torch.nn as nn

raise RuntimeError("this problem is broken on purpose")


class Model(nn.Module):
    pass


def get_inputs():
    return []


def get_init_inputs():
    return []
