# Attack (evidence tampering after the fact, class 2): fast garbage on every timed call; a thread waits until the
# harness has handed the block's copies over, and writes right answers into them at once, between the reply and
# the reference's reading, the calls' work (slow_work) done there. On the CPU the copies went into sealed files before
# the reply. On a GPU the reference reads the device memory itself: its pin comes right behind the seal, and either
# the rewrite lands after the pin's digests (incorrect) or the pin, time-sliced with it, is slowed by all of it, which
# counts as the calls' (worker/pins.py).
import gc as _gc
import sys as _sys
import threading as _threading

_Honest = ModelNew


def _timing_locals():
    frame = _sys._getframe(2)
    while frame is not None and not {"rep", "times", "plan"} <= frame.f_locals.keys():
        frame = frame.f_back
    return None if frame is None else frame.f_locals


def _fix_once_handed(model, local):
    from evaluators.worker.timing import rep_seed

    plan, held = local["plan"], local["held"]
    session = next(o for o in _gc.get_objects() if type(o).__name__ == "Session")
    shape = next(i for i, s in enumerate(session.shapes) if s is session.runtime.shape)
    inputs = {rep: session.runtime.inputs(rep_seed(plan.nonce, shape, rep - plan.first), "normal")[0]
              for rep in range(plan.first, plan.first + plan.reps)}  # fmt: skip

    def fix():
        while len(session.handed) < plan.reps:
            pass
        with torch.no_grad():
            for rep, copies in list(held.items()):
                slow_work()  # the calls' work, all of it done after the reply
                copies[0].copy_(inputs[rep] * model.weight.detach() + 1.0)

    _threading.Thread(target=fix, daemon=True).start()


class ModelNew(_Honest):
    def forward(self, x):
        local = _timing_locals()
        if local is None:
            return super().forward(x)
        if local["rep"] == local["plan"].first + local["plan"].reps - 1:
            _fix_once_handed(self, local)
        return torch.zeros_like(x)
