# Attack (timer forgery, class 1): does the control's work, then rewrites the timer's measurements through stack
# frames: on the CPU the list of measured times, on CUDA the repetition's start event (swapped for a later one).
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
        if local is not None:
            if local.get("cuda"):
                late = torch.cuda.Event(enable_timing=True)
                late.record()
                local["starts"][local["i"]] = late
            else:
                for i in range(len(local["times"])):
                    local["times"][i] = 0.002
        return out
