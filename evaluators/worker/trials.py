"""Worker-side helpers for correctness: the trial plan, defensive copies or fingerprints, allocator poisoning."""

from __future__ import annotations

import torch

# Bound at import, before candidate code can replace them: a patched Tensor.detach or .to could otherwise finish
# deferred work at the moment the harness reads an output, outside every timed window.
_EQUAL = torch.equal
_DETACH, _TO, _CLONE = torch.Tensor.detach, torch.Tensor.to, torch.Tensor.clone
_TENSOR = torch.tensor
_IS_CONTIGUOUS, _STORAGE = torch.Tensor.is_contiguous, torch.Tensor.untyped_storage
_IS_CONJ, _IS_NEG = torch.Tensor.is_conj, torch.Tensor.is_neg
_STORAGE_PTR, _STORAGE_BYTES = torch.UntypedStorage.data_ptr, torch.UntypedStorage.nbytes
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def copies(inputs: list) -> list:
    """Fresh copies for one call, so what the callee does to them cannot reach the originals."""
    return [_CLONE(x) if isinstance(x, torch.Tensor) else x for x in inputs]


def fingerprints(inputs: list, chunk: int) -> list:
    """Per tensor input, two position-weighted sums of its bits: the in-place check when a copy does not fit."""
    prints = []
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            prints.append(None)
            continue
        flat = _DETACH(x).reshape(-1)
        flat = flat.view(_BITS[flat.element_size()]) if flat.element_size() in _BITS else flat
        plain, weighted = 0, 0
        for lo in range(0, flat.numel(), chunk):
            part = flat[lo : lo + chunk].to(torch.int64)
            weights = torch.arange(lo, lo + part.numel(), device=part.device) % 65521 + 1
            plain += int(part.sum())
            weighted += int((part * weights).sum())
        prints.append((x.shape, x.dtype, plain, weighted))
    return prints


def changed_prints(before: list, after: list) -> list[int]:
    """Indices whose fingerprint changed across the call."""
    return [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]


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


def _torch_result(output) -> bool:
    """Whether `output` is one of torch's named result tuples (torch.max's): C types whose iteration runs no code."""
    return isinstance(output, tuple) and type(output).__module__ == "torch.return_types"


def flatten_outputs(output, device: str = "cpu", copy: bool = True) -> list[torch.Tensor]:
    """The result of forward as a list of plain tensors, copied to `device` (or as they are, without `copy`).

    Raises TypeError for anything else. Containers and numbers are taken by their exact types (or torch's own result
    tuples): a subclass's iterator or conversion is candidate code, and the harness calls this inside the timing loop,
    after the repetition's time is taken, where a red team's list subclass rewrote it.
    """
    items = list(output) if type(output) in (tuple, list) or _torch_result(output) else [output]
    flat = []
    for i, item in enumerate(items):
        if type(item) in (int, float, bool):
            item = _TENSOR(item)
        if type(item) is not torch.Tensor:
            raise TypeError(f"forward returned {type(item).__name__} as output {i}; expected a torch.Tensor")
        # One copy, dense: a permuted view copied with its strides kept, then made contiguous, was copied twice.
        flat.append(_TO(_DETACH(item), device, memory_format=torch.contiguous_format, copy=True) if copy else
                    _DETACH(item))  # fmt: skip
    return flat


class OutputReused(Exception):
    """A call returned an output in memory where one it returned earlier in the block, held as made, lives."""


def hold_as_made(outputs: list[torch.Tensor], device: str, held: list[tuple[int, int]] | None, copy) -> list:
    """What the timing loop holds of each of a repetition's outputs before its time is taken (None: not yet).

    The output itself, where it is plain and dense on `device` in memory no output held before lives in (`held`: the
    block's storages' byte ranges, to which this repetition's are added): no process copies it. A held copy moved a
    memory-bound output's bytes about as long as the call that made them, work in each process's own span that the
    parent credited at the reference's cost, and a candidate handing its outputs over as made was credited it (a red
    team's 9x, simulated). `copy(tensor)` where it is not, made inside the repetition's time as the side's own cost:
    a view, a lazily conjugated or negated output (plain: the handoff describes no such thing), an output returned
    twice, or every output where `held` is None (a call that reuses its buffers). Raises OutputReused where the call
    wrote into an earlier repetition's output: the caller times the block again, copying all. None where the output
    is on another device: that copy waits for the device (worker/timing.py makes it after). The reference's views
    are copied as the candidate's are: held as made, the reshape of the digest once in its seal copied them, and
    a candidate's seal had that copy's time as room for work moved out of its calls (a red team, simulated: 6.7x).
    """
    if held is None:
        return [copy(tensor) if tensor.device.type == device else None for tensor in outputs]
    kept, mine = [], []
    for tensor in outputs:
        if tensor.device.type != device:
            kept.append(None)
            continue
        if not tensor.numel():
            kept.append(tensor)
            continue
        storage = _STORAGE(tensor)
        span = (_STORAGE_PTR(storage), _STORAGE_PTR(storage) + _STORAGE_BYTES(storage))
        if any(_overlap(span, other) for other in held):
            raise OutputReused
        if _plain(tensor) and not any(_overlap(span, other) for other in mine):
            mine.append(span)
            kept.append(tensor)
        else:
            kept.append(copy(tensor))
    held.extend(mine)
    return kept


def _plain(tensor: torch.Tensor) -> bool:
    """Whether its storage, dtype, shape and offset, all the handoff describes, say all its values.

    Dense and in order, with no lazy conjugation or negation: a copy resolves those, a reader of its memory would not.
    """
    return tensor.layout == torch.strided and _IS_CONTIGUOUS(tensor) and not (_IS_CONJ(tensor) or _IS_NEG(tensor))


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


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
