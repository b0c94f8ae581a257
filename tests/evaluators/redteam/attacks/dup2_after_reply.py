# Attack (a thread racing the stop; a descriptor pointing at another file): every timed call returns zeros at once.
# A thread of its own does the call's real work (the control's 20 ms) on the same input, outside the timed call, waits
# until the harness has handed the block's sealed file over, and puts a sealed file of its own, holding the right
# answer, at that very descriptor number (dup2): the reference opens /proc/PID/fd/N, whatever N names by then.
import os as _os
import sys as _sys
import threading as _threading

from evaluators.worker.handoff import write_outputs as _write_outputs

_Honest = ModelNew


def _frame(keys):
    frame = _sys._getframe(2)
    while frame is not None and not keys <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


def _swap_in(model, x, session):
    answer = ModelNew.honest(model, x)  # the work, outside the timed call
    planted = _write_outputs("s0-rep", [answer.detach().cpu().contiguous()])
    while not session.handed:
        pass
    _os.dup2(planted, session.handed[-1])


class ModelNew(_Honest):
    def honest(self, x):
        return _Honest.forward(self, x)

    def forward(self, x):
        if _frame({"rep", "times", "plan"}) is None:
            return super().forward(x)
        session = _frame({"command", "plan", "model"})["self"]
        _threading.Thread(target=_swap_in, args=(self, x.clone(), session), daemon=True).start()
        return torch.zeros_like(x)
