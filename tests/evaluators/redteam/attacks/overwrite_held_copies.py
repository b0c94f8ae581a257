# Attack (evidence tampering, class 3): fast garbage on every timed call; a thread then overwrites the held copies
# with right answers recomputed outside the timing, before they are handed over.
import gc as _gc
import sys as _sys
import threading as _threading

_Honest = ModelNew


def _timing_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"rep", "times", "plan"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


def _fix_later(model, local):
    from evaluators.worker.timing import rep_seed

    def fix():
        import time as _time

        _time.sleep(0.05)
        plan, held = local["plan"], local["held"]
        session = next(o for o in _gc.get_objects() if type(o).__name__ == "Session")
        shape = next(i for i, s in enumerate(session.shapes) if s is session.runtime.shape)
        for rep, copies in list(held.items()):
            (inputs,) = session.runtime.inputs(rep_seed(plan.nonce, shape, rep - plan.first), "normal")
            copies[0].copy_(inputs * model.weight.detach() + 1.0)

    _threading.Thread(target=fix, daemon=True).start()


class ModelNew(_Honest):
    def forward(self, x):
        local = _timing_locals()
        if local is None:
            return super().forward(x)
        if local["rep"] == local["plan"].reps - 1:
            _fix_later(self, local)
        return torch.zeros_like(x)
