"""What the timing loop holds of each repetition's outputs (worker/trials.hold_as_made): the call's own tensors, with no
copy, where they can be; a copy inside the repetition's time where the call reuses a buffer or returns a view.

A copy made after the end event was harness work the parent credited at the reference's cost, which a candidate
handing its outputs over as made skipped. Run on the CPU with the GPU path's logging clocks
(tests/evaluators/test_timing_lead.py), so where each copy falls is checked on any machine.
"""

from contextlib import contextmanager

import pytest
import torch

from evaluators import EvalOptions, evaluate
from evaluators.worker.timing import InputPool, TimingPlan, time_reps
from evaluators.worker.trials import OutputReused, flatten_outputs, hold_as_made
from tests.evaluators.conftest import PROBLEM, candidate
from tests.evaluators.test_timing_lead import Flush, LoggingClocks

REPS = 4


def looped(call, reps: int = REPS) -> tuple[dict, list[str]]:
    """The GPU path's loop over `reps` held repetitions (held on the CPU: CPU tensors); its held outputs and log."""
    log: list[str] = []

    def fresh_inputs(seed: int) -> list:
        return [torch.full((8,), float(seed % 1000))]

    @contextmanager
    def keep(on_device: bool):
        log.append("copy")
        yield

    def logged(args):
        log.append("call")
        return call(args)

    plan = TimingPlan(0, reps, nonce=7, hold=True, flush_mb=1, timing_sets=2, held_device="cpu", lead_ms=0.2)
    _, held = time_reps(logged, fresh_inputs, plan, NamedEvents(log, reps), 0, keep,
                        (InputPool(fresh_inputs, 2), Flush(log)))  # fmt: skip
    return held, log


class NamedEvents(LoggingClocks):
    """The logging clocks, whose events time_reps makes are named: its starts, then its ends."""

    def __init__(self, log: list, reps: int):
        super().__init__(log)
        self.names = iter([f"start{i}" for i in range(reps)] + [f"end{i}" for i in range(reps)])

    def Event(self, enable_timing: bool) -> str:  # noqa: N802 (torch.cuda.Event's name)
        return next(self.names)


def test_fresh_outputs_are_held_as_the_call_made_them():
    made = []

    def call(args):
        made.append(args[0] * 2)
        return made[-1]

    held, log = looped(call)
    assert "copy" not in log
    # The call's own storage, not an equal copy.
    assert all(outputs[0].untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
               for outputs, out in zip(held.values(), made, strict=True))  # fmt: skip


def test_a_reused_buffer_is_timed_again_copying_every_output_inside_the_repetitions_time():
    """Found at the second repetition, when the first's output held as made is already rewritten: the block is run
    again with every output copied before the end event is queued, and each repetition keeps its own values. The
    stream is released as the call returns, before the copy, as it is where nothing is copied: the copy's host work the
    device's work does not hide is timed, as its device work is (held to the end event, it fell outside the timer and
    inside the parent's clock: an honest call was disputed)."""
    buffer = torch.empty(8)

    def call(args):
        return torch.mul(args[0], 2, out=buffer)

    held, log = looped(call)
    values = [outputs[0][0].item() for outputs in held.values()]
    assert len(set(values)) == REPS, values  # none overwritten by a later repetition
    assert log.count("call") == 2 + REPS  # the first run stopped at its second call
    again = log[log.index("record start0", log.index("record start0") + 1) :]
    for i in range(REPS):
        at = again.index(f"record start{i}")
        assert again[at + 1 : at + 5] == ["call", "release", "copy", f"record end{i}"], again[at : at + 5]


def test_memory_an_earlier_output_lives_in_is_found_through_another_storage():
    """A view of a held output's memory, or a storage over part of it, is the same memory."""
    base = torch.zeros(16)
    spans: list = []
    assert hold_as_made([base[:8]], "cpu", spans, torch.clone)[0].data_ptr() == base.data_ptr()
    with pytest.raises(OutputReused):
        hold_as_made([base[8:].reshape(2, 4).t()], "cpu", spans, torch.clone)


def test_a_view_and_an_output_returned_twice_are_copied():
    def call(args):
        y = args[0].reshape(2, 4) * 3
        return y.t(), y, y

    held, log = looped(call, reps=1)
    view, first, again = held[0]
    assert view.is_contiguous() and torch.equal(view, first.t())
    assert again.untyped_storage().data_ptr() != first.untyped_storage().data_ptr() and torch.equal(again, first)
    assert log.count("copy") == 2
    assert log[log.index("call") + 1 :][:4] == ["release", "copy", "copy", "record end0"]


def test_an_output_on_another_device_is_left_for_the_copy_after_the_time():
    x = torch.ones(3)
    assert hold_as_made([x], "meta", [], torch.clone) == [None]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_candidate_reusing_its_output_buffer_is_judged_correct_and_not_disputed(device, cache_dir):
    """On a GPU its first block is timed again with every output copied; each block after copies from the start."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    result = evaluate(str(PROBLEM), candidate("reuses_output_buffer"), device, EvalOptions(cache_dir=cache_dir))
    assert result.status == "correct", (result.status, result.error)
    assert result.speedup is not None
    assert "timing_disputed" not in [flag.code for flag in result.flags], result.flags


def test_a_lazily_conjugated_output_is_copied_resolved():
    """Its memory holds the values before conjugation: held as made, the reference would read those (red team)."""
    x = torch.randn(8, dtype=torch.complex64)
    copies = []

    def copy(tensor):
        copies.append(tensor)
        return flatten_outputs([tensor])[0]

    (kept,) = hold_as_made([x.conj()], "cpu", [], copy)
    assert len(copies) == 1 and not kept.is_conj() and torch.equal(kept, x.conj().resolve_conj())


def test_a_view_is_copied_once_into_a_dense_output():
    y = torch.arange(12.0).reshape(3, 4)
    (kept,) = flatten_outputs([y.t()])
    assert kept.is_contiguous() and torch.equal(kept, y.t())
