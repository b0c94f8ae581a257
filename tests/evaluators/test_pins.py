"""The reference's pin of a block's outputs (worker/pins.py), off the GPU: the IPC opens are stood in for, the
descriptors are real sealed files read through /proc as the reference reads a candidate's, the samples real."""

from __future__ import annotations

import json
import os

import pytest
import torch

from evaluators.worker import pins
from evaluators.worker.handoff import Handed, HandoffError, sealed


@pytest.fixture
def events(monkeypatch) -> list:
    """What the pin did, in order: ("read", rep name) and ("open", rep name); what it opens is 3 000 of a value."""
    log = []
    read = pins.read_descriptor

    def reading(handed):
        log.append(("read", handed.name))
        return read(handed)

    def opening(handed, entries, max_bytes, wait_event):
        assert wait_event is False  # what is there is what is read: its block synchronized every repetition
        log.append(("open", handed.name))
        return [torch.full(entry["shape"], float(entry["value"])) for entry in entries]

    monkeypatch.setattr(pins, "read_descriptor", reading)
    monkeypatch.setattr(pins, "open_described", opening)
    return log


def block(reps: int, broken: int | None = None) -> dict[int, Handed]:
    """A block's descriptors, one sealed file a repetition; `broken`'s is not JSON."""
    handed = {}
    for rep in range(reps):
        text = b"{" if rep == broken else json.dumps([{"dtype": "float32", "shape": [3000], "value": rep}]).encode()
        fd = sealed(f"s0-rep{rep}", lambda file, text=text: file.write(text))
        handed[rep] = Handed(os.getpid(), fd, f"s0-rep{rep}")
    return handed


def closed(handed: dict[int, Handed]) -> None:
    for where in handed.values():
        os.close(where.fd)


def test_every_descriptor_is_read_in_order_before_the_picked_are_opened(events):
    """A process watching its own descriptor files (inotify) sees all of them read, in order, and learns no pick."""
    handed = block(6)
    try:
        facts = pins.Pins().pin(handed, [1, 4], 1 << 20)
    finally:
        closed(handed)
    assert events == [("read", f"s0-rep{rep}") for rep in range(6)] + [("open", "s0-rep1"), ("open", "s0-rep4")]
    assert facts["opened"] == 2 and facts["opened_bytes"] == 2 * 12000 and facts["open_ms"] >= 0


def test_a_pinned_output_is_read_only_where_its_sample_still_holds(events):
    handed = block(3)
    pinned = pins.Pins()
    try:
        pinned.pin(handed, [0, 2], 1 << 20)
    finally:
        closed(handed)
    taken = pinned.take()
    assert sorted(taken) == [0, 2] and pinned.take() == {}  # a block's pins serve one check
    assert pins.as_pinned(taken[2], 1 << 20)[0].tolist() == [2.0] * 3000
    tensors, samples = taken[0]
    assert samples[0].places.numel() == pins.SAMPLES < 12000  # a sample of its bytes, at places drawn at the pin
    tensors[0][:] = 1.0  # written after the pin: by work the candidate left on the device
    with pytest.raises(HandoffError, match="differ from the pin's"):
        pins.as_pinned(taken[0], 1 << 20)


def test_an_output_a_tenth_unfinished_at_its_pin_is_caught_by_its_sample():
    """(1 - f) ** SAMPLES: a tenth left to finish after the pin passes one output's sample with probability 1e-187."""
    finished = torch.arange(10_000, dtype=torch.float32)
    unfinished = finished.clone()
    unfinished[::10] = 0.0
    caught = sum(not pins.Sample(unfinished).holds(finished) for _ in range(20))
    assert caught == 20


def test_the_places_come_from_a_generator_no_input_draw_leads_to(events):
    """Reseeding torch's own generators, as every input draw does, moves nothing a pin samples."""
    output = torch.arange(50_000, dtype=torch.float32)
    torch.manual_seed(0)
    first = pins.Sample(output).places
    torch.manual_seed(0)
    assert not torch.equal(first, pins.Sample(output).places)


def test_a_picked_repetition_with_a_broken_descriptor_is_unreadable_and_an_unpicked_one_is_not_the_pins(events):
    handed = block(4, broken=1)
    pinned = pins.Pins()
    try:
        pinned.pin(handed, [1, 2], 1 << 20)
        pinned_elsewhere = pins.Pins()
        pinned_elsewhere.pin(handed, [0, 3], 1 << 20)
    finally:
        closed(handed)
    with pytest.raises(HandoffError, match="not a JSON descriptor"):
        pins.as_pinned(pinned.take()[1], 1 << 20)
    assert sorted(pinned_elsewhere.take()) == [0, 3]  # left for the check's release, which names it


def test_the_references_own_pin_reads_its_descriptors_as_it_reads_theirs_and_samples_as_many(events, monkeypatch):
    sampled = []
    monkeypatch.setattr(pins, "Sample", lambda tensor: sampled.append(tensor))
    handed = block(5)
    held = {10 + rep: [torch.full((2,), float(rep))] for rep in range(5)}
    try:
        facts = pins.pin_own({10 + rep: where for rep, where in handed.items()}, held, [0, 3], 10)
    finally:
        closed(handed)
    assert events == [("read", f"s0-rep{rep}") for rep in range(5)]  # no IPC open: its own memory
    assert [t.tolist() for t in sampled] == [[0.0, 0.0], [3.0, 3.0]]
    assert facts == {"opened": 0, "opened_bytes": 0, "open_ms": 0.0}
