# Attack (a forged time of zero, class 5): does the control's work, and every repetition's time reads 0 ms (a
# patched timer on CUDA, the clock's read after the call on the CPU). The judge must still reach a verdict, at the
# parent's figure.
import sys as _sys

_Honest = ModelNew


def _timing_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"rep", "times", "plan"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class ModelNew(_Honest):
    def forward(self, x):
        out = super().forward(x)
        local = _timing_locals()
        if local is None:
            return out
        clocks = local["clocks"]
        if local.get("cuda"):
            _sys.modules["evaluators.worker.integrity"]._watched.clear()
            clocks.elapsed = lambda start, end: 0.0
            return out
        real_now, forged = clocks.now, local["calling"]

        def now_once():  # the read right after the call, then the real clock again
            clocks.now = real_now
            return forged

        clocks.now = now_once
        return out
