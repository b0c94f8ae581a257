"""Broken: imports a module that does not exist."""

import kernel_helpers_that_do_not_exist  # noqa: F401
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x
