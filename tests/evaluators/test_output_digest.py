"""The output digest (worker/output_digest.py): its kernel against the same chains written out in Python, and what
changes it."""

import hashlib

import numpy as np
import pytest
import torch

from evaluators.worker import output_digest

MASK = (1 << 64) - 1


def chains(words: list[int], most: int) -> list[int]:
    """One round of output_digest.ptx, as its header writes it in C."""
    n = len(words)
    lanes = max(1, min(most, -(-n // output_digest.STEPS)))
    ends = []
    for lane in range(lanes):
        h = ((lane + 1) * 0x9E3779B97F4A7C15 & MASK) ^ n
        for step, i in enumerate(range(lane, n, lanes)):
            h ^= words[i] | (step << 32)
            h = h * 0xFF51AFD7ED558CCD & MASK
            h ^= h >> 33
            h = h * 0xC4CEB9FE1A85EC53 & MASK
            h ^= h >> 29
        ends.append(h)
    return ends


def digest_in_python(tensor: torch.Tensor) -> str:
    raw = tensor.reshape(-1).view(torch.uint8).cpu().numpy().tobytes()
    raw += b"\0" * (-len(raw) % 4)
    first = chains(list(np.frombuffer(raw, dtype=np.uint32).tolist()), output_digest.LANES)
    ends = chains(list(np.array(first, dtype=np.uint64).view(np.uint32).tolist()), output_digest.ENDS)
    label = f"{tensor.dtype}{list(tensor.shape)}"
    return hashlib.blake2b(label.encode() + np.array(ends, dtype=np.uint64).tobytes(), digest_size=16).hexdigest()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "tensor",
    [
        torch.arange(6000, dtype=torch.float32).reshape(60, 100),
        torch.arange(7, dtype=torch.int8),  # 7 bytes: padded to two words
        torch.ones(3, 5, dtype=torch.bfloat16),
        torch.tensor([True, False, True]),
        torch.empty(0, 4),
    ],
)
def test_the_kernel_computes_the_chains_its_header_describes(tensor):
    digester = output_digest.load()
    assert output_digest.read([[digester.of(tensor.cuda())]]) == [[digest_in_python(tensor)]]


@pytest.mark.gpu
def test_one_bit_anywhere_or_another_shape_changes_the_digest():
    digester = output_digest.load()
    base = torch.randn(1 << 22, device="cuda")  # 64 words a chain, 65536 chains: both rounds at work
    flipped = base.clone()
    flipped.view(torch.int32)[12345] ^= 1
    digests = output_digest.read([[digester.of(t)] for t in (base, flipped, base.reshape(2, -1), base.clone())])
    assert digests[0] != digests[1] and digests[0] != digests[2] and digests[0] == digests[3]


def test_the_python_chains_are_order_dependent_and_not_a_sum():
    """Swapping two words, or moving a difference from one word to another, changes a chain's end."""
    assert chains([1, 2], 1) != chains([2, 1], 1)
    assert chains([5, 0], 1) != chains([4, 1], 1)


@pytest.mark.gpu
def test_ends_kept_side_by_side_read_as_the_same_digests_and_overflow_falls_back():
    """A timing reserves one buffer for a block's ends and reads it in one copy (Digester.reserve, joined)."""
    digester = output_digest.load()
    tensors = [torch.randn(1000 + 7 * k, device="cuda") for k in range(5)]
    apart = output_digest.read([[digester.of(t)] for t in tensors])
    digester.reserve(len(tensors), "cuda")
    queued = [[digester.of(t)] for t in tensors]
    assert output_digest.read(queued, digester.joined()) == apart
    digester.reserve(0, "cuda")  # no room: each gets ends of its own, and the whole is read apart
    queued = [[digester.of(t)] for t in tensors]
    assert digester.joined() is None and output_digest.read(queued) == apart
