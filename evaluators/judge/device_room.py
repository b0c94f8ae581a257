"""Room on a device whose memory is short: what the harness frees of its own, and whose shortage is left.

The memory plan reads the whole device (worker/device_memory.py), so everything on it counts against the room an
evaluation gets: its own two workers, warm references of other problems, waiting spares, other evaluations. Where
that leaves too little, the harness first ends what is its own and idle there: references no evaluation is using and
waiting spares (each holds a CUDA context). If a shape's timing still has no room, or the candidate's process ran out
of memory once the reference was done (building, in its trials, timed), the candidate is ended and the device read
again by the reference. Room then means the candidate's process took it: its runtime_error. None means the problem
does not fit on this device as it is (does_not_fit), whatever the candidate did, since its memory is gone by then.
Only the reference's readings decide, never what the candidate reports.
"""

from __future__ import annotations

from evaluators.judge import reference_pool, spares, verdicts
from evaluators.judge.process import Worker
from evaluators.judge.result import EvalResult
from evaluators.worker.memory import gib


def make_room(device: str) -> bool:
    """End the harness's idle workers on `device`: references nobody uses and waiting spares; whether any ended."""
    return reference_pool.end_idle(device) + spares.end_waiting(device) > 0


def shortage(result: EvalResult, candidate: Worker, reference, shape: int, name: str, before: dict | None,
             said: str | None) -> EvalResult:  # fmt: skip
    """The verdict where timing shape `shape` found no room, or the candidate's process ran out of memory there.

    `before` is the reading that found no room; `said`, where the candidate ran out, what its process reported.
    """
    stage = candidate.stage
    candidate.kill()
    make_room(result.device)
    after = reference.room(shape)  # once the candidate's memory is back
    least, free, total = after["least_bytes"], after["free_bytes"], after["total_bytes"]
    if after["layout"] is None:
        message = (
            f"does not fit: shape {name} needs ~{gib(least)} free for one call's inputs and outputs, the cache flush "
            f"and a reserve, beside the reference; the device has {gib(free)} free of {gib(total)} with the "
            "candidate's process ended"
        )
        return verdicts.finish(result, "does_not_fit", message, "")
    beside = f" beside the candidate's process, {gib(before['free_bytes'])} free," if before else ""
    message = (
        f"runtime_error in {stage} at shape {name}: out of device memory{beside} where one call needs ~{gib(least)} "
        f"with the cache flush and a reserve; the device had {gib(free)} free of {gib(total)} once the candidate's "
        "process ended" + (f"; the process said: {said}" if said else "")  # last: the one-line message may cut it
    )
    return verdicts.finish(result, "runtime_error", message, candidate.output_text())
