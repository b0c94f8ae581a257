# Attack (a malformed sketch the check cannot read, class 2): wraps the worker's reply serializer, as
# sketch_out_of_range does, so the first timed repetition's first output sketch gives its shape as a number. The
# weighted sum is a float, so the sketch passes as well formed; the reference then finds the shape different and
# builds its message with tuple(shape), which raises on a number. The reference's check fails instead of answering:
# the parent blames the problem (ProblemError), raised out of evaluate() with no verdict on the candidate, and the
# warm reference shared with the problem's other candidates is killed.
import gc as _gc
import sys as _sys

_replies = next(o for o in _gc.get_objects() if type(o) is _sys.modules["evaluators.worker.replies"].Replies)
_dumps = _replies._dumps


def _forged(message, *args, **kwargs):
    if message.get("event") == "timing" and message["meta"].get("sketches"):
        message["meta"]["sketches"][0][0][0] = 7
    return _dumps(message, *args, **kwargs)


_replies._dumps = _forged
