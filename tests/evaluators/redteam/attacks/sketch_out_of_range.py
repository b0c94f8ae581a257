# Attack (a sketch no float holds, class 2): wraps the worker's reply serializer (an attribute of the reply object,
# found by gc) so the first timed repetition's weighted sum is 10**400. The reference's check raised on it: the
# parent blamed the problem and the warm reference shared with other candidates was killed.
import gc as _gc
import sys as _sys

_replies = next(o for o in _gc.get_objects() if type(o) is _sys.modules["evaluators.worker.replies"].Replies)
_dumps = _replies._dumps


def _forged(message, *args, **kwargs):
    if message.get("event") == "timing" and message["meta"].get("sketches"):
        message["meta"]["sketches"][0][0][1] = 10**400
    return _dumps(message, *args, **kwargs)


_replies._dumps = _forged
