"""The candidate-to-reference handoff: files read without trusting them, and per-trial verdicts from them."""

import os
from collections import OrderedDict

import pytest
import torch

from evaluators.worker.compare import compare_outputs, judge
from evaluators.worker.handoff import HandoffError, output_path, read_outputs, write_outputs

LIMIT = 1 << 20


def test_outputs_round_trip(tmp_path):
    outputs = [torch.randn(3, 4), torch.arange(5)]
    write_outputs(tmp_path / "trial0.pt", outputs)
    found = read_outputs(tmp_path / "trial0.pt", LIMIT)
    assert len(found) == 2 and all(torch.equal(a, b) for a, b in zip(found, outputs, strict=True))


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        (lambda p: None, "cannot be opened"),
        (lambda p: os.symlink(p.with_name("elsewhere.pt"), p), "cannot be opened"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: p.write_bytes(b"\0" * (LIMIT + 1)), "over the 1048576-byte limit"),
        (lambda p: p.write_bytes(b"not a zip archive"), "not a readable tensor file"),
        (lambda p: torch.save(OrderedDict(out=torch.ones(2)), p), "does not hold a list of tensors"),
        (lambda p: torch.save([torch.ones(2), 3], p), "does not hold a list of tensors"),
        (lambda p: torch.save([torch.nn.Parameter(torch.ones(2))], p), "does not hold a list of tensors"),
        (lambda p: torch.save([torch.ones(2, 2).to_sparse()], p), "not dense"),
        (lambda p: torch.save([torch.ones(2, 2).to_sparse_csr()], p), "not dense"),
    ],
    ids=[
        "missing",
        "symlink",
        "fifo",
        "oversized",
        "garbage",
        "dict",
        "non-tensor",
        "tensor-subclass",
        "sparse",
        "sparse-csr",
    ],  # fmt: skip
)
def test_hostile_files_are_refused_with_a_reason(tmp_path, plant, reason):
    path = tmp_path / "trial0.pt"
    write_outputs(path.with_name("elsewhere.pt"), [torch.ones(2)])  # a valid file a link could point at
    plant(path)
    with pytest.raises(HandoffError, match=reason):
        read_outputs(path, LIMIT)


def test_pickled_objects_are_never_executed(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, ("touch pwned",))

    torch.save([Payload()], tmp_path / "trial0.pt", _use_new_zipfile_serialization=True)
    with pytest.raises(HandoffError, match="not a readable tensor file"):
        read_outputs(tmp_path / "trial0.pt", LIMIT)
    assert not (tmp_path / "pwned").exists()


def test_judge_reports_each_trial_and_stops_at_the_first_mismatch(tmp_path):
    items = [(output_path(tmp_path, 0, "trial", t), [torch.zeros(2, 2)]) for t in range(4)]
    write_outputs(items[0][0], [torch.zeros(2, 2)])
    wrong = torch.zeros(2, 2)
    wrong[1, 0] = 1.0
    write_outputs(items[1][0], [wrong])
    verdicts = judge(items, None, None, LIMIT, "cpu", 3)
    assert verdicts[0] is None and len(verdicts) == 2
    assert "worst at (1, 0)" in verdicts[1]["summary"]


def test_judge_treats_missing_outputs_as_a_mismatch(tmp_path):
    verdicts = judge([(output_path(tmp_path, 2, "rep", 0), [torch.zeros(2)])], None, None, LIMIT, "cpu", 1 << 20)
    assert verdicts == [{"summary": "outputs unreadable: s2-rep0.pt cannot be opened (No such file or directory)",
                         "details": ""}]  # fmt: skip


def test_chunked_comparison_finds_the_worst_element_across_chunks():
    expected = torch.linspace(-1, 1, 1000).reshape(10, 100)
    found = expected.clone()
    found[2, 5] += 0.01
    found[8, 90] += 0.5  # the worst, in a later chunk
    for chunk in (7, 64, 1000):
        mismatch = compare_outputs([found], [expected], 1e-4, 1e-4, "cpu", chunk)
        assert "2 of 1000 elements" in mismatch.summary and "worst at (8, 90)" in mismatch.summary, chunk


def test_reads_stop_at_the_size_that_was_checked(tmp_path):
    from evaluators.worker.handoff import _BoundedFile

    path = tmp_path / "grows.pt"
    path.write_bytes(b"x" * 10 + b"y" * 90)  # as if the file grew after its size was checked
    fd = os.open(path, os.O_RDONLY)
    try:
        view = _BoundedFile(fd, 10)
        assert view.read() == b"x" * 10 and view.read(5) == b""
        view.seek(-4, os.SEEK_END)
        assert view.read(100) == b"xxxx"
    finally:
        os.close(fd)
