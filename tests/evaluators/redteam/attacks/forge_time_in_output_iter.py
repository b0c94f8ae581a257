# Attack (code run inside the harness's copy of the output, class 1): the control's real work, but its output comes
# as a one-element list subclass whose iteration, which the harness runs right after appending the repetition's time,
# rewrites that time to 1 ms. Outputs are now taken by their exact types, so the subclass is no output at all.
import sys as _sys

_Honest = ModelNew


def _timing_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"rep", "times", "plan"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class _Forged(list):
    def __iter__(self):
        local = _timing_locals()
        if local is not None and local["times"]:
            local["times"][-1] = 1.0
        return super().__iter__()


class ModelNew(_Honest):
    def forward(self, x):
        return _Forged([super().forward(x)])
