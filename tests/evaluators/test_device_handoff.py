"""The device handoff's descriptor: every field the candidate wrote is checked before torch opens anything."""

import contextlib
import json
import os
import subprocess
import sys

import pytest
import torch

from evaluators.worker.device_handoff import DESCRIPTOR_BYTES, HeldOutputs, open_shared, release_unread
from evaluators.worker.handoff import Handed, HandoffError, sealed

COUNTER = f"/torch_ks_test_{os.getpid()}"
GOOD_STORAGE = {
    "handle": "ab" * 64, "size": 4096, "offset": 0, "element_offset": 0, "counter": COUNTER,
    "counter_offset": 0, "event": "cd" * 64, "sync": True,
}  # fmt: skip


@pytest.fixture(autouse=True)
def counter_file():
    """A reference-counter file of torch's size where torch would make one, so only the field under test is wrong."""
    path = f"/dev/shm{COUNTER}"
    with open(path, "wb") as file:
        file.truncate(8 * 10000)
    yield
    os.unlink(path)


@pytest.fixture
def write():
    """Hands a descriptor over to this process, sealed as the candidate's harness does; closed afterwards."""
    fds = []

    def handed(entries) -> Handed:
        text = (entries if isinstance(entries, str) else json.dumps(entries)).encode()
        fds.append(sealed("s0-trial0", lambda file: file.write(text)))
        return Handed(os.getpid(), fds[-1], "s0-trial0")

    yield handed
    for fd in fds:
        os.close(fd)


def _entry(**storage):
    return {"dtype": "float32", "shape": [32, 32], "storage": GOOD_STORAGE | storage}


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        ("not json", "not a JSON descriptor"),
        ({"dtype": "float32"}, "not describe a list"),
        ([{"dtype": "object", "shape": [4]}], "no valid dtype and shape"),
        ([{"dtype": "float32", "shape": [-1]}], "no valid dtype and shape"),
        ([{"dtype": "float32", "shape": [2] * 17}], "no valid dtype and shape"),
        ([{"dtype": "float32", "shape": [1 << 40]}], "describes over"),
        ([{"dtype": "float32", "shape": [4]}], "has no storage"),
        ([_entry(handle=7)], "malformed storage"),
        ([_entry(handle="zz")], "malformed storage"),
        ([_entry(size=100)], "invalid storage description"),  # 4 KiB of floats cannot sit in 100 bytes
        ([_entry(element_offset=1)], "invalid storage description"),  # one element past the storage's end
        ([_entry(size=True)], "invalid storage description"),
        ([_entry(counter="/../../etc/passwd")], "invalid storage description"),
        ([_entry(counter_offset=10000)], "invalid storage description"),
        ([_entry(sync="yes")], "invalid storage description"),
        ([_entry(counter="/torch_no_such_counter_file")], "invalid storage description"),
    ],
)
def test_a_malformed_descriptor_is_the_candidates_handoff_error(write, entries, why):
    with pytest.raises(HandoffError, match=why):
        open_shared(write(entries), max_bytes=1 << 30)


def test_a_valid_description_reaches_torch_and_a_handle_it_cannot_open_is_the_candidates(write):
    # Every check passes; the handle is made up, so opening it fails (there is no GPU, or no such allocation).
    with pytest.raises(HandoffError, match="cannot be opened"):
        open_shared(write([_entry()]), max_bytes=1 << 30)


def test_a_missing_unsealed_or_oversized_descriptor_is_refused_unread(write):
    with pytest.raises(HandoffError, match="cannot be opened"):
        open_shared(Handed(os.getpid(), -1, "s0-trial1"), max_bytes=1 << 30)
    unsealed = os.memfd_create("s0-trial1", os.MFD_ALLOW_SEALING)
    try:
        os.write(unsealed, b"[]")
        with pytest.raises(HandoffError, match="not sealed"):
            open_shared(Handed(os.getpid(), unsealed, "s0-trial1"), max_bytes=1 << 30)
    finally:
        os.close(unsealed)
    with pytest.raises(HandoffError, match=f"over the {DESCRIPTOR_BYTES}-byte limit"):
        open_shared(write(" " * (DESCRIPTOR_BYTES + 1)), max_bytes=1 << 30)


def test_empty_outputs_need_no_storage(write):
    if not torch.cuda.is_available():
        pytest.skip("an empty output is still made on the GPU")
    (empty,) = open_shared(write([{"dtype": "int32", "shape": [0, 3]}]), max_bytes=1 << 30)
    assert empty.shape == (0, 3) and empty.is_cuda


PRODUCER = r"""
import os, sys, torch
from evaluators.worker.device_handoff import HeldOutputs, share_outputs
held = HeldOutputs("cuda")
with held.allocating():  # as the candidate keeps them: in a pool of their own
    big = torch.arange(1 << 20, device="cuda", dtype=torch.float32).reshape(1024, 1024)
    outputs = [big, torch.ones(3, device="cuda")]
fd = share_outputs("s0-trial0", outputs)
held.hold(outputs)
print(os.getpid(), fd, flush=True)
sys.stdin.readline()  # alive until the reader is done, as the candidate is until its next command
"""


@pytest.mark.gpu
def test_outputs_shared_by_another_process_are_read_on_the_device():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        pid, fd = map(int, producer.stdout.readline().split())
        path = Handed(pid, fd, "s0-trial0")
        found = open_shared(path, max_bytes=1 << 30)
        assert [t.shape for t in found] == [(1024, 1024), (3,)] and all(t.is_cuda for t in found)
        assert torch.equal(found[0].flatten(), torch.arange(1 << 20, device="cuda", dtype=torch.float32))
        with pytest.raises(HandoffError, match="describes over"):
            open_shared(path, max_bytes=1 << 20)  # the bound counts what the descriptor claims
        del found
    finally:
        producer.communicate("done\n", timeout=60)


@pytest.mark.gpu
def test_a_held_output_pins_no_segment_it_did_not_need():
    """A small output kept after a large cached block was freed lands in its own pool, not in that block."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    torch.cuda.empty_cache()
    base = torch.cuda.memory_reserved()

    def keep_after_a_large_block(held):
        big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")  # like the poisoned block
        del big
        with held.allocating() if held else contextlib.nullcontext():
            kept = torch.ones(1 << 20, device="cuda")
        torch.cuda.empty_cache()
        return kept, torch.cuda.memory_reserved() - base

    kept, pinned = keep_after_a_large_block(None)
    assert pinned >= 1 << 30  # through the shared pool the 4 MiB output keeps the whole 1 GiB block
    del kept
    torch.cuda.empty_cache()
    held = HeldOutputs("cuda")
    kept, pinned = keep_after_a_large_block(held)
    held.hold([kept])
    del kept
    assert pinned < 64 << 20
    held.release()
    assert torch.cuda.memory_reserved() == base


BLOCKS = r"""
import os, sys, torch
from evaluators.worker.device_handoff import HeldOutputs, share_outputs
held = HeldOutputs("cuda")
for block in range(4):
    held.release(keep_pool=True)  # as a timing command begins: the last block's copies go, the pool stays
    with held.allocating():
        copies = [[torch.full((64 << 20,), float(block), device="cuda")] for _ in range(4)]
    fds = [share_outputs(f"s0-rep{k}", outputs) for k, outputs in enumerate(copies)]
    for outputs in copies:
        held.hold(outputs)
    del copies
    print(os.getpid(), torch.cuda.memory_reserved(), *fds, flush=True)
    sys.stdin.readline()  # stopped until the reference is done with the block
"""


@pytest.mark.gpu
def test_copies_the_reference_reads_or_lets_go_are_given_back_block_after_block():
    """Two of a block's four copies opened and dropped, the other two's counts let go: the pool is reused, not grown.

    Each share's count must come back to exactly zero: let go twice, the copies stayed allocated in the candidate's
    process, 12 GiB more a block on an H200, until level1/19 ran out of memory."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    producer = subprocess.Popen(
        [sys.executable, "-c", BLOCKS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    reserved = []
    try:
        for block in range(4):
            pid, held, *fds = map(int, producer.stdout.readline().split())
            reserved.append(held)
            for k, fd in enumerate(fds):
                handed = Handed(pid, fd, f"s0-rep{k}")
                if k < 2:
                    (found,) = open_shared(handed, max_bytes=1 << 30)
                    assert float(found[0]) == block
                    del found
                else:
                    release_unread(handed)
            producer.stdin.write("next\n")
            producer.stdin.flush()
    finally:
        producer.communicate("done\n", timeout=60)
    # The allocator may settle on a segment more once the first block's copies were freed; after that, no growth.
    assert reserved[1] == reserved[2] == reserved[3], reserved


def test_a_descriptor_of_values_no_check_foresaw_is_the_candidates_handoff_error(write):
    """An unhashable dtype name, a counter that is a mapping: whatever reading the candidate's JSON raises is its
    HandoffError, never the reference's own failure (which blames the problem)."""
    with pytest.raises(HandoffError):
        open_shared(write([{"dtype": ["float32"], "shape": [4]}]), max_bytes=1 << 30)
    for read in (lambda handed: open_shared(handed, max_bytes=1 << 30), release_unread):
        with pytest.raises(HandoffError):
            read(write([{"dtype": "float32", "shape": [4], "storage": {**GOOD_STORAGE, "counter": {}}}]))


def test_the_counts_a_sharer_kept_aside_are_let_go_once_each(monkeypatch):
    """The reference's own timed copies: their counts are let go before they are dropped, never inside the seal."""
    from evaluators.worker import device_handoff

    released = []
    monkeypatch.setattr(device_handoff, "_RELEASE", lambda counter, offset: released.append((counter, offset)))
    counts = [(b"/torch_1", 3), (b"/torch_1", 4)]
    device_handoff.let_go(counts)
    device_handoff.let_go(counts)
    assert released == [(b"/torch_1", 3), (b"/torch_1", 4)] and counts == []


def test_a_session_lets_go_of_its_own_counts_before_it_drops_its_outputs_and_not_at_a_pin(monkeypatch, tmp_path):
    from evaluators.worker import session as session_module

    order = []
    monkeypatch.setattr(session_module, "let_go", lambda counts: order.append(("let_go", list(counts))))
    state = session_module.Session.__new__(session_module.Session)
    state.counts, state.handed, state.sealing, state.timing_tensors, state.device = (
        [(b"/torch_1", 0)],
        [],
        None,
        None,
        "cpu",
    )
    state.held = type("Held", (), {"release": lambda self, keep_pool: order.append(("release", keep_pool))})()
    state.begin({"cmd": "watch"})
    state.begin({"cmd": "pin"})
    assert order == []  # the reference's watch and pin of its own block: the pin reads what its seal handed over
    state.begin({"cmd": "check_reps"})
    assert order == [("let_go", [(b"/torch_1", 0)]), ("release", True)]  # the pool kept through the shape
