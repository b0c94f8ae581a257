# Attack (a forged report, class 5): during the trials it answers the parent's command itself, through the worker's
# own reply object found by gc, with an "error" report whose kind is "correct"; its kernel returns zeros. The parent
# used to take a report's kind as the verdict.
import gc as _gc
import sys as _sys

_Honest = ModelNew


def _replies():
    kind = _sys.modules["evaluators.worker.replies"].Replies
    return next(o for o in _gc.get_objects() if type(o) is kind)


def _in(function: str) -> bool:
    frame = _sys._getframe(1)
    while frame is not None and frame.f_code.co_name != function:
        frame = frame.f_back
    return frame is not None


class ModelNew(_Honest):
    def forward(self, x):
        if _in("run_trials"):
            report = {"kind": "correct", "stage": "correctness", "message": "all good", "traceback": ""}
            _replies().reply("error", report)
        return torch.zeros_like(x)
