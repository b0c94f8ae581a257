"""The candidate's worker: builds the candidate, leaves its outputs shape by shape, and is timed when told.

A fresh process per candidate, which ran nothing before. Clocks, the functions the harness relies on and the
load_inline wrapper are bound before the candidate is imported; everything it reports is checked by the parent.
"""

from __future__ import annotations

import linecache
import sys
import types
from pathlib import Path

import torch

from evaluators.worker import device_memory, evidence, integrity, kernel_share, trials
from evaluators.worker.handoff import output_name
from evaluators.worker.session import Session
from evaluators.worker.trial_seeds import trial_plan


def serve_candidate(session: Session) -> None:
    """Import the candidate, then answer: build, plan, trials, release, warm, time, probe per shape.

    The first build may come before the reference has planned device memory; "plan" brings the plan before any
    command that needs it. Outputs, the trials' and every timed repetition's, are handed over in sealed files whose
    descriptors the replies name (worker/handoff.py).
    """
    job, runtime, device = session.job, session.runtime, session.device
    integrity.watch(*runtime.modules(), type(runtime), session.clocks)
    evidence.install()
    candidate = _imported(job["candidate_source"])
    session.reply("loaded", {})
    models = {}
    for command in session.commands():
        cmd, i = command["cmd"], command.get("shape")
        if cmd == "build":
            models[i] = runtime.candidate(candidate, job["seed"])
            if device == "cuda":
                with torch.no_grad():  # Triton compiles (and autotunes) here, on inputs no check uses
                    models[i](*runtime.inputs(job["seed"] + 1, "normal"))
                session.clocks.sync()
            session.reply("built", {})
        elif cmd == "plan":
            job["memory"] = command["memory"]
            session.reply("planned", {})
        elif cmd == "trials":
            on_device = device == "cuda" and job["memory"]["handoff_on_device"]
            plan = trial_plan(command["seed"], job["trials"])  # the seed comes with the command, not the job
            changed, share, handed = run_trials(session, models[i], i, plan, on_device)
            reply = {"modified_inputs": changed, "kernel_share": share, "handed": handed}
            session.reply("outputs", reply)
        elif cmd == "release":
            # commands() has dropped the held outputs and emptied their pool; the allocator's other cached blocks
            # go back too, before the reference reads the device's free memory to lay the timing out.
            device_memory.release_cache(device)
            session.reply("released", {})
        elif cmd == "warm":
            session.warm(models[i], command)
            session.reply("warmed", {})
        elif cmd == "time":
            session.reply("timing", session.time(models[i], command)[0])
        elif cmd == "seal":
            session.reply("sealed", session.seal())
        elif cmd == "probe":
            session.reply("probe", {"side_stream_ms": session.side_stream(models[i], command["seed"])})
        else:
            raise RuntimeError(f"unknown command {cmd!r}")


def _imported(source: str) -> types.ModuleType:
    """The candidate's module, made from the text its job carries, never from a file.

    Scratch directories sit side by side under one user: another evaluation's candidate had planted a FIFO where the
    parent wrote this one's source, and renamed its own over it before the import. The lines go to linecache under
    the module's file name, so tracebacks and inspect (Triton reads its kernels' source) find them there.
    """
    filename = str(Path("candidate.py").resolve())
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # no mtime: never reread
    candidate = types.ModuleType("candidate")
    candidate.__file__ = filename
    sys.modules["candidate"] = candidate
    exec(compile(source, filename, "exec"), candidate.__dict__)
    return candidate


def run_trials(session: Session, model, i: int, plan, on_device: bool) -> tuple[dict, dict, list[int]]:
    """The correctness trials at shape `i`: the inputs each call changed in place; outputs handed over per trial.

    Also where the last trial's call spent its device time (worker/kernel_share.py), and each trial's handed-over
    descriptor.
    """
    runtime, device, memory = session.runtime, session.device, session.job["memory"]
    changed, share, descriptors = {}, {}, []
    with torch.no_grad():
        for t, (seed, dist) in enumerate(plan):
            args = runtime.inputs(seed, dist)
            trials.poison_allocator(device, 4 * sum(v.nbytes for v in args if isinstance(v, torch.Tensor)))
            if memory["copy_inputs"]:
                handed = trials.copies(args)
            else:
                handed, before = args, trials.fingerprints(args, memory["compare_chunk"])
            if t == len(plan) - 1:
                # The one profiled call: warm from the trials before (compiles, autotuning), outside every timing
                # command, and its output is checked like theirs. It syncs as below, inside the profile.
                output, share = kernel_share.profiled(lambda: model(*handed), device, session.clocks.sync)  # noqa: B023
            else:
                output = model(*handed)
                session.clocks.sync()  # the whole device: work left on side streams finishes before we read
            integrity.check()  # before the harness reads anything the call returned or touched
            if memory["copy_inputs"]:
                changed[t] = trials.modified(args, handed)
            else:
                changed[t] = trials.changed_prints(before, trials.fingerprints(args, memory["compare_chunk"]))
            changed[t] = [k for k in changed[t] if k not in runtime.mutable_inputs()]
            with session.held.allocating(on_device):
                outputs = trials.flatten_outputs(output, device if on_device else "cpu")
            descriptors.append(session.hand_over(output_name(i, "trial", t), outputs, on_device))
            del args, output, outputs
    if device == "cuda":
        torch.cuda.empty_cache()  # the poisoned and trial blocks go back to the driver for the reference
    return changed, share, descriptors
