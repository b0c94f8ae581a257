"""Red team of the float32 screen (worker/compare.py) and of the release of unread device copies' counts
(worker/device_handoff.py release_unread, worker/reference.py check_reps). CPU only: each attack is the candidate's
data reaching the reference's code, with no GPU needed to show the flaw.

Each test states what the trust boundary promises (docs/CONTRACTS.md) and fails while the flaw is there.
"""

import os

import pytest
import torch

from evaluators.worker import compare
from evaluators.worker.compare import compare_outputs, judge
from evaluators.worker.device_handoff import open_shared, release_unread
from evaluators.worker.handoff import Handed, HandoffError, sealed
from evaluators.worker.reference import check_reps

# A descriptor the candidate's process writes in place of share_outputs' JSON: well under DESCRIPTOR_BYTES (64 KiB),
# sealed as the harness seals it, and nested deeper than the JSON decoder's recursion limit.
NESTED = b"[" * 50_000


@pytest.fixture
def hand():
    """Hands bytes over to this process in a sealed memory file, as a candidate's harness does; closed afterwards."""
    fds = []

    def handed(raw: bytes, name: str = "s0-rep1") -> Handed:
        fds.append(sealed(name, lambda file: file.write(raw)))
        return Handed(os.getpid(), fds[-1], name)

    yield handed
    for fd in fds:
        os.close(fd)


# --- the counts of unread device copies --------------------------------------------------------------------------


def test_a_deeply_nested_unread_descriptor_is_the_candidates_handoff_error(hand):
    """CONTRACTS: "Descriptors or digests a timing reply names wrongly make its outputs unreadable: the candidate's
    `incorrect`, not a failure of the reference". json.loads raises RecursionError (a RuntimeError, not the ValueError
    _descriptor catches), so release_unread lets it out instead of a HandoffError."""
    with pytest.raises(HandoffError):
        release_unread(hand(NESTED))


def test_a_deeply_nested_unread_descriptor_makes_the_check_incorrect_not_a_reference_error(hand):
    """The same through check_reps, as the reference's worker runs it on a GPU (held_on_device): the unread
    repetition's descriptor must come back as that repetition's mismatch. As it is, the RecursionError leaves
    serve_reference, the worker replies "error", and the parent raises ProblemError ("the reference failed in
    compare_timed: RecursionError ...", judge/reference_pool.py _checked): the problem is blamed and the warm reference
    killed, for data the candidate wrote. No CUDA call is reached before the exception."""
    picked, unread = hand(b"[]", "s0-rep0"), hand(NESTED, "s0-rep1")
    session = type("S", (), {"device": "cuda", "job": {"max_result_mb": 1}})()
    command = {
        "shape": 0, "reps": [0], "blocks": [[0, 2, 1234]], "held_on_device": True, "pid": os.getpid(),
        "fds": [picked.fd], "unread": [1], "unread_fds": [unread.fd],
    }  # fmt: skip
    pins = {0: ([], [])}  # repetition 0 pinned: no outputs, nothing to digest
    verdict = check_reps(session, None, command, (None, None), {"compare_chunk": 1 << 20}, {}, pins)
    assert verdict["mismatch"] is not None and verdict["mismatch"][0] == 1


def test_a_deeply_nested_trial_descriptor_is_the_candidates_mismatch(hand):
    """The same descriptor as a correctness trial's (open_shared through judge, worker/reference.py "compare"): judge
    turns only HandoffError into "outputs unreadable", so the RecursionError blames the problem there too."""
    expected = [torch.zeros(4)]
    verdicts = judge([(hand(NESTED, "s0-trial0"), expected)], None, None, 1 << 20, "cpu", 1 << 20, open_shared)
    assert verdicts[0] is not None and "unreadable" in verdicts[0]["summary"]


# --- the comparison ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "found", "expected"),
    [
        (torch.float32, 0.0, float("nan")),
        (torch.bfloat16, -0.0, float("nan")),
        (torch.float64, torch.finfo(torch.float64).max, float("inf")),
        (torch.float64, torch.finfo(torch.float64).min, float("-inf")),
    ],
)
def test_a_reference_nan_or_infinity_is_matched_only_by_itself(dtype, found, expected):
    """_float_chunk compares the reference's non-finite places after nan_to_num(0.0) on both sides, so a candidate's 0
    where the reference has NaN, or float64's largest finite value where it has an infinity, reads as reproduced
    (its comment: "Non-finite reference values must be matched exactly"). Not from the screen, which sends all of
    these to the float64 pass; found while comparing the two."""
    ref = torch.tensor([1.0, expected], dtype=dtype)
    out = torch.tensor([1.0, found], dtype=dtype)
    assert compare_outputs([out], [ref], None, None) is not None


def test_the_screen_never_passes_what_the_float64_comparison_fails_with_a_negative_rtol(monkeypatch):
    """Low severity, the problem's tolerance and not the candidate's: with rtol < 0 the bound atol + rtol*|r| cancels,
    and atol's rounding to float32 makes the screen's bound 0 where float64's is -3e-39; the screen passes what the
    float64 pass (the verdict it stands for) fails. Found by brute force over dtypes, specials and tolerances; no
    element different from the reference's passed this way."""
    ref = torch.tensor([1e-30], dtype=torch.float32)
    screened = compare_outputs([ref.clone()], [ref], 1e-30, -1.0)
    monkeypatch.setattr(compare, "_SCREENED", ())
    exact = compare_outputs([ref.clone()], [ref], 1e-30, -1.0)
    assert (screened is None) == (exact is None)
