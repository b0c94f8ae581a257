"""Worker-side helpers for correctness: seeded inputs and models, defensive copies, allocator poisoning."""

from __future__ import annotations

import inspect
import random

import torch

DISTRIBUTIONS = ("normal", "uniform", "heavy")
_EQUAL = torch.equal  # bound at import, before candidate code can replace torch.equal
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def trial_plan(seed: int, trials: int) -> list[tuple[int, str]]:
    """(seed, distribution) per trial: distinct seeds, and the non-normal distributions in the first three."""
    return [(seed + 1000 * (i + 1), DISTRIBUTIONS[i % len(DISTRIBUTIONS)]) for i in range(trials)]


def seed_everything(seed: int) -> None:
    """Seed every generator a problem's get_inputs or a module's constructor may draw from."""
    random.seed(seed)
    torch.manual_seed(seed)


def accepts_dist(module) -> bool:
    """Whether the problem's get_inputs takes a `dist` argument (bundled problems do; KernelBench's don't)."""
    return "dist" in inspect.signature(module.get_inputs).parameters


def make_inputs(module, seed: int, dist: str, device: str) -> list:
    """One trial's inputs on `device`, from the problem's own generator under `seed`."""
    seed_everything(seed)
    # Drawn on the device itself: sampling a 256 MiB input on the CPU costs seconds per trial.
    with torch.device(device):
        raw = module.get_inputs(dist=dist) if accepts_dist(module) else module.get_inputs()
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw]


def make_model(model_class, module, seed: int, device: str):
    """Model or ModelNew, built under the same seed so their parameters match (KernelBench's convention)."""
    seed_everything(seed)
    init_inputs = module.get_init_inputs()
    seed_everything(seed)
    return model_class(*init_inputs).to(device)


def copies(inputs: list) -> list:
    """Fresh copies for one call, so what the callee does to them cannot reach the originals."""
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def modified(originals: list, handed: list) -> list[int]:
    """Indices of tensor inputs the callee changed in place."""
    return [
        i
        for i, (a, b) in enumerate(zip(originals, handed, strict=True))
        if isinstance(a, torch.Tensor) and not same_values(a, b)
    ]


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equal (a copy keeps every bit, NaN payloads included); works for fp8, which has few ops."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if a.is_floating_point():
        bits = _BITS[a.element_size()]
        a, b = a.contiguous().view(bits), b.contiguous().view(bits)
    return _EQUAL(a, b)


def flatten_outputs(output, device: str = "cpu") -> list[torch.Tensor]:
    """The result of forward as a list of plain tensors, copied to `device`; raises TypeError for anything else."""
    items = list(output) if isinstance(output, (tuple, list)) else [output]
    flat = []
    for i, item in enumerate(items):
        if isinstance(item, (int, float, bool)):
            item = torch.tensor(item)
        if type(item) is not torch.Tensor:
            raise TypeError(f"forward returned {type(item).__name__} as output {i}; expected a torch.Tensor")
        flat.append(item.detach().to(device, copy=True).contiguous())
    return flat


def poison_allocator(device: str, nbytes: int) -> None:
    """Fill memory the caching allocator will hand out next with NaN (0xFF bytes), then give it back.

    A candidate that returns torch.empty without writing then returns NaN, not whatever an earlier
    computation left there.
    """
    if device != "cuda":
        return
    torch.cuda.empty_cache()  # cached blocks still hold earlier data; only the poisoned block may stay cached
    free, _ = torch.cuda.mem_get_info()
    big = torch.empty(min(max(nbytes, 64 << 20), free // 2), dtype=torch.uint8, device=device).fill_(0xFF)
    small = [torch.empty(512 << 10, dtype=torch.uint8, device=device).fill_(0xFF) for _ in range(16)]
    torch.cuda.synchronize()
    del big, small
