"""Worker process (`python -m evaluators.worker JOB CHANNEL_FD CONTROL_FD`): runs the reference or the candidate.

Reports go to the parent as JSON blobs over the channel; tensors never do. The candidate leaves its outputs as
files in the handoff directory; the reference, which never runs candidate code, keeps its own outputs on its
device and compares when the parent says so. Clocks and the load_inline wrapper are installed before candidate
code is imported.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
import traceback
from pathlib import Path

import torch

from evaluators import buildshim, trials
from evaluators.channel import ChannelWriter
from evaluators.compare import judge
from evaluators.handoff import output_path, write_outputs
from evaluators.timing import Clocks, device_key, device_lock, time_calls
from kernels.problem import ProblemError, import_problem_module, load_problem

ROOFLINE_DTYPES = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
}
COMPARE, GO = b"c", b"g"


class Session:
    """One worker's run: the job, the channel, the current stage."""

    def __init__(self, job: dict, channel: ChannelWriter, control_fd: int):
        self.job, self.channel, self.control_fd = job, channel, control_fd
        self.device = job["device"]
        self.handoff = Path(job["handoff_dir"])
        self.stage = "startup"
        self.clocks = Clocks(self.device)

    def enter(self, stage: str) -> None:
        """Tell the parent a new stage began (its timeout starts now)."""
        self.stage = stage
        self.channel.mark(f"stage:{stage}")

    def send(self, event: str, meta: dict) -> None:
        """One report: an event name and JSON metadata."""
        self.channel.blob(json.dumps({"event": event, "meta": meta}).encode())

    def wait_for(self, command: bytes) -> bool:
        """Block until the parent sends `command` (True) or closes the control pipe, having seen enough (False)."""
        self.enter("wait")
        got = os.read(self.control_fd, 1)
        if got and got != command:
            raise RuntimeError(f"the parent sent {got!r} where {command!r} was expected")
        return got == command

    def problem_module(self):
        problem = load_problem(self.job["problem_path"])
        return import_problem_module(problem, self.job["config"])

    def trial_inputs(self, module) -> list[list]:
        plan = trials.trial_plan(self.job["seed"], self.job["trials"])
        return [trials.make_inputs(module, seed, dist, self.device) for seed, dist in plan]

    def run_timing(self, model, inputs: list[list]) -> tuple[dict, dict[int, object]]:
        """Time `model` on rotating copies of the trial inputs under the device's lock: facts, last output per set."""
        self.enter("lock")
        sets = [trials.copies(x) for x in inputs]
        with device_lock(Path(self.job["cache_dir"]), device_key(self.device)):
            self.enter("timing")
            with torch.no_grad():
                facts, last = time_calls(
                    lambda i: model(*sets[i % len(sets)]), len(sets), self.job, self.clocks, self.channel.mark
                )
            self.clocks.sync()
        return facts, last


def run_reference(session: Session) -> None:
    """Reference outputs for every trial, kept on the device; then compare, time, compare, as the parent says."""
    session.enter("correctness")
    module = session.problem_module()
    inputs = session.trial_inputs(module)
    model = trials.make_model(module.Model, module, session.job["seed"], session.device)
    with torch.no_grad():
        expected = [trials.flatten_outputs(model(*trials.copies(x)), session.device) for x in inputs]
    job = session.job
    atol = job["atol"] if job["atol"] is not None else getattr(module, "ATOL", None)
    rtol = job["rtol"] if job["rtol"] is not None else getattr(module, "RTOL", None)
    roofline = module.roofline() if callable(getattr(module, "roofline", None)) else None
    meta = {
        "roofline": roofline,
        "dtype": _roofline_dtype(inputs[0]),
        "dist_supported": trials.accepts_dist(module),
        "device_name": torch.cuda.get_device_name() if session.device == "cuda" else "cpu",
    }
    session.send("ready", meta)
    limit = job["max_result_mb"] << 20
    if not session.wait_for(COMPARE):
        return
    session.enter("compare")
    session.send("comparison", {"trials": judge(session.handoff, "trial", expected, atol, rtol, limit)})
    if not session.wait_for(GO):
        return
    facts, _ = session.run_timing(model, inputs)
    session.send("timing", facts)
    if not session.wait_for(COMPARE):
        return
    session.enter("compare_timed")
    session.send("comparison", {"trials": judge(session.handoff, "timed", expected, atol, rtol, limit)})


def run_candidate(session: Session) -> None:
    """Build ModelNew, run it on copies of every trial's inputs, then (if the parent says go) time it."""
    module = session.problem_module()
    inputs = session.trial_inputs(module)  # drawn before any candidate code exists in this process
    session.enter("build")
    spec = importlib.util.spec_from_file_location("candidate", Path("candidate.py").resolve())
    candidate = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = candidate
    spec.loader.exec_module(candidate)
    model = trials.make_model(candidate.ModelNew, module, session.job["seed"], session.device)
    if session.device == "cuda":
        with torch.no_grad():
            model(*trials.copies(inputs[0]))  # Triton compiles (and autotunes) at the first call
        session.clocks.sync()
    session.enter("correctness")
    changed = {}
    with torch.no_grad():
        for t, x in enumerate(inputs):
            trials.poison_allocator(session.device, 4 * sum(v.nbytes for v in x if isinstance(v, torch.Tensor)))
            handed = trials.copies(x)
            output = model(*handed)
            session.clocks.sync()  # the whole device: work left on side streams finishes before we read
            changed[t] = trials.modified(x, handed)
            write_outputs(output_path(session.handoff, "trial", t), trials.flatten_outputs(output))
    session.send("outputs", {"modified_inputs": changed})
    if not session.wait_for(GO):
        return
    facts, last = session.run_timing(model, inputs)
    for k, output in last.items():
        write_outputs(output_path(session.handoff, "timed", k), trials.flatten_outputs(output))
    session.send("timing", facts)


def error_report(exc: BaseException, stage: str) -> dict:
    """What the parent needs to classify and explain a failure."""
    if isinstance(exc, ProblemError):
        kind = "problem_error"
    elif _is_compile_error(exc):
        kind = "compile_error"
    else:
        kind = "runtime_error"
    if isinstance(exc, SystemExit):
        message = f"candidate code called sys.exit({exc.code!r})"
    else:
        message = f"{type(exc).__name__}: {exc}"
    return {
        "kind": kind,
        "stage": stage,
        "unsupported": isinstance(exc, buildshim.UnsupportedOnDevice),
        "message": message[:4000],
        "traceback": "".join(traceback.format_exception(exc))[-6000:],
    }


def _is_compile_error(exc: BaseException) -> bool:
    if isinstance(exc, (SyntaxError, ImportError, buildshim.BuildFailure)):
        return True
    if type(exc).__module__.startswith("triton.compiler"):
        return True
    return "Error building extension" in str(exc)


def _roofline_dtype(inputs: list) -> str:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not tensors:
        return "fp32"
    dtype = max(tensors, key=lambda x: x.numel()).dtype
    return "fp8" if "float8" in str(dtype) else ROOFLINE_DTYPES.get(dtype, "fp32")


def main(argv: list[str]) -> None:
    """Run the job in argv[1], reporting over fd argv[2] and waiting for go on fd argv[3]."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting candidate leaves no core file
    job = json.loads(Path(argv[1]).read_text())
    session = Session(job, ChannelWriter(int(argv[2])), int(argv[3]))
    buildshim.install(session.device, Path(job["cache_dir"]))
    try:
        (run_reference if job["role"] == "reference" else run_candidate)(session)
    except BaseException as exc:  # everything, sys.exit included, becomes a report; the parent decides
        session.send("error", error_report(exc, session.stage))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown and any atexit hooks the candidate registered


if __name__ == "__main__":
    main(sys.argv)
