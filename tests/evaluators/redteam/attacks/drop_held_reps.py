# Attack (evidence tampering, class 3): fast garbage on most timed calls, honest on a few; deletes the garbage
# repetitions' copies from the harness's held outputs so that only honest ones are handed over.
import sys as _sys

_Honest = ModelNew


def _timing_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"rep", "times", "plan"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


class ModelNew(_Honest):
    def forward(self, x):
        local = _timing_locals()
        if local is None or local["rep"] % 4 == 0:
            return super().forward(x)
        for rep in [r for r in local["held"] if r % 4]:  # the earlier garbage's copies: never handed over
            del local["held"][rep]
        return torch.zeros_like(x)
