# Attack (channel forgery, class 4): at the first timed call, sends the harness's own timing reply with the id of
# the command it found in the harness's objects: tiny times and nothing handed over.
import gc as _gc
import json as _json
import os as _os
import struct as _struct

_Honest = ModelNew
_sent = False


class ModelNew(_Honest):
    def forward(self, x):
        global _sent
        plan = next((o for o in _gc.get_objects() if type(o).__name__ == "TimingPlan"), None)
        replies = next((o for o in _gc.get_objects() if type(o).__name__ == "Replies"), None)
        if plan is not None and replies is not None and not _sent:
            _sent = True
            meta = {"times_ms": [0.002] * plan.reps, "handed": [], "label": "x"}
            payload = _json.dumps({"id": replies._id, "event": "timing", "meta": meta}).encode()
            _os.write(replies.channel_fd, _struct.pack(">Q", len(payload)) + payload)
        return super().forward(x)
