"""A digest of each held output on the device, taken by the reference as it pins a block's outputs.

What the reference reads in its check must be what the timed calls left. On a GPU a held output stays in the
candidate's device memory and the reference reads it through CUDA IPC, once the candidate's process is stopped after
its block (judge/timing_plan.py); work the candidate queued before the stop still runs (judge/pause.py). So the
reference digests the outputs it will check right after the block's seal, on the parent's clock (worker/pins.py); in
its check it copies what it opened, takes the digest again of its copy, and compares that copy alone. A rewrite that
keeps the digest has to land on the same ends of up to 4096 64-bit chains, each mixing its words in with
multiplications and shifts in order, which no shortcut to the right answer provides. Off the device (the CPU, or
copies kept on the host) the outputs are handed over in sealed files in the seal (worker/handoff.py), and their bytes
are the commitment.

Two rounds of the kernel in output_digest.ptx: the output's 32-bit words in up to LANES chains of about STEPS words
each, then those chains' ends in up to ENDS chains; the host hashes the last ends with the output's dtype and shape.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
from pathlib import Path

import torch

from evaluators.worker import ptx_kernel

PTX = Path(__file__).with_name("output_digest.ptx")
LANES, ENDS, STEPS, THREADS = 1 << 20, 1 << 12, 64, 256
_EMPTY, _ZEROS, _CAT = torch.empty, torch.zeros, torch.cat  # bound at import, before candidate code


class Digester:
    """The loaded kernel: `of(tensor)` queues a held output's digest on the current stream; `read` finishes them."""

    def __init__(self, kernel: ptx_kernel.Kernel):
        self.kernel = kernel
        self._arena: torch.Tensor | None = None
        self._used = 0
        self._whole = False  # whether every digest since `reserve` has its ends in the arena

    def reserve(self, outputs: int, device: str) -> None:
        """One device buffer for the ends of the next `outputs` digests, read back in one copy (`joined`).

        Joined from separate tensors, a block's ends took the candidate's process 3-4 ms more than the reference's
        on an H200 (torch.cat's host time, every block; bench/probes/timer_gap_parts.py): inside the parent's clock
        for the candidate alone, so its honest timer read that much below the parent's figure.
        """
        self._arena, self._used, self._whole = _EMPTY(outputs * ENDS, dtype=torch.int64, device=device), 0, True

    def joined(self) -> torch.Tensor | None:
        """The ends of every digest since `reserve`, in the order taken, where all of them fit in its buffer.

        The buffer is let go here: later digests (the reference's checks) get ends of their own until the next
        `reserve`, and nothing keeps it past the caller's read.
        """
        arena, self._arena = self._arena, None
        return arena[: self._used] if arena is not None and self._whole else None

    def of(self, tensor: torch.Tensor) -> tuple[str, torch.Tensor]:
        """(the output's dtype and shape, the device ends its digest is hashed from); queued, not waited for."""
        raw = tensor.reshape(-1).view(torch.uint8)
        if raw.numel() % 4:
            padded = _ZEROS(-(-raw.numel() // 4) * 4, dtype=torch.uint8, device=raw.device)
            padded[: raw.numel()] = raw
            raw = padded
        ends = self._round(self._round(raw.view(torch.int32), LANES).view(torch.int32), ENDS, last=True)
        return f"{tensor.dtype}{list(tensor.shape)}", ends

    def _round(self, words: torch.Tensor, most: int, last: bool = False) -> torch.Tensor:
        n = words.numel()
        lanes = max(1, min(most, -(-n // STEPS)))
        if last and self._arena is not None and self._used + lanes <= self._arena.numel():
            out, self._used = self._arena[self._used : self._used + lanes], self._used + lanes
        else:
            out = _EMPTY(lanes, dtype=torch.int64, device=words.device)
            self._whole = self._whole and not last
        args = [ctypes.c_uint64(words.data_ptr()), ctypes.c_uint64(n), ctypes.c_uint64(lanes),
                ctypes.c_uint64(out.data_ptr())]  # fmt: skip
        self.kernel.launch(
            -(-lanes // THREADS), THREADS, ptx_kernel.pointers(args), torch.cuda.current_stream().cuda_stream
        )
        return out


def read(queued: list[list[tuple[str, torch.Tensor]]], joined: torch.Tensor | None = None) -> list[list[str]]:
    """Per repetition, per output: its digest as hex, the device's ends read back at once.

    `joined`: every one of those ends already side by side, in order (Digester.joined), copied back as it is.
    """
    flat = [item for outputs in queued for item in outputs]
    if joined is not None:
        host = joined.cpu()
    else:
        host = _CAT([ends for _, ends in flat]).cpu() if flat else None
    digests, at = [], 0
    for outputs in queued:
        row = []
        for label, ends in outputs:
            row.append(hashlib.blake2b(label.encode() + host[at : at + ends.numel()].numpy().tobytes(),
                                       digest_size=16).hexdigest())  # fmt: skip
            at += ends.numel()
        digests.append(row)
    return digests


@functools.cache
def load() -> Digester:
    """The digest for this process's CUDA context; raises RuntimeError where it cannot be had."""
    try:
        return Digester(ptx_kernel.load(PTX, "digest"))
    except (OSError, AttributeError) as exc:
        raise RuntimeError(f"the output digest's kernel could not be loaded: {exc}") from None
