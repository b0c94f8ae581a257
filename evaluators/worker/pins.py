"""The reference's pin of a timed block's outputs: a random sample of their bytes, taken right after the block's seal.

On a GPU a held output stays in the candidate's device memory, and the reference reads it through CUDA IPC once the
candidate's process is stopped (judge/timing_plan.py). Work the candidate left queued still runs (judge/pause.py): a
block's calls could return unfinished outputs and leave their finishing to kernels that outlive the reply. What the
check reads must be what was there when the block's commands ended, and nothing in the candidate's process may say what
that was: a digest its own seal took was work it could fuse with finishing its answers, inside the seal the parent
credits at the reference's cost (up to 9x, simulated on level1/19's figures). So the parent asks the reference, right
after the candidate's seal reply, to open the repetitions it picked for the check and read SAMPLES bytes of each output
at places drawn then, from a generator no other process knows. The pin's span on the parent's clock counts as the
candidate's, weighed against the reference's pin of as many of its own outputs (judge/wall.py). Work still on the device
shares it with the pin's reads (the contexts are time-sliced): it slows the pin, which counts, or lands after the reads;
then the check, which copies each output and finds its sample changed, reads it as not what the block left. An output
whose unfinished share is f passes a pin's sample with probability (1 - f) ** SAMPLES: 2 % at f = 0.1 %, and a shape
pins two repetitions a block. A sample, not a digest of every byte: with it the reference's pin of its own outputs fell
from a median 0.72 to 0.19 ms a call on level 1 (two H200s, bench/identity_journals.py). (The candidate's pin ran longer
than the reference's of its own by as much with either, a median 0.30-0.34 ms a block on level 1: mostly the device's
switch from the candidate's context to the reference's, docs/BENCHMARKS_HISTORY.md.) The IPC opens the candidate's pin
has and the reference's own does not are timed here and credited up to what honest opens cost (judge/wall.py, OPEN_MS).
"""

from __future__ import annotations

import secrets
import time

import torch

from evaluators.worker.device_handoff import open_described, read_descriptor
from evaluators.worker.handoff import Handed, HandoffError

SAMPLES = 4096
_CLOCK = time.perf_counter
_GENERATOR, _RANDINT, _ARANGE, _EQUAL = torch.Generator, torch.randint, torch.arange, torch.equal


class Sample:
    """Where an output was read at its pin, and what was there: its bytes at `places`, kept on its device."""

    def __init__(self, tensor: torch.Tensor):
        raw = _bytes(tensor)
        n = raw.numel()
        if n > SAMPLES:
            self.places = _RANDINT(n, (SAMPLES,), generator=_generator(raw.device), device=raw.device)
        else:
            self.places = _ARANGE(n, device=raw.device)
        self.values = raw[self.places]  # queued; the pin waits for its reads before it replies

    def holds(self, tensor: torch.Tensor) -> bool:
        """Whether `tensor` (a copy of the pinned output) still has the pinned bytes."""
        return _EQUAL(_bytes(tensor)[self.places], self.values)


class Pins:
    """The candidate's picked repetitions of its latest block: {rep: (opened outputs, their samples), or why not}."""

    def __init__(self):
        self.pinned: dict[int, tuple[list[torch.Tensor], list[Sample]] | str] = {}

    def pin(self, block: dict[int, Handed], picked: list[int], max_bytes: int) -> dict:
        """Open and sample the picked repetitions' outputs; the reply's facts: what was opened, its bytes, the opens.

        Every repetition's descriptor of the block is read first, in order, as the reference's own pin reads its own
        (pin_own): the descriptors are files of the candidate's, and a process still running could watch which are
        opened. Only the picked are then opened, through CUDA IPC, which the sharing process does not see. The earlier
        block's pins go first: the parent checks each block before the candidate's next.
        """
        self.pinned, opened, described = {}, [], _read_all(block)
        open_s = 0.0
        for rep in picked:
            started = _CLOCK()
            try:
                entries = described[rep]
                if isinstance(entries, str):
                    raise HandoffError(entries)
                tensors = open_described(block[rep], entries, max_bytes, wait_event=False)
            except HandoffError as exc:
                self.pinned[rep] = str(exc)
                continue
            finally:
                open_s += _CLOCK() - started
            opened += [t for t in tensors if t.numel()]
            self.pinned[rep] = (tensors, [Sample(t) for t in tensors])
        _done()
        nbytes = sum(t.numel() * t.element_size() for t in opened)
        return {"opened": len(opened), "opened_bytes": nbytes, "open_ms": open_s * 1e3}

    def take(self) -> dict[int, tuple[list[torch.Tensor], list[Sample]] | str]:
        """Every pin of the latest block, given up here: those the check does not read are dropped by the caller."""
        pinned, self.pinned = self.pinned, {}
        return pinned


def pin_own(block: dict[int, Handed], held: dict[int, list[torch.Tensor]], offsets: list[int], first: int) -> dict:
    """The reference's pin of its own block, for the parent's scale.

    Its own descriptors are read as Pins.pin reads the candidate's, and as many of its repetitions sampled the same.
    """
    _read_all(block)
    for k in offsets:
        for tensor in held.get(first + k, []):
            Sample(tensor)
    _done()
    return {"opened": 0, "opened_bytes": 0, "open_ms": 0.0}


def as_pinned(pinned: tuple[list[torch.Tensor], list[Sample]] | str, _max_bytes: int) -> list[torch.Tensor]:
    """A pinned repetition's outputs, copied into this process, where their sample still holds the pinned bytes.

    The copy alone is compared: work the candidate queued before its stop could otherwise write right answers into its
    memory between this check and the comparison's read.
    """
    if isinstance(pinned, str):
        raise HandoffError(pinned)
    tensors, samples = pinned  # opened within the check's bound (Pins.pin)
    found = [tensor.clone() for tensor in tensors]
    if not all(sample.holds(copy) for sample, copy in zip(samples, found, strict=True)):
        raise HandoffError("not what its block left: its bytes differ from the pin's (rewritten after the reply?)")
    return found


def _read_all(block: dict[int, Handed]) -> dict[int, list | str]:
    """Each repetition's descriptor, in the block's order, or why it cannot be read."""
    described = {}
    for rep, where in block.items():
        try:
            described[rep] = read_descriptor(where)
        except HandoffError as exc:
            described[rep] = str(exc)
    return described


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The output's bytes, flat: held outputs are dense and in order (worker/trials.hold_as_made)."""
    return tensor.reshape(-1).view(torch.uint8)


def _generator(device: torch.device):
    """A generator of its own, seeded from the system's randomness: no seed an input draw was given leads to it."""
    generator = _GENERATOR(device=device)
    generator.manual_seed(secrets.randbits(63))
    return generator


def _done() -> None:
    """Wait for the pin's reads: they must have read the outputs before the reply.

    Its own stream's: the reference's watch (worker/window_watch.py) runs on another until the pin is done.
    """
    if torch.cuda.is_available():
        torch.cuda.current_stream().synchronize()
