# ruff: noqa: F821  (appended to control.py, whose names it uses)
# Attack (the warm reference's memory; class: leaving the harness's own state behind for the next candidate): a
# correct kernel that fails in its last timing block, after the reference has timed its own blocks of the shape.
# Where its timing held every output, the reference keeps each repetition's answer and held copy for the check of
# the candidate's repetitions (worker/timed_answers.py), and gives them up only in that check. The check never
# comes: the candidate failed first. The warm reference serves the problem's next candidates with those copies still
# alive (on a GPU, on the device where they fit), and so for every candidate that fails there, or whose disputed
# timing is made again (the first timing's answers are never taken either).
import sys as _sys


def _timing_plan():
    frame = _sys._getframe(1)
    while frame is not None and "plan" not in frame.f_locals:
        frame = frame.f_back
    return None if frame is None else frame.f_locals["plan"]


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, x):
        plan = _timing_plan()
        if plan is not None and getattr(plan, "first", 0) == 2:  # the CPU's third and last block
            raise RuntimeError("failed in its last timing block")
        return x * self.weight + 1.0
