"""The candidate's outputs handed to the reference on the GPU itself (CUDA IPC): nothing goes through the host.

A multi-GiB output costs seconds per trial through a file (device to host, serialize, read, host to device);
through CUDA IPC it costs a device-side copy. The candidate keeps a copy of each output alive on the device and
writes, where the file handoff would put the tensors, a small JSON descriptor of their IPC handles. The reference
worker, which never runs candidate code, checks every field of it before torch opens anything, compares on the
device and drops the tensors at once. The descriptor is handed over like an output file (worker/handoff.py): a
sealed memory file, reached through the candidate's descriptor.

What the descriptor says is the candidate's claim, like a file's contents: a malformed one, or one torch cannot
open, is a HandoffError. What no check here can promise: a candidate that frees or rewrites the shared memory
while the reference reads it spoils only its own answer, or at worst crashes the reference worker (an
environment failure: the evaluation ends without a verdict, never with a pass).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from contextlib import contextmanager, nullcontext

import torch

from evaluators.worker.handoff import Handed, HandoffError, sealed, untrusted_file

_SHARE = torch.UntypedStorage._share_cuda_  # bound at import: the candidate's patches never see its outputs
_OPEN = torch.UntypedStorage._new_shared_cuda
_RELEASE = torch.UntypedStorage._release_ipc_counter_cuda
_MEM_POOL, _USE_MEM_POOL, _EMPTY_CACHE = torch.cuda.MemPool, torch.cuda.use_mem_pool, torch.cuda.empty_cache
_DUMPS = json.dumps

DESCRIPTOR_BYTES = 1 << 16
MAX_DIMS = 16
MAX_HANDLE_BYTES = 4096
# torch's reference-counter files live in /dev/shm under names it makes; CUDA_IPC_REF_COUNTER_FILE_SIZE slots each.
REF_COUNTER_NAME = re.compile(r"/torch_[0-9A-Za-z_]{1,120}")
REF_COUNTER_SLOTS = 10000
SHM = "/dev/shm"
DTYPES = {
    name: getattr(torch, name)
    for name in (
        "float64", "float32", "float16", "bfloat16", "complex64", "complex128", "int64", "int32", "int16", "int8",
        "uint8", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
        "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    )
    if hasattr(torch, name)
}  # fmt: skip


class HeldOutputs:
    """The outputs kept alive for the reference; the copies among them in device memory of their own.

    Copied through the caching allocator's shared pool, a kept output is carved from whatever cached segment is
    free, often the multi-GiB block the allocator was poisoned with or an input set's. Each kept output then pins
    its whole segment after the rest was freed: on the H100, three trial outputs of KernelBench's RMSNorm kept
    over 60 GiB and the reference ran out of memory. In a pool of their own they pin nothing else, and releasing
    them gives all of it back to the driver. A timed repetition's outputs are mostly held as the call made them
    (trials.hold_as_made), in the allocations the next block's calls take again once they are let go.
    """

    def __init__(self, device: str):
        self.device = device
        self.pool = None
        self.outputs: list[list[torch.Tensor]] = []

    def allocating(self, on_device: bool = True):
        """A context in which device allocations (the kept copies only) come from this pool."""
        if self.device != "cuda" or not on_device:
            return nullcontext()
        if self.pool is None:
            self.pool = _MEM_POOL()
        return _USE_MEM_POOL(self.pool)

    def hold(self, outputs: list[torch.Tensor]) -> None:
        self.outputs.append(outputs)

    def release(self, keep_pool: bool = False) -> None:
        """Drop every held output; the pool's memory goes back to the driver, unless `keep_pool`.

        Between a shape's timing blocks (and the reference's checks of them) the pool stays: emptying the
        allocator's cache there gave back the blocks of the calls' own temporaries too, and the next block's first
        call allocated them again inside its timing.
        """
        self.outputs.clear()
        if self.pool is not None and not keep_pool:
            self.pool = None  # a MemPool's cached segments are freed once it is gone
            _EMPTY_CACHE()


# torch records an interprocess event with each CUDA share (so a reader can wait for the sharer's stream) while fewer
# than this many shares with events are alive, and past it synchronizes the sharer's stream instead. An event recorded
# in a candidate's seal is device work in its context while the reference watches the block's host windows
# (worker/window_watch.py): the device switched to it and back, a gap of about 0.39 ms a block on an H200 that work
# left by a candidate could hide in. So each worker keeps that many shares alive from its start (spend_event_budget):
# its seals' shares then record nothing, and the reference's reads, which never wait for the event (the timing command
# synchronized before its reply), are unchanged.
EVENT_BUDGET = 1000
_spent: list[torch.Tensor] = []


def spend_event_budget() -> None:
    """Share EVENT_BUDGET tiny tensors of this process's own and keep them: no later share records an event."""
    if _spent:
        return
    for _ in range(EVENT_BUDGET):
        tensor = torch.empty(1, device="cuda")  # a storage of its own: torch records one event a storage
        _SHARE(tensor.untyped_storage())
        _spent.append(tensor)
    torch.cuda.synchronize()


def share_outputs(name: str, outputs: list[torch.Tensor], counts: list | None = None) -> int:
    """Candidate side: describe `outputs` (contiguous device tensors the caller keeps alive); the descriptor's fd.

    Each share's count in torch's counter file starts at one, and the block goes back to the allocator only once the
    count is back at exactly zero: kept above, it stays allocated for good (74 GiB of the reference's own copies in a
    warm reference on an H100); brought below, by a reader's drop after the count was let go, it stayed allocated too
    (the candidate's copies grew by 12 GiB a block on an H200 and level1/19 ran out of memory). So each share's count
    is let go once: by its reader dropping what it opened, by the reference for the candidate's copies it does not
    read (release_unread), or by the sharer where no process will open them (the reference's own timed copies): their
    counts go into `counts`, for let_go before the outputs are dropped. Not here: the reference's seal is the scale of
    the candidate's, whose shares let go of nothing, and releasing its counts in its seal made it a median 0.21 ms a
    block longer on level 1 (two H200s), room a candidate's seal could fill with its calls' work unflagged.
    """
    entries = []
    for tensor in outputs:
        entry = {"dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape)}
        if tensor.numel():
            _, handle, size, offset, counter, counter_offset, event, sync = _SHARE(tensor.untyped_storage())
            if counts is not None:
                counts.append((counter, counter_offset))
            entry["storage"] = {
                "handle": handle.hex(), "size": size, "offset": offset, "element_offset": tensor.storage_offset(),
                "counter": counter.decode(), "counter_offset": counter_offset, "event": event.hex(), "sync": sync,
            }  # fmt: skip
        entries.append(entry)
    text = _DUMPS(entries).encode()
    return sealed(name, lambda file: file.write(text))


def let_go(counts: list) -> None:
    """Sharer side: let go of the counts share_outputs kept aside, once each, before the outputs are dropped."""
    for counter, counter_offset in counts:
        _RELEASE(counter, counter_offset)
    counts.clear()


@contextmanager
def _candidates(handed: Handed):
    """Whatever reading the candidate's descriptor raises is its malformed handoff, never a failure of the reference.

    Its values are the candidate's JSON: a list where a dtype's name belongs is unhashable, a nesting past the
    decoder's depth a RecursionError; each check below names what it expects, and this catches what none foresaw.
    """
    try:
        yield
    except HandoffError:
        raise
    except Exception as exc:
        raise HandoffError(f"{handed.name} is malformed ({type(exc).__name__})") from None


def open_shared(handed: Handed, max_bytes: int, wait_event: bool = True) -> list[torch.Tensor]:
    """Reference side: the candidate's device tensors described as handed over, each field checked before opening.

    `wait_event`: this process's stream waits for the event the candidate recorded as it shared them, where the
    descriptor asks (its trials' outputs are copied on its stream just before). Without it, what is read is what is
    there: a timed block synchronized each repetition, and its pin reads them at once (worker/pins.py).
    """
    return open_described(handed, read_descriptor(handed), max_bytes, wait_event)


def read_descriptor(handed: Handed) -> list:
    """Reference side: what the candidate's descriptor says, read from its file (opened by open_described)."""
    with _candidates(handed):
        entries = _descriptor(handed)
        if not isinstance(entries, list):
            raise HandoffError(f"{handed.name} does not describe a list of tensors")
        return entries


def open_described(handed: Handed, entries: list, max_bytes: int, wait_event: bool) -> list[torch.Tensor]:
    """Reference side: the device tensors a descriptor read by read_descriptor describes, each field checked first."""
    with _candidates(handed):
        return _opened(handed.name, entries, max_bytes, wait_event)


def _opened(name: str, entries: list, max_bytes: int, wait_event: bool) -> list[torch.Tensor]:
    total, tensors = 0, []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("dtype") not in DTYPES or not _dims(entry.get("shape")):
            raise HandoffError(f"{name}: output {i} has no valid dtype and shape")
        dtype, shape = DTYPES[entry["dtype"]], entry["shape"]
        nbytes = math.prod(shape) * dtype.itemsize
        total += nbytes
        if total > max_bytes:
            raise HandoffError(f"{name} describes over {max_bytes} bytes of outputs")
        if nbytes == 0:
            tensors.append(torch.empty(shape, dtype=dtype, device="cuda"))
            continue
        tensors.append(_open(name, i, entry.get("storage"), dtype, shape, nbytes, wait_event))
    return tensors


def release_unread(handed: Handed) -> None:
    """Reference side: let go of the counts of the candidate's device tensors it will not open (see share_outputs)."""
    entries = read_descriptor(handed)
    with _candidates(handed):
        for i, entry in enumerate(entries):
            storage = entry.get("storage") if isinstance(entry, dict) else None
            if storage is None:
                continue  # an empty output shares nothing
            counter, counter_offset = _counter(handed.name, i, storage)
            _RELEASE(counter.encode(), counter_offset)


def _descriptor(handed: Handed):
    with untrusted_file(handed, DESCRIPTOR_BYTES) as (fd, size):
        raw = os.pread(fd, size, 0)
    try:
        return json.loads(raw)
    except ValueError:  # what else the decoder raises (a nesting past its depth) _candidates takes
        raise HandoffError(f"{handed.name} is not a JSON descriptor") from None


def _dims(shape) -> bool:
    return isinstance(shape, list) and len(shape) <= MAX_DIMS and all(type(d) is int and d >= 0 for d in shape)


def _counter(name: str, i: int, storage) -> tuple[str, int]:
    """The storage's count in torch's counter file: (the file's name, the slot), each checked before torch maps it."""
    if not isinstance(storage, dict):
        raise HandoffError(f"{name}: output {i} has no storage")
    counter, counter_offset = storage.get("counter"), storage.get("counter_offset")
    valid = (
        type(counter_offset) is int
        and 0 <= counter_offset < REF_COUNTER_SLOTS
        and isinstance(counter, str)
        and REF_COUNTER_NAME.fullmatch(counter) is not None
        and _counter_file(counter)
    )
    if not valid:
        raise HandoffError(f"{name}: output {i} has an invalid storage description")
    return counter, counter_offset


def _open(name: str, i: int, storage, dtype: torch.dtype, shape: list[int], nbytes: int,
          wait_event: bool) -> torch.Tensor:  # fmt: skip
    counter, counter_offset = _counter(name, i, storage)
    try:
        handle, event = bytes.fromhex(storage["handle"]), bytes.fromhex(storage["event"])
        size, offset, element_offset = storage["size"], storage["offset"], storage["element_offset"]
        sync = storage["sync"]
    except (KeyError, TypeError, ValueError):
        raise HandoffError(f"{name}: output {i} has a malformed storage") from None
    valid = (
        0 < len(handle) <= MAX_HANDLE_BYTES
        and len(event) <= MAX_HANDLE_BYTES
        and all(type(v) is int and v >= 0 for v in (size, offset, element_offset))
        and element_offset * dtype.itemsize + nbytes <= size
        and type(sync) is bool
    )
    if not valid:
        raise HandoffError(f"{name}: output {i} has an invalid storage description")
    try:
        opened = _OPEN(torch.cuda.current_device(), handle, size, offset, counter.encode(), counter_offset, event,
                       sync and wait_event)  # fmt: skip
        tensor = torch.empty(0, dtype=dtype, device="cuda")
        return tensor.set_(opened, element_offset, shape)  # strides left out: contiguous
    except Exception as exc:  # whatever torch or the driver raises for a handle it cannot open is the candidate's
        first = next(iter(str(exc).splitlines()), "")[:200]
        raise HandoffError(f"{name}: output {i} cannot be opened ({type(exc).__name__}: {first})") from None


def _counter_file(name: str) -> bool:
    """Whether the counter file torch will map is a plain file of the full size in /dev/shm, not a link."""
    try:
        info = os.lstat(SHM + name)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size >= 8 * REF_COUNTER_SLOTS
