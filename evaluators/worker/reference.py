"""The reference's worker: plans device memory, keeps its outputs for every shape and trial, and answers commands.

It never runs candidate code, so it stays warm for as many candidates of its problem as the parent sends its way:
it compares their outputs, times itself with the routine the candidates are timed with, and checks the held outputs
of their timed repetitions against its own on the same inputs.
"""

from __future__ import annotations

import functools
import os

import torch

from evaluators.worker import device_idle, device_memory, integrity, kernel_warmup, timing, trials, window_watch
from evaluators.worker.compare import judge
from evaluators.worker.device_handoff import open_shared, release_unread
from evaluators.worker.handoff import Handed, HandoffError, output_name, read_outputs
from evaluators.worker.memory import (
    RESERVE_BYTES,
    MemoryPlan,
    ShapeSizes,
    least_timing_bytes,
    plan_memory,
    timing_layout,
    unbounded_layout,
    unbounded_plan,
)
from evaluators.worker.pins import Pins, as_pinned, pin_own
from evaluators.worker.session import Session
from evaluators.worker.timed_answers import TimedAnswers
from evaluators.worker.trial_seeds import trial_plan
from kernels.problem_types import Shape

ROOFLINE_DTYPES = {
    torch.float64: "fp64",
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
}


class NoRoom(Exception):
    """The reference's first call at a shape ran out of device memory: the problem does not fit."""


class ReferenceModels:
    """The reference built once per shape, one shape alive at a time: sizing, outputs, timing and checks share it.

    Building is not free: a KernelBench problem initialises an 8192^2 Linear's weights on the host, which took
    about half a second on an H100 host, once for the sizes, once for the outputs and once for the timing.
    """

    def __init__(self, session: Session):
        self.session, self.index, self.model = session, None, None

    def at(self, index: int):
        """The reference at shape `index` (made current)."""
        session = self.session
        session.runtime.use_shape(session.shapes[index])
        if index != self.index:
            self.model = None  # the last shape's goes before this one is built
            self.model, self.index = session.runtime.reference(session.job["seed"]), index
        return self.model


def shape_sizes(session: Session, shape: Shape, free_bytes: int, build=None) -> ShapeSizes:
    """Bytes of one call's inputs (drawn on the meta device: nothing allocated) and outputs (one real call).

    A forward pass on the meta device imported torch._dynamo, torch._inductor and sympy on its first use: 5-7 s of
    a cold evaluation on an H100 host. One real call costs far less. Inputs that leave no room are never drawn on
    the device: their output size is taken as 0, and the plan says they do not fit.
    """
    runtime, job = session.runtime, session.job
    input_bytes = meta_input_bytes(session)  # None: the real inputs are measured below
    if input_bytes is not None and input_bytes + (job["flush_mb"] << 20) + RESERVE_BYTES > free_bytes:
        return ShapeSizes(shape.name, input_bytes, 0)
    try:
        model = build() if build else runtime.reference(job["seed"])
        args = runtime.inputs(0, "normal")
        with torch.no_grad():
            output = model(*args)
        sizes = ShapeSizes(shape.name, _nbytes(args), _nbytes(output))
    except torch.OutOfMemoryError:
        raise NoRoom(
            f"shape {shape.name}: the reference's first call ran out of device memory with {free_bytes:,} bytes free"
        ) from None
    finally:
        args = output = None
        device_memory.release_cache(session.device)
    return sizes


def first_facts(session: Session) -> dict:
    """What the parent needs before the candidate may allocate beside this process: free memory and input sizes.

    Read before the reference allocates anything, so the plan made from it owes nothing to what a candidate
    building at the same time holds. Input bytes come from inputs drawn on the meta device (None if one cannot be).
    """
    if not device_memory.planned(session.device):
        return {"free_bytes": 0, "total_bytes": 0, "input_bytes": 0}
    free, total = device_memory.reading(session.device)
    largest = 0
    for shape in session.shapes:
        session.runtime.use_shape(shape)
        input_bytes = meta_input_bytes(session)
        if input_bytes is None:  # the parent assumes the worst
            largest = None
            break
        largest = max(largest, input_bytes)
    return {"free_bytes": free, "total_bytes": total, "input_bytes": largest}


def meta_input_bytes(session: Session) -> int | None:
    """Bytes of one call's inputs at the current shape, drawn on the meta device; None if they cannot be."""
    try:
        return _nbytes(session.runtime.inputs(0, "normal", device="meta"))
    except Exception:  # a generator that cannot draw on meta
        return None


def plan_for(session: Session, models: ReferenceModels, free: int, total: int) -> dict:
    """The memory plan for every shape from `free`, the device's free memory besides what this process holds.

    The job carries the shapes' sizes when the parent had them cached. What this process itself keeps after sizing
    (the model, library workspaces in its allocator) is needed beside the rest; a first call that ran out of memory
    says so (`out_of_memory`), since a candidate building beside it may have been the cause.
    """
    job = session.job
    if not device_memory.planned(session.device):
        return unbounded_plan().to_json()
    held = device_memory.own_bytes(session.device)
    if job.get("sizes"):
        plan = plan_memory([ShapeSizes(**s) for s in job["sizes"]], free, total, job["flush_mb"] << 20, job["trials"],
                           held)  # fmt: skip
        # The cache is a file other processes of the user can write: a plan from it may fit, never rule out. Where
        # it does not fit, the shapes are measured before anything is concluded.
        if plan.fits:
            return plan.to_json() | {"sizes": job["sizes"]}
    sizes = []
    try:
        for i, shape in enumerate(session.shapes):
            session.runtime.use_shape(shape)
            sizes.append(shape_sizes(session, shape, free, lambda i=i: models.at(i)))
    except NoRoom as no_room:
        return MemoryPlan(False, str(no_room), free, total).to_json() | {"out_of_memory": True}
    plan = plan_memory(sizes, free, total, job["flush_mb"] << 20, job["trials"], held)
    return plan.to_json() | {"sizes": [vars(s) for s in sizes]}


def replanned(session: Session, models: ReferenceModels) -> dict:
    """The plan made again on the device's free memory now, once the parent has made room there.

    The parent asks only while the candidate has no job, so nothing of the candidate's is in the reading. Shapes
    are sized again: where their inputs had no room, their outputs were never measured.
    """
    device_memory.release_cache(session.device)
    free, total = device_memory.settled_reading(session.device)
    return plan_for(session, models, free + device_memory.own_bytes(session.device), total)


def timing_room(session: Session, sizes: dict, settle: bool) -> dict:
    """The layout of one shape's timing in the room the device has now, this process's cache given back first.

    The candidate's worker gave its own back just before (its "release"). `layout` is None where even one side at a
    time, with one input set, does not fit; the reading and that least need come with it. With `settle`, the
    reading waits for processes the parent has just ended.
    """
    device, retained = session.device, session.job["retained"]
    if not device_memory.planned(device):
        return {"layout": unbounded_layout(retained).to_json()}
    device_memory.release_cache(device)
    free, total = (device_memory.settled_reading if settle else device_memory.reading)(device)
    shape, flush = ShapeSizes(**sizes), session.job["flush_mb"] << 20
    layout = timing_layout(shape, free, flush, retained)
    return {
        "layout": layout.to_json() if layout else None,
        "free_bytes": free,
        "total_bytes": total,
        "least_bytes": least_timing_bytes(shape, flush),
    }


def expected_outputs(session: Session, memory: dict, models: ReferenceModels) -> tuple[list, dict]:
    """Per shape and trial, the reference's outputs, and what the parent learns of the problem meanwhile.

    Where the plan leaves them no room on the device, each trial's entry is a function that computes them again when
    they are compared: a reference call is milliseconds, where keeping 6 GiB outputs on the host cost seconds a
    trial each way, through pageable memory. Only the first trial is called here then, for the sizes and the dtype.
    """
    job, runtime, device = session.job, session.runtime, session.device
    kept = memory["expected_on_device"]
    plan = trial_plan(job["trial_seed"], job["trials"])
    expected, shapes_meta, sizes = [], [], []
    for i, shape in enumerate(session.shapes):
        model = models.at(i)
        outputs = []
        with torch.no_grad():
            for t, (seed, dist) in enumerate(plan if kept else plan[:1]):
                args = runtime.inputs(seed, dist)
                output = model(*args)
                if t == 0:  # the sizes the plan was made from, as measured on real tensors
                    sizes.append(vars(ShapeSizes(shape.name, _nbytes(args), _nbytes(output))))
                    dtype = _roofline_dtype(args)
                if kept:
                    outputs.append(trials.flatten_outputs(output, device))
                del args, output
        expected.append(outputs if kept else [_computed(session, models, i, seed, dist) for seed, dist in plan])
        shapes_meta.append({"roofline": runtime.roofline(), "dtype": dtype})
    device_memory.release_cache(device)  # what the reference no longer holds goes back to the device, for the candidate
    meta = {
        "sizes": sizes,
        "shapes": shapes_meta,
        "dist_supported": runtime.accepts_dist,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
    }
    return expected, meta


def _computed(session: Session, models: ReferenceModels, shape: int, seed: int, dist: str):
    """A function returning the reference's outputs for one trial, computed when called (inputs freed at return)."""
    return lambda: _outputs(session, models.at(shape), seed, dist)


def serve_reference(session: Session) -> None:
    """Answer the job with first_facts, "plan" with the memory plan, "expect" once its outputs are kept; then serve.

    The candidate may build while the reference plans and computes its outputs: the parent lets it where the inputs
    leave the device room for both (judge/reference_pool.py).
    """
    job, runtime, device = session.job, session.runtime, session.device
    if device == "cuda":
        _drain()  # made before the plan, which counts its read buffer as this process's
    # The same watch as the candidate's: its checks (after each warm-up call, in each probe) cost both sides alike.
    integrity.watch(*runtime.modules(), type(runtime), session.clocks)
    models = ReferenceModels(session)
    facts = first_facts(session)
    session.reply("started", facts)
    commands = session.commands()
    if not _next_is(commands, "plan"):
        return
    memory = plan_for(session, models, facts["free_bytes"], facts["total_bytes"])
    while True:
        job["memory"] = memory
        session.reply("planned", {"memory": memory})
        if memory["fits"]:
            break
        # The parent may make room on the device and ask again (judge/device_room.py).
        if not _next_is(commands, "plan"):
            return
        memory = replanned(session, models)
    if not _next_is(commands, "expect"):
        return
    expected, meta = expected_outputs(session, memory, models)
    session.reply("ready", meta)
    seeds = [job["trial_seed"]] * len(session.shapes)  # the trials each shape's expected outputs are for
    atol, rtol = runtime.tolerance()
    atol = job["atol"] if job["atol"] is not None else atol
    rtol = job["rtol"] if job["rtol"] is not None else rtol
    kernel_warmup.wait()  # loaded by now, in all likelihood; the thread never runs beside a timing (device lock)
    limit = job["max_result_mb"] << 20
    answers, pinned = TimedAnswers(), Pins()
    watch = window_watch.load() if device == "cuda" else None
    marks = window_watch.Marks(session.replies.side_fd)
    for command in commands:
        cmd = command["cmd"]
        if watch is not None and cmd != "pin":
            watch.end()  # a watch is read by the pin right behind it: any other command ends one left running
        if cmd == "ping":
            # Answered at once: the least a process can take to answer a command, which the parent credits any
            # block's command in full (judge/wall.py).
            session.reply("pong", {})
            continue
        if cmd == "watch":
            # Armed on a candidate's marks before its block (judge/timing_plan.py); "new": a candidate's handed over
            on = command.get("on")
            channel = marks.take(on["new"]) if on else None
            if watch is not None:
                watch.start(channel, session.replies.control.fileno())
            continue  # no reply: what it saw comes with the pin's
        shape = command["shape"]
        if cmd == "compare":
            if command["seed"] != seeds[shape]:
                # A later evaluation's trials: its outputs computed as they are compared, nothing kept meanwhile.
                plan = trial_plan(command["seed"], job["trials"])
                expected[shape] = [_computed(session, models, shape, seed, dist) for seed, dist in plan]
                seeds[shape] = command["seed"]
            handed = _handed(command, [output_name(shape, "trial", t) for t in range(job["trials"])])
            items = list(zip(handed, expected[shape], strict=True))
            bound = max(limit, _file_bound(meta["sizes"][shape]["output_bytes"]))
            read = open_shared if device == "cuda" and memory["handoff_on_device"] else read_outputs
            checks = judge(items, atol, rtol, bound, device, memory["compare_chunk"], read)
            device_memory.release_cache(device)  # inputs drawn for the check: the candidate's room, before it goes on
            session.reply("comparison", {"checks": checks})
            continue
        model = models.at(shape)
        if cmd == "warm":
            session.warm(model, command)
            session.reply("warmed", {})
        elif cmd == "time":
            # Its outputs are held like the candidate's, and kept for its check of the candidate's.
            facts, held = session.time(model, command)
            answers.keep(command, held)
            session.reply("timing", facts)
        elif cmd == "seal":
            session.reply("sealed", session.seal())
        elif cmd == "pin":
            first = command["first"]
            if "own" in command:
                # Its seal's handoff, descriptor and device outputs alike, one a repetition in order.
                own = {first + k: Handed(os.getpid(), fd, output_name(shape, "rep", first + k))
                       for k, fd in enumerate(session.handed)}  # fmt: skip
                facts = pin_own(own, dict(zip(own, session.held.outputs, strict=True)), command["own"], first)
            else:
                bound = max(limit, _file_bound(meta["sizes"][shape]["output_bytes"]))
                reps = range(first, first + len(command["fds"]))
                block = dict(zip(reps, _handed(command, [output_name(shape, "rep", rep) for rep in reps]), strict=True))
                facts = pinned.pin(block, command["reps"], bound)
            if watch is not None:
                facts |= watch.end()
            session.reply("pinned", facts)
        elif cmd == "probe":
            session.reply("probe", {"side_stream_ms": session.side_stream(model, command["seed"])})
        elif cmd == "drain":
            session.reply("drained", _drain().wait(command["mark_ms"], command["quiet_since"]))
        elif cmd == "room":  # with this shape's model built: it is part of what the device holds
            session.reply("room", timing_room(session, meta["sizes"][shape], command["settle"]))
        elif cmd == "time_compiled":
            session.reply("compiled", compiled_baseline(session, model, command))
        elif cmd == "check_reps":
            kept = answers.take(command)
            checked = check_reps(session, model, command, (atol, rtol), memory, kept, pinned.take())
            if command["last"]:
                # Its outputs on redrawn inputs: given back, or a warm reference keeps an input set's worth cached
                # (17.5 GiB of 45_Average_Pooling_2D's on an H100) through the next candidate's build and trials.
                # Not between blocks: its next block's first call would allocate its temporaries again, timed.
                device_memory.release_cache(device)
            session.reply("comparison", checked)
        else:
            raise RuntimeError(f"unknown command {cmd!r}")


@functools.cache
def _drain() -> device_idle.Drain:
    """The wait for the device before the timing commands, made once a process."""
    return device_idle.Drain.on_cuda()


def _next_is(commands, name: str) -> bool:
    """Whether the parent's next command came (False: it closed the pipe); one other than `name` is an error."""
    command = next(commands, None)
    if command is not None and command["cmd"] != name:
        raise RuntimeError(f"expected the {name!r} command, got {command['cmd']!r}")
    return command is not None


def compiled_baseline(session: Session, model, command: dict) -> dict:
    """torch.compile(reference) timed like the reference: its times, or why it could not be compiled.

    The reference is trusted code, so a failure here is torch's, reported beside the verdict, never the candidate's.
    """
    import torch._dynamo  # here, not at start-up: it took 5-6 s to import on an H100 host

    torch._dynamo.reset()  # each shape compiles afresh and static, as a single-shape benchmark would
    try:
        compiled = torch.compile(model)
        with torch.no_grad():
            compiled(*session.inputs_at(command["seed"]))  # compiles here, outside the timing
        session.warm(compiled, command)
        facts = session.time(compiled, command)[0]
    except Exception as exc:
        first = next(iter(str(exc).splitlines()), "")
        return {"error": f"{type(exc).__name__}: {first[:300]}"}
    finally:
        if session.device == "cuda":
            torch.cuda.empty_cache()
    return {"times_ms": facts["times_ms"]}


def check_reps(session: Session, model, command: dict, tolerance: tuple, memory: dict, kept: dict[int, list],
               pinned: dict) -> dict:  # fmt: skip
    """The timed repetitions the command names, element-wise against the reference's answer on the same inputs.

    `kept` holds the reference's own outputs of the repetitions it timed on these inputs (timed_answers.py); the
    others are computed here, with a reference call each. The candidate's process is stopped meanwhile
    (judge/timing_plan.py). Outputs kept on the device were pinned right after the block (worker/pins.py): `pinned`
    holds them, and each is read only where its sample still holds; those not named are dropped, which
    lets their counts go. A strict run names the block's others too, opened here. Returns {"mismatch": [repetition,
    mismatch] for the first that differs, or None}.
    """
    device, shape, reps = session.device, command["shape"], command["reps"]
    on_device = device == "cuda" and command["held_on_device"]
    handed = _handed(command, [output_name(shape, "rep", rep) for rep in reps])
    found = _release_unread(command, shape) if on_device else None
    for rep, where in zip(reps, handed, strict=True):
        if found is not None:
            continue
        wanted = kept.pop(rep) if rep in kept else _rep_outputs(session, model, command, rep)
        bound = max(session.job["max_result_mb"] << 20, _file_bound(_nbytes(wanted)))
        if on_device and rep in pinned:
            item, read = pinned[rep], as_pinned
        else:
            item, read = where, functools.partial(open_shared, wait_event=False) if on_device else read_outputs
        mismatch = judge([(item, wanted)], *tolerance, bound, device, memory["compare_chunk"], read)[0]
        del wanted
        if mismatch:
            found = [rep, mismatch]
    return {"mismatch": found}


def _release_unread(command: dict, shape: int) -> list | None:
    """Let go of the counts of the block's device outputs the parent did not pin; the first malformed one's mismatch.

    Each output the candidate shared stays allocated in its process until its count is let go exactly once
    (device_handoff.share_outputs): those pinned by the drop of what was opened, the others here, by the descriptors
    the parent sends for them.
    """
    names = [output_name(shape, "rep", rep) for rep in command["unread"]]
    found = None
    for rep, handed in zip(command["unread"], _handed(command, names, "unread_fds"), strict=True):
        try:
            release_unread(handed)
        except HandoffError as exc:
            found = found or [rep, {"summary": f"outputs unreadable: {exc}", "details": ""}]
    return found


def _handed(command: dict, names: list[str], fds: str = "fds") -> list[Handed]:
    """Where the candidate handed each of `names` over: the parent sends its process and the descriptors it named."""
    return [Handed(command["pid"], fd, name) for fd, name in zip(command[fds], names, strict=True)]


def _rep_outputs(session: Session, model, command: dict, rep: int) -> list[torch.Tensor]:
    """The reference's outputs on timed repetition `rep`'s inputs, redrawn from its block's nonce."""
    first, _, nonce = next(block for block in command["blocks"] if block[0] <= rep < block[0] + block[1])
    return _outputs(session, model, timing.rep_seed(nonce, command["shape"], rep - first), "normal")


def _outputs(session: Session, model, seed: int, dist: str) -> list[torch.Tensor]:
    """The reference's outputs, as they are, on inputs drawn afresh from `seed` (freed at return)."""
    with torch.no_grad():
        return trials.flatten_outputs(model(*session.runtime.inputs(seed, dist)), session.device, copy=False)


def _file_bound(output_bytes: int) -> int:
    """The largest output file a right answer needs: the reference's bytes plus room for the file's framing."""
    return output_bytes + (1 << 20)


def _nbytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    return 0


def _roofline_dtype(inputs: list) -> str:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if not tensors:
        return "fp32"
    dtype = max(tensors, key=lambda x: x.numel()).dtype
    return "fp8" if "float8" in str(dtype) else ROOFLINE_DTYPES.get(dtype, "fp32")
