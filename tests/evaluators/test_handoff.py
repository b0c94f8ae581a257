"""The candidate-to-reference handoff: sealed memory files read without trusting them, and per-trial verdicts."""

import fcntl
import os
import subprocess
import sys
import zipfile
from collections import OrderedDict

import pytest
import torch

from evaluators.worker.compare import compare_outputs, judge
from evaluators.worker.handoff import Handed, HandoffError, read_outputs, sealed, write_outputs

LIMIT = 1 << 20


@pytest.fixture
def opened():
    """Descriptors this test hands over to itself, closed afterwards."""
    fds = []
    yield fds
    for fd in fds:
        os.close(fd)


def _here(fd: int, name: str = "s0-trial0") -> Handed:
    return Handed(os.getpid(), fd, name)


def test_outputs_round_trip(opened):
    outputs = [torch.randn(3, 4), torch.arange(5)]
    opened.append(write_outputs("s0-trial0", outputs))
    found = read_outputs(_here(opened[-1]), LIMIT)
    assert len(found) == 2 and all(torch.equal(a, b) for a, b in zip(found, outputs, strict=True))


def test_a_handed_over_file_cannot_be_changed_by_anyone(opened):
    opened.append(write_outputs("s0-trial0", [torch.ones(4)]))
    for fd in (opened[0], os.open(f"/proc/self/fd/{opened[0]}", os.O_RDWR)):  # its writer's, and one reopened
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"x", 0)
        with pytest.raises(PermissionError):
            os.truncate(fd, 0)
    with pytest.raises(PermissionError):
        fcntl.fcntl(opened[0], fcntl.F_ADD_SEALS, 0)  # nor unsealed: seals only ever grow, and this one is final


def _memory_file(write, seals: int) -> int:
    fd = os.memfd_create("planted", os.MFD_ALLOW_SEALING)
    write(fd)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


def _disk_file(tmp_path) -> int:
    (tmp_path / "on-disk.pt").write_bytes(b"")
    return os.open(tmp_path / "on-disk.pt", os.O_RDONLY)


def _fifo(tmp_path) -> int:
    os.mkfifo(tmp_path / "fifo")
    return os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK)


def _deflated(file) -> None:
    """A zip archive whose one record is deflated: 64 KiB of zeros in a few hundred bytes."""
    with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\0" * (1 << 16))


def _with_attribute(**attributes) -> torch.Tensor:
    tensor = torch.ones(2)
    for name, value in attributes.items():
        setattr(tensor, name, value)
    return tensor


def _torch_saved(value) -> int:
    return sealed("planted", lambda file: torch.save(value, file))


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        (lambda tmp: -1, "cannot be opened"),
        (_disk_file, "not a memory file that can be sealed"),
        (_fifo, "not a regular file"),
        (lambda tmp: _memory_file(lambda fd: torch.save([torch.ones(2)], f"/proc/self/fd/{fd}"), 0), "not sealed"),
        (lambda tmp: _memory_file(lambda fd: None, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW), "not sealed"),
        (lambda tmp: sealed("planted", lambda file: file.write(b"\0" * (LIMIT + 1))), "over the 1048576-byte limit"),
        (lambda tmp: sealed("planted", lambda file: file.write(b"not a zip archive")), "not a torch.save archive"),
        (lambda tmp: sealed("planted", _deflated), "compressed records"),
        (lambda tmp: _torch_saved(OrderedDict(out=torch.ones(2))), "does not hold a list of tensors"),
        (lambda tmp: _torch_saved([torch.ones(2), 3]), "does not hold a list of tensors"),
        (lambda tmp: _torch_saved([torch.nn.Parameter(torch.ones(2))]), "does not hold a list of tensors"),
        (lambda tmp: _torch_saved([torch.ones(2, 2).to_sparse()]), "not dense"),
        (lambda tmp: _torch_saved([torch.ones(2, 2).to_sparse_csr()]), "not dense"),
        (lambda tmp: _torch_saved([torch.empty(2, device="meta")]), "not dense on the CPU"),
        (lambda tmp: _torch_saved([torch.nested.nested_tensor([torch.ones(2), torch.ones(2)])]), "not dense"),
        (lambda tmp: _torch_saved([_with_attribute(numel=complex)]), "carries Python attributes"),
    ],
    ids=[
        "missing",
        "file-on-disk",
        "fifo",
        "unsealed",
        "writable",
        "oversized",
        "garbage",
        "deflated",
        "dict",
        "non-tensor",
        "tensor-subclass",
        "sparse",
        "sparse-csr",
        "meta",
        "nested",
        "attribute",
    ],  # fmt: skip
)
def test_hostile_handoffs_are_refused_with_a_reason(tmp_path, opened, plant, reason):
    fd = plant(tmp_path)
    if fd >= 0:
        opened.append(fd)
    with pytest.raises(HandoffError, match=reason):
        read_outputs(_here(fd), LIMIT)


def test_pickled_objects_are_never_executed(tmp_path, opened):
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    opened.append(sealed("planted", lambda file: torch.save([Payload()], file, _use_new_zipfile_serialization=True)))
    with pytest.raises(HandoffError, match="not a readable tensor file"):
        read_outputs(_here(opened[-1]), LIMIT)
    assert not (tmp_path / "pwned").exists()


def test_another_process_reads_what_was_handed_over_only_through_the_descriptor_it_was_given(opened):
    opened.append(write_outputs("s0-trial0", [torch.full((3,), 7.0)]))
    read = (
        "import sys, torch; from evaluators.worker.handoff import Handed, read_outputs; "
        "print(read_outputs(Handed(int(sys.argv[1]), int(sys.argv[2]), 's0-trial0'), 1 << 20)[0].tolist())"
    )
    found = subprocess.run(
        [sys.executable, "-c", read, str(os.getpid()), str(opened[-1])], capture_output=True, text=True, timeout=120
    )
    assert found.stdout.strip() == "[7.0, 7.0, 7.0]", found.stderr


def test_judge_reports_each_trial_and_stops_at_the_first_mismatch(opened):
    wrong = torch.zeros(2, 2)
    wrong[1, 0] = 1.0
    opened += [write_outputs("s0-trial0", [torch.zeros(2, 2)]), write_outputs("s0-trial1", [wrong])]
    items = [(_here(fd, f"s0-trial{t}"), [torch.zeros(2, 2)]) for t, fd in enumerate([*opened, -1, -1])]
    verdicts = judge(items, None, None, LIMIT, "cpu", 3)
    assert verdicts[0] is None and len(verdicts) == 2
    assert "worst at (1, 0)" in verdicts[1]["summary"]


def test_judge_treats_missing_outputs_as_a_mismatch():
    verdicts = judge([(_here(-1, "s2-rep0"), [torch.zeros(2)])], None, None, LIMIT, "cpu", 1 << 20)
    assert verdicts == [{"summary": "outputs unreadable: s2-rep0 cannot be opened (No such file or directory)",
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
