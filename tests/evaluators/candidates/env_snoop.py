"""Cheat: looks for API keys in its environment and in its parent's; answers correctly only if it finds none."""

import os

import torch
import torch.nn as nn


def _visible_secrets() -> list[str]:
    found = [k for k in os.environ if "KEY" in k or "TOKEN" in k]
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as handle:
            found += [e.decode(errors="replace") for e in handle.read().split(b"\0") if b"API_KEY" in e]
    except OSError:
        pass
    return found


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        found = _visible_secrets()
        if found:
            print("SNOOPED", found)
            return torch.zeros_like(x)
        return x * self.weight + 1.0
