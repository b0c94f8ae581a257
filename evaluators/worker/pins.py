"""The reference's pin of a timed block's outputs: their digests, taken by the trusted process right after the seal.

On a GPU a held output stays in the candidate's device memory, and the reference reads it through CUDA IPC once the
candidate's process is stopped (judge/timing_plan.py). Work the candidate left queued still runs (judge/pause.py): a
block's calls could return unfinished outputs and leave their finishing to kernels that outlive the reply. What the
check reads must be what was there when the block's commands ended, and nothing in the candidate's process may say
what that was: a digest its own seal took was work it could fuse with finishing its answers, inside the seal the
parent credits at the reference's cost (up to 9x, simulated on level1/19's figures). So the parent asks the reference,
right after the candidate's seal reply and before anything else, to open the repetitions it picked for the check and
digest them on its own stream. The pin's span on the parent's clock counts as the candidate's, weighed against the
reference's pin of as many of its own outputs (judge/wall.py): finishing work still on the device delays the pin's
digests, which wait for the device, and work that lands after them changes what the check reads, which then differs
from the pinned digest. The IPC opens the candidate's pin has and the reference's own does not are timed here and
credited up to what honest opens cost (judge/wall.py, OPEN_MS).
"""

from __future__ import annotations

import time

import torch

from evaluators.worker import output_digest
from evaluators.worker.device_handoff import open_described, read_descriptor
from evaluators.worker.handoff import Handed, HandoffError

_CLOCK = time.perf_counter


class Pins:
    """The candidate's picked repetitions of its latest block: {rep: (opened outputs, their digests), or why not}."""

    def __init__(self):
        self.pinned: dict[int, tuple[list[torch.Tensor], list[str]] | str] = {}

    def pin(self, block: dict[int, Handed], picked: list[int], max_bytes: int) -> dict:
        """Open and digest the picked repetitions' outputs; the reply's facts: what was opened, its bytes, the opens.

        Every repetition's descriptor of the block is read first, in order, as the reference's own pin reads its own
        (pin_own): the descriptors are files of the candidate's, and a process still running could watch which are
        opened. Only the picked are then opened, through CUDA IPC, which the sharing process does not see. The earlier
        block's pins go first: the parent checks each block before the candidate's next.
        """
        self.pinned, opened, queued, described = {}, [], [], _read_all(block)
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
            queued.append((rep, tensors))
        for (rep, tensors), digests in zip(queued, _digests([t for _, t in queued]), strict=True):
            self.pinned[rep] = (tensors, digests)
        nbytes = sum(t.numel() * t.element_size() for t in opened)
        return {"opened": len(opened), "opened_bytes": nbytes, "open_ms": open_s * 1e3}

    def take(self) -> dict[int, tuple[list[torch.Tensor], list[str]] | str]:
        """Every pin of the latest block, given up here: those the check does not read are dropped by the caller."""
        pinned, self.pinned = self.pinned, {}
        return pinned


def pin_own(block: dict[int, Handed], held: dict[int, list[torch.Tensor]], offsets: list[int], first: int) -> dict:
    """The reference's pin of its own block, for the parent's scale.

    Its own descriptors are read as Pins.pin reads the candidate's, and as many of its repetitions digested the same.
    """
    _read_all(block)
    _digests([held[first + k] for k in offsets if first + k in held])
    return {"opened": 0, "opened_bytes": 0, "open_ms": 0.0}


def _read_all(block: dict[int, Handed]) -> dict[int, list | str]:
    """Each repetition's descriptor, in the block's order, or why it cannot be read."""
    described = {}
    for rep, where in block.items():
        try:
            described[rep] = read_descriptor(where)
        except HandoffError as exc:
            described[rep] = str(exc)
    return described


def as_pinned(pinned: tuple[list[torch.Tensor], list[str]] | str, _max_bytes: int) -> list[torch.Tensor]:
    """A pinned repetition's outputs, copied into this process, where their digest is still the pinned one.

    The copy alone is compared: work the candidate queued before its stop could otherwise write right answers into its
    memory between this digest and the comparison's read.
    """
    if isinstance(pinned, str):
        raise HandoffError(pinned)
    tensors, digests = pinned  # opened within the check's bound (Pins.pin)
    found = [tensor.clone() for tensor in tensors]
    if _digests([found])[0] != digests:
        raise HandoffError("not what its block left: its digest differs from the pin's (rewritten after the reply?)")
    return found


def _digests(outputs: list[list[torch.Tensor]]) -> list[list[str]]:
    """Per repetition, per output, the digest of device outputs (worker/output_digest.py), read back at once."""
    digester = output_digest.load()
    digester.reserve(sum(map(len, outputs)), "cuda")
    queued = [[digester.of(tensor) for tensor in tensors] for tensors in outputs]
    return output_digest.read(queued, digester.joined())
