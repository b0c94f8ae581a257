"""Worker process (`python -m evaluators.worker.main CHANNEL_FD CONTROL_FD`): runs the reference or the candidate.

Reports go to the parent as JSON blobs over the channel; tensors never do. Commands come from the parent as JSON
lines on the control pipe. The reference worker, which never runs candidate code, plans device memory, keeps its
outputs for every shape and trial, and answers commands (compare, time, check repetitions) for as many candidates
as the parent sends its way. A candidate worker is fresh for each candidate: it leaves its outputs as files in the
handoff directory, shape by shape (or, where the memory plan allows, describes device copies of them shared
with the reference through CUDA IPC), then times each benchmark shape when told. Clocks and the load_inline wrapper
are installed before candidate code is imported.
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
import torch._dynamo  # noqa: F401  # it rebinds torch.manual_seed on import: before the watch, not mistaken for tampering

from evaluators.judge.channel import ChannelWriter
from evaluators.worker import buildshim, integrity, trials
from evaluators.worker.compare import judge
from evaluators.worker.device_handoff import HeldOutputs, open_shared, share_outputs
from evaluators.worker.handoff import output_path, read_outputs, write_outputs
from evaluators.worker.memory import ShapeSizes, plan_memory, unbounded_plan
from evaluators.worker.timing import Clocks, TimingPlan, device_key, device_lock, time_calls
from kernels.problem import ProblemError, Shape, load_problem
from kernels.runtime import problem_runtime

ROOFLINE_DTYPES = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
}


class Session:
    """One worker's run: the job, the channel, the control pipe, the current stage."""

    def __init__(self, job: dict, channel: ChannelWriter, control_fd: int):
        self.job, self.channel = job, channel
        self.control = os.fdopen(control_fd, "rb", buffering=0)
        self.device = job["device"]
        self.stage = "startup"
        self.shape_name: str | None = None  # the shape being worked on, for error reports
        self.clocks = Clocks(self.device)
        self.shapes = [Shape.from_json(s) for s in job["shapes"]]
        self.runtime = problem_runtime(load_problem(job["problem_path"]), self.device)
        self.held = HeldOutputs(self.device)  # outputs the reference may be reading through CUDA IPC

    def enter(self, stage: str) -> None:
        """Tell the parent a new stage began (its timeout starts now)."""
        self.stage = stage
        self.channel.mark(f"stage:{stage}")

    def send(self, event: str, meta: dict) -> None:
        """One report: an event name and JSON metadata."""
        self.channel.blob(json.dumps({"event": event, "meta": meta}).encode())

    def command(self) -> dict | None:
        """The parent's next command, or None once it closed the control pipe (it has seen enough)."""
        self.enter("wait")
        line = self.control.readline()
        self.held.release()  # the parent asks again only once the reference has compared (and dropped) them
        return json.loads(line) if line else None

    def hand_over(self, path: Path, outputs: list[torch.Tensor], on_device: bool) -> None:
        """Leave outputs for the reference: shared on the device, alive until the next command, or as a file."""
        if on_device:
            share_outputs(path, outputs)
            self.held.hold(outputs)
        else:
            write_outputs(path, outputs)

    def timing_plan(self, memory: dict, retain: int, retain_all: bool) -> TimingPlan:
        job = self.job
        return TimingPlan(
            warmup_ms=job["warmup_ms"],
            rep_ms=job["rep_ms"],
            min_reps=job["min_reps"],
            max_reps=job["max_reps"],
            cpu_reps=job["cpu_reps"],
            flush_mb=job["flush_mb"],
            timing_sets=memory["timing_sets"],
            retain=retain,
            retain_all=retain_all,
            retained_device=self.device if memory["retained_on_device"] else "cpu",
        )

    def timed(self, model, shape: int, plan: TimingPlan, mark=None) -> tuple[dict, dict]:
        """Time `model` on fresh inputs at shape `shape` under the device's lock: facts, kept outputs by repetition.

        `mark` receives the wall-clock window's marks (default: the parent, which cross-checks them).
        """
        self.enter("lock")
        with device_lock(Path(self.job["cache_dir"]), device_key(self.device)):
            self.enter("timing")
            with torch.no_grad():
                facts, kept = time_calls(
                    lambda args: model(*args),
                    lambda seed: self.runtime.inputs(seed, "normal"),
                    plan,
                    self.clocks,
                    mark or self.channel.mark,
                    self.job["nonce"],
                    shape,
                    keep=self.held.allocating,
                )
            self.clocks.sync()
        return facts, kept


def shape_sizes(session: Session, shape: Shape) -> ShapeSizes:
    """Bytes of one call's inputs and outputs, found on the meta device (nothing allocated); else by a real call."""
    runtime = session.runtime
    try:
        args = runtime.inputs(0, "normal", device="meta")
        model = runtime.reference(session.job["seed"], device="meta")
        with torch.no_grad():
            output = model(*args)
        return ShapeSizes(shape.name, _nbytes(args), _nbytes(output))
    except Exception:  # an op without a meta kernel: measure one real call instead
        model = runtime.reference(session.job["seed"])
        args = runtime.inputs(0, "normal")
        with torch.no_grad():
            output = model(*args)
        sizes = ShapeSizes(shape.name, _nbytes(args), _nbytes(output))
        del model, args, output
        torch.cuda.empty_cache()
        return sizes


def _file_bound(expected: list[torch.Tensor]) -> int:
    """The largest output file a right answer needs: the reference's bytes plus room for the file's framing."""
    return _nbytes(expected) + (1 << 20)


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    return 0


def plan_for(session: Session) -> dict:
    """The memory plan for every shape, before the reference allocates anything."""
    job = session.job
    if session.device != "cuda":
        return unbounded_plan(job["retained"]).to_json()
    sizes = []
    for shape in session.shapes:
        session.runtime.use_shape(shape)
        sizes.append(shape_sizes(session, shape))
    free, total = torch.cuda.mem_get_info()
    plan = plan_memory(sizes, free, total, job["flush_mb"] << 20, job["trials"], job["retained"])
    return plan.to_json() | {"sizes": [vars(s) for s in sizes]}


def run_reference(session: Session) -> None:
    """Plan memory, keep the reference's outputs for every shape and trial, then serve the parent's commands."""
    job, runtime, device = session.job, session.runtime, session.device
    session.enter("plan")
    memory = plan_for(session)
    if not memory["fits"]:
        session.send("ready", {"memory": memory})
        return
    session.enter("correctness")
    keep_on = device if memory["expected_on_device"] else "cpu"
    plan = trials.trial_plan(job["seed"], job["trials"])
    expected, shapes_meta = [], []
    for shape in session.shapes:
        runtime.use_shape(shape)
        model = runtime.reference(job["seed"])
        outputs = []
        with torch.no_grad():
            for seed, dist in plan:
                args = runtime.inputs(seed, dist)
                outputs.append(trials.flatten_outputs(model(*args), keep_on))
                dtype = _roofline_dtype(args)
                del args
        expected.append(outputs)
        shapes_meta.append({"roofline": runtime.roofline(), "dtype": dtype})
        del model
    if device == "cuda":
        torch.cuda.empty_cache()  # what the reference no longer holds goes back to the driver, for the candidate
    atol, rtol = runtime.tolerance()
    atol = job["atol"] if job["atol"] is not None else atol
    rtol = job["rtol"] if job["rtol"] is not None else rtol
    session.send(
        "ready",
        {
            "memory": memory,
            "shapes": shapes_meta,
            "dist_supported": runtime.accepts_dist,
            "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        },
    )
    limit = job["max_result_mb"] << 20
    while (command := session.command()) is not None:
        shape = command["shape"]
        runtime.use_shape(session.shapes[shape])
        directory = Path(command.get("dir", "."))
        if command["cmd"] == "compare":
            session.enter("compare")
            items = [(output_path(directory, shape, "trial", t), expected[shape][t]) for t in range(len(plan))]
            bound = max(limit, _file_bound(expected[shape][0]))
            read = open_shared if device == "cuda" and memory["handoff_on_device"] else read_outputs
            checks = judge(items, atol, rtol, bound, device, memory["compare_chunk"], read)
            session.send("comparison", {"checks": checks})
        elif command["cmd"] == "time":
            model = runtime.reference(job["seed"])
            facts, _ = session.timed(model, shape, session.timing_plan(memory, 0, False))
            if job["compile_baseline"]:
                facts["compiled"] = compiled_baseline(session, model, shape, memory)
            del model
            if device == "cuda":
                torch.cuda.empty_cache()  # the timing sets go back to the driver, for the candidate
            session.send("timing", facts)
        elif command["cmd"] == "check_reps":
            session.enter("compare_timed")
            session.send("comparison", {"checks": check_reps(session, command, directory, atol, rtol, memory)})
        else:
            raise RuntimeError(f"unknown command {command['cmd']!r}")


def compiled_baseline(session: Session, model, shape: int, memory: dict) -> dict:
    """torch.compile(reference) timed like the reference: its times, or why it could not be compiled.

    The reference is trusted code, so a failure here is torch's, reported beside the verdict, never the candidate's.
    """
    session.enter("build")  # compiling may take minutes: the build stage's limit applies
    torch._dynamo.reset()  # each shape compiles afresh and static, as a single-shape benchmark would
    try:
        compiled = torch.compile(model)
        with torch.no_grad():
            compiled(*session.runtime.inputs(session.job["seed"], "normal"))  # compiles here, outside the timing
        facts, _ = session.timed(compiled, shape, session.timing_plan(memory, 0, False), mark=lambda _: None)
    except Exception as exc:
        first = next(iter(str(exc).splitlines()), "")
        return {"error": f"{type(exc).__name__}: {first[:300]}"}
    finally:
        if session.device == "cuda":
            torch.cuda.empty_cache()
    return {"times_ms": facts["times_ms"], "side_stream_ms": facts["side_stream_ms"]}


def check_reps(session: Session, command: dict, directory: Path, atol, rtol, memory: dict) -> list:
    """Redraw each kept repetition's inputs from its seed, run the reference on them, compare the candidate's output."""
    runtime, shape = session.runtime, command["shape"]
    model = runtime.reference(session.job["seed"])
    read = open_shared if session.device == "cuda" and memory["retained_on_device"] else read_outputs
    verdicts = []
    for rep, seed in command["reps"]:
        with torch.no_grad():
            wanted = trials.flatten_outputs(model(*runtime.inputs(seed, "normal")), session.device)
        item = (output_path(directory, shape, "rep", rep), wanted)
        bound = max(session.job["max_result_mb"] << 20, _file_bound(wanted))
        verdict = judge([item], atol, rtol, bound, session.device, memory["compare_chunk"], read)
        verdicts.append(verdict[0])
        if verdict[0]:
            break
    return verdicts


def run_candidate(session: Session) -> None:
    """Build the candidate, leave its outputs shape by shape, then time each benchmark shape when told."""
    job, runtime, device = session.job, session.runtime, session.device
    memory = job["memory"]
    handoff = Path(job["handoff_dir"])
    trials_on_device = device == "cuda" and memory["handoff_on_device"]
    session.enter("build")
    integrity.watch(*runtime.modules(), type(runtime), session.clocks)
    spec = importlib.util.spec_from_file_location("candidate", Path("candidate.py").resolve())
    candidate = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = candidate
    spec.loader.exec_module(candidate)
    plan = trials.trial_plan(job["seed"], job["trials"])
    models = {}
    for i, shape in enumerate(session.shapes):
        session.enter("build")
        session.shape_name = shape.name
        runtime.use_shape(shape)
        model = runtime.candidate(candidate, job["seed"])
        if device == "cuda":
            with torch.no_grad():
                model(*runtime.inputs(plan[0][0], plan[0][1]))  # Triton compiles (and autotunes) at the first call
            session.clocks.sync()
        session.enter("correctness")
        changed = {}
        with torch.no_grad():
            for t, (seed, dist) in enumerate(plan):
                args = runtime.inputs(seed, dist)
                trials.poison_allocator(device, 4 * sum(v.nbytes for v in args if isinstance(v, torch.Tensor)))
                if memory["copy_inputs"]:
                    handed = trials.copies(args)
                else:
                    handed, before = args, trials.fingerprints(args, memory["compare_chunk"])
                output = model(*handed)
                session.clocks.sync()  # the whole device: work left on side streams finishes before we read
                integrity.check()  # before the harness reads anything the call returned or touched
                if memory["copy_inputs"]:
                    changed[t] = trials.modified(args, handed)
                else:
                    changed[t] = trials.changed_prints(before, trials.fingerprints(args, memory["compare_chunk"]))
                changed[t] = [k for k in changed[t] if k not in runtime.mutable_inputs()]
                with session.held.allocating(trials_on_device):
                    outputs = trials.flatten_outputs(output, device if trials_on_device else "cpu")
                session.hand_over(output_path(handoff, i, "trial", t), outputs, trials_on_device)
                del args, output, outputs
        session.send("outputs", {"shape": i, "modified_inputs": changed})
        models[i] = model
        if device == "cuda":
            torch.cuda.empty_cache()  # the poisoned and trial blocks go back to the driver for the reference
        if i + 1 < len(session.shapes) and session.command() is None:
            return  # the parent stops at the first failing shape
    while (command := session.command()) is not None:
        if command["cmd"] == "release":  # command() has dropped the held outputs and emptied their pool
            session.send("released", {})
            continue
        i = command["shape"]
        session.shape_name = session.shapes[i].name
        runtime.use_shape(session.shapes[i])
        facts, kept = session.timed(models[i], i, session.timing_plan(memory, memory["retained"], job["strict"]))
        for rep, output in kept.items():
            session.hand_over(
                output_path(handoff, i, "rep", rep), output, device == "cuda" and memory["retained_on_device"]
            )
        seeds = facts.pop("seeds")
        checked = [[rep, seeds[rep]] for rep in sorted(kept)]
        del kept
        if device == "cuda":
            torch.cuda.empty_cache()
        session.send("timing", facts | {"kept": checked})


def error_report(exc: BaseException, stage: str, shape: str | None = None) -> dict:
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
        "shape": shape,
        "unsupported": isinstance(exc, buildshim.UnsupportedOnDevice),
        "out_of_memory": isinstance(exc, torch.OutOfMemoryError),
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


def _first_to_go_when_memory_runs_out() -> None:
    """Ask the kernel's out-of-memory killer to pick a worker first, never the run or batch that started it.

    A candidate that eats all host memory then dies as its own runtime_error; raising one's own score needs no
    privilege. Where /proc is not Linux's, nothing is done.
    """
    try:
        with open("/proc/self/oom_score_adj", "w") as score:
            score.write("1000")
    except OSError:
        pass


def main(argv: list[str]) -> None:
    """Open the device, wait for the job on fd argv[2], run it reporting over fd argv[1]."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting candidate leaves no core file
    _first_to_go_when_memory_runs_out()
    channel = ChannelWriter(int(argv[1]))
    control = int(argv[2])
    if torch.cuda.is_available():
        # The CUDA context, made while the process waits as a spare, never while another process times on this GPU:
        # contexts opening beside a timed GEMM moved its median by 14 % (bench/timing_noise.py).
        with device_lock(Path(os.environ["KS_CACHE_DIR"]), device_key("cuda")):
            torch.empty(1, device="cuda")
    first = os.fdopen(os.dup(control), "rb", buffering=0).readline()
    if not first:
        os._exit(0)  # a spare nobody claimed
    job = json.loads(first)["job"]
    stage = "startup"
    try:
        session = Session(job, channel, control)
        buildshim.install(session.device, Path(job["cache_dir"]))
        (run_reference if job["role"] == "reference" else run_candidate)(session)
    except BaseException as exc:  # everything, sys.exit included, becomes a report; the parent decides
        stage, shape = (session.stage, session.shape_name) if "session" in locals() else (stage, None)
        channel.blob(json.dumps({"event": "error", "meta": error_report(exc, stage, shape)}).encode())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown and any atexit hooks the candidate registered


if __name__ == "__main__":
    main(sys.argv)
