"""Cheat: leaves with a clean exit status before anything can be checked."""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()

    def forward(self, x):
        os._exit(0)
