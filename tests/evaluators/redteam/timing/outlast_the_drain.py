"""Attack (the harness's calibration raised through the drain's deadline): few_reps_forge's slow warm-up (2 blocks a
side) and a timer that claims half of each call, plus, right after the last synchronize of its rehearsal and of its
block 1 (the two the reference's blocks follow), a spin on a stream of its own that lasts the drain's deadline
(worker/device_idle.py, DEADLINE_S = 2 s) plus about the reference's block.

The reference's drain sees the spin and waits, but gives up at 2 s; the reference then times beside it, and the spin
ends (by the device's global timer) before the candidate's next command, so the candidate's synchronize never pays for
it: contrary to docs/CONTRACTS.md, "work that outlasts it falls into the candidate's next command". Time-sliced, the
spin barely moves the reference's events, but each of the reference's repetitions waits on the host for the
candidate's time slice: the reference's spans grow, wall.harness_ms (the harness's work per repetition, the median of
the reference's spans less its figure) grows by as much, and the candidate's parent figure (its span less that
harness) falls by as much, with HARNESS_SLACK's allowance rising by 15 % of it. The cover is sized from the time the
candidate saw pass between its own commands (the drain's 2 s and the reference's block).
"""

import time

from triton.language.extra.cuda import globaltimer

DEADLINE_S = 2.0
DONE_BEFORE_START = 0.5


@triton.jit
def _spin(flag_ptr, ns):
    start = globaltimer()
    while globaltimer() - start < ns:
        pass
    tl.store(flag_ptr, 1)


_state = {"cover_s": 0.3, "left_at": None}


def leave_spin() -> None:
    flag, stream = _state["flag"], _state["stream"]
    with torch.cuda.stream(stream):
        _spin[(1,)](flag, int((DEADLINE_S + _state["cover_s"]) * 1e9))
    _state["left_at"] = time.monotonic()


class ModelNew(_Honest):
    def forward(self, x):
        if x.is_cuda and "flag" not in _state:
            _state["flag"], _state["stream"] = torch.zeros(1, dtype=torch.int32, device="cuda"), torch.cuda.Stream()
            _spin[(1,)](_state["flag"], 1000)  # compiled now, not inside a timing command
        if x.is_cuda and frame_locals("warm_up") is not None:
            time.sleep(0.05)
        local = frame_locals("_loop")
        if local is None or not local.get("cuda"):
            return super().forward(x)
        plan, i = local["plan"], local["i"]
        if i == 0 and _state["left_at"] is not None:
            # The time since the last spin was left: the drain's deadline, the reference's block and its check.
            _state["cover_s"] = max(0.05, 0.8 * (time.monotonic() - _state["left_at"] - DEADLINE_S))
            _state["left_at"] = None
        y = super().forward(x) if not plan.hold else claim_share(x.contiguous(), self.weight, local, DONE_BEFORE_START)
        if i == plan.reps - 1 and block_of(plan) in (None, 1):
            after_the_loop(leave_spin)
        return y
