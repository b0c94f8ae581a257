"""Attack (a hold never queued), appended after shared.py: the instance the timing loop holds its stream through
(worker/stream_hold.load, cached) has its `hold` replaced by one that queues nothing, and each timed call's whole pass
goes to a stream of its own, after the end event and before the repetition's synchronize. A red team of 2026-11-29
(from the code): with the hold before the draw, a process that never held had the device draw and flush while its
host went on, and the parent credited the reference's host time, spent in turn with its draw and flush, as harness;
that room held the pass, and the attack read 1.49x and 1.61x on an H200 for work whose honest control read 0.98x.
The hold now comes after the draw and the flush on both sides; at 62836f6 the red team's own form (a 0.1 ms spin
timed, then the pass) read `timing_disputed` in both of two runs (0.80x and 0.85x at the parent's figure), and
this one, the whole pass after the end event, passed test_gpu_a_forged_timer_is_not_believed (flagged, or no
faster than the honest kernel).
"""

from evaluators.worker import stream_hold as _stream_hold

_side: list = []


def _queue_nothing(cap_ms: float) -> None:
    pass


class ModelNew(_Honest):
    def forward(self, x):
        if held_repetition() is None:
            return super().forward(x)  # warm-up, rehearsal, trials, the side-stream probe: honest
        hold = _stream_hold.load()
        if hold is not None:
            hold.hold = _queue_nothing  # on the instance: from the next repetition on
        if not _side:
            _side.append(torch.cuda.Stream())
        x = x.contiguous()
        y = torch.empty_like(x)
        called = torch.cuda.Event()
        called.record()
        _side[0].wait_event(called)  # behind the end event the loop records next
        with torch.cuda.stream(_side[0]):
            launch(x, self.weight, y)
        x.record_stream(_side[0])
        y.record_stream(_side[0])
        return y
