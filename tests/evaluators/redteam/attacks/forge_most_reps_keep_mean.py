# Attack (timer forgery, class 1a): does the control's work on every call, but rewrites its own timer so that two
# repetitions of each three read almost nothing and the third reads all three: a block's mean stays honest where its
# repetitions come in threes (a block of ten reads 0.9 of its work), so a check of the mean passes, while the median
# of the repetitions would read about nothing. On a GPU its tenth was within the flat 10 % of the call the timer was
# once allowed; a long call is allowed 3 % plus a few launches now (judge/wall.py). On the CPU, where a block is one
# repetition, two blocks of three are forged the same way: the parent's clock floors them.
import sys as _sys

_Honest = ModelNew
_saved = {}


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
        clocks, i = local["clocks"], local["i"]
        if local.get("cuda"):
            starts = local["starts"]
            if i % 3 == 0:
                _saved["start"] = starts[i]
            if i % 3 < 2:  # a start recorded after the work: this repetition reads about nothing
                late = torch.cuda.Event(enable_timing=True)
                late.record()
                starts[i] = late
            else:  # from the first of the three: this one reads all three
                starts[i] = _saved["start"]
            return out
        real_now, calling, third = clocks.now, local["calling"], local["plan"].first % 3 == 2

        def now_once():  # the read right after the call, then the real clock again
            clocks.now = real_now
            return calling + (3 * (real_now() - calling) if third else 1e-6)

        clocks.now = now_once
        return out
