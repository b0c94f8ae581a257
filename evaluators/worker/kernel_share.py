"""Where one call's device time goes: the candidate's own kernels against the library's.

The parent flags `no_custom_kernel` when the candidate's own kernels do no material part of the work
(judge/verdicts.py), which a launch of a kernel that does nothing, beside PyTorch doing the work, must not hide.
Once per shape one call runs under torch.profiler (worker/candidate.py picks the last correctness trial's: untimed,
the candidate warm from the trials before, its output checked like theirs):
- On CUDA (CUPTI) each kernel's device time is the candidate's where the innermost span around its launch on the
  host is its own (worker/kernel_marks.py: a Triton launch, a call into its extension; or an operator its extension
  registered), and the library's where that span is a torch operator (aten::, any namespace but its extensions')
  or a torch.compile region: inductor's kernels are the compiler's work, measured apart by `speedup_vs_compile`.
  A kernel launched outside every such span is the candidate's only where it bears the name of a Triton kernel it
  launched (replayed by a CUDA graph) or where it built or loaded an extension, and it bears no aten, cuBLAS or
  cuDNN kernel's name.
- In the Triton interpreter the host is the device: the call's host time is split by the same spans, the grid's
  programs being the kernel's time and the interpreter's launch machinery counted on neither side.
All of it runs in the candidate's process and can be forged: it stops the honest mistake and the lazy cheat.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

import torch
from torch.autograd import DeviceType

from evaluators.worker import evidence, kernel_marks

# torch.compile's regions: dynamo's around a compiled frame, inductor's around a compiled graph, AOT autograd's.
COMPILED = ("Torch-Compiled Region", "## Call CompiledFxGraph", "CompiledFunction")
# aten's, cuBLAS(Lt)'s and cuDNN's kernels by name: an extension that calls cuBLAS itself, or a CUDA graph that
# replays aten's kernels, launches them outside any torch operator.
LIBRARY_KERNEL = re.compile(
    r"\bat::|cublas|cudnn|nvjet|xmma|cutlass_\d|\b(ampere|volta|turing|maxwell|hopper|sm\d+)_\w*gemm"
    r"|\bgemv|\bgemmk|\bgemmSN|splitKreduce|implicit_convolve",
    re.IGNORECASE,
)
_LAUNCHES = ("cuda_runtime", "cuda_driver")  # the host's side of a launch, which shares the kernel's correlation id
_SPANS = ("cpu_op", "user_annotation")


@dataclass(frozen=True)
class Span:
    """An operator or annotation on the calling thread, in microseconds on the profiler's clock."""

    name: str
    start: float
    end: float


@dataclass(frozen=True)
class Work:
    """Time to attribute: a kernel (its duration, the host moment of its launch) or a slice of the host's time."""

    name: str
    us: float
    at: float | None = None  # None where no launch was recorded for it


@dataclass(frozen=True)
class Owners:
    """What is the candidate's (worker/evidence.py `own()`)."""

    triton: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    extension: bool = False


def profiled(call, device: str, sync):
    """Run `call()` once under torch.profiler, then `sync()`: its output, and where its time went (for the parent)."""
    if device == "cuda":
        # Unless told to tear CUPTI down, Kineto leaves it attached after the profile, and every later launch in this
        # process, the timed ones included, took about 3 us more on the host and 2-3 us more on an H100 (measured
        # back to back); the reference's process is never profiled. Where torch set it to "0" (CUDA graphs on an
        # older CUDA, whose re-initialization crashed), that stands.
        os.environ.setdefault("TEARDOWN_CUPTI", "1")
    with torch.profiler.record_function(kernel_marks.CALL):
        pass  # a process's first span costs about 1 ms to set up, which would land inside the call's
    try:
        # torch.profiler.profile wraps this same Kineto profiler, but its start imports torch._inductor (3 s of a
        # CPU core here) to ask about CUDA graphs.
        profiler = torch.autograd.profiler.profile(use_device="cuda" if device == "cuda" else None, use_kineto=True)
        profiler.__enter__()
    except Exception as exc:  # another profiler running, no CUPTI: the parent falls back to the counts
        output = call()
        sync()
        return output, {"error": f"the profiler did not start: {exc!r}"[:300]}
    try:
        with kernel_marks.recording():
            output = call()
        sync()  # inside the profile: every kernel of the call has ended before it stops
    finally:
        stopped = _stop(profiler)  # a candidate's exception goes on up, the profiler stopped
    if stopped:
        return output, {"error": stopped}
    try:
        return output, summary(profiler.function_events, device, Owners(**evidence.own()))
    except Exception as exc:  # an unreadable profile is no verdict on the candidate
        return output, {"error": f"the profile could not be read: {exc!r}"[:300]}


def _stop(profiler) -> str | None:
    try:
        profiler.__exit__(None, None, None)
    except Exception as exc:  # reported, and the counts decide
        return f"the profiler did not stop: {exc!r}"[:300]
    return None


def summary(events, device: str, owners: Owners) -> dict:
    """The share of the profiled call's time in the candidate's own kernels, from torch.profiler's events."""
    call = next((e for e in events if e.name == kernel_marks.CALL), None)
    if call is None:
        return {"error": "the profiled call left no span in the profile"}
    start, end = call.time_range.start, call.time_range.end
    spans = [
        Span(e.name, e.time_range.start, e.time_range.end)
        for e in events
        if _activity(e) in _SPANS and e.thread == call.thread and e is not call
        and start <= e.time_range.start and e.time_range.end <= end
    ]  # fmt: skip
    if device == "cuda":
        work = [w for w in device_work(events) if w.at is None or start <= w.at <= end]
        return split(work, spans, owners, kernels=True) | {"time": "device"}
    grids = sorted((s for s in spans if s.name.startswith(kernel_marks.TRITON + " ")), key=lambda s: s.start)
    cpu = {}
    if len(grids) == len(kernel_marks.grid_cpu_us):  # else the grids were not marked apart: wall time it is
        cpu = {
            s: min(1.0, us / (s.end - s.start))
            for s, us in zip(grids, kernel_marks.grid_cpu_us, strict=True)
            if s.end > s.start
        }
    return split(host_work(spans, start, end), spans, owners, kernels=False, cpu=cpu) | {"time": "host"}


def device_work(events) -> list[Work]:
    """Every kernel, copy and fill on the device, placed at the middle of its launch on the host.

    An annotation has a copy on the device spanning the kernels launched inside it (gpu_user_annotation): not work.
    """
    launched = {}
    for e in events:
        if _activity(e) in _LAUNCHES:
            launched.setdefault(e.id, (e.time_range.start + e.time_range.end) / 2)
    return [
        Work(e.name, e.time_range.elapsed_us(), launched.get(e.id))
        for e in events
        if e.device_type == DeviceType.CUDA and not _annotation(e)
    ]


def _annotation(event) -> bool:
    kind = getattr(event, "activity_type", None)
    if kind and "annotation" in kind or getattr(event, "is_user_annotation", False):
        return True
    return event.name.startswith(kernel_marks.TOKEN)  # ours, where a torch tells annotations apart by neither


def host_work(spans: list[Span], start: float, end: float) -> list[Work]:
    """The call's host time cut at every span's edge, each slice named after the innermost span around it."""
    cuts = sorted({start, end, *(t for s in spans for t in (s.start, s.end) if start < t < end)})
    slices = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
    around = _open_at(spans, [(a + b) / 2 for a, b in slices])
    return [
        Work(_label(inside[-1].name) if inside else "python", b - a, (a + b) / 2)
        for (a, b), inside in zip(slices, around, strict=True)
    ]


def split(work: list[Work], spans: list[Span], owners: Owners, kernels: bool, cpu: dict | None = None) -> dict:
    """Own and library microseconds of `work`, each piece judged by the spans open at its launch (see verdict).

    `cpu`: for an interpreter's grid span, the share of its wall time its thread was on a CPU; the candidate's own
    time in it counts only that share (the rest was another process's), on neither side.
    """
    markers = [s for s in spans if s.name == kernel_marks.FAILED]
    failed = {_launch(inside) for inside in _open_at(spans, [m.start for m in markers])} - {None}
    totals = {"own": Counter(), "library": Counter()}
    for item, inside in zip(work, _open_at(spans, [w.at for w in work]), strict=True):
        kinds = ["failed" if span in failed else span_kind(span.name, owners) for span in inside]
        kinds = [kind for kind in kinds if kind]
        side = verdict(item, kinds, owners, kernels)
        ran = next((cpu[span] for span in reversed(inside) if span in cpu), 1.0) if cpu and side == "own" else 1.0
        if side:
            totals[side][item.name] += item.us * ran
    own, library = sum(totals["own"].values()), sum(totals["library"].values())
    total = own + library
    return {
        "share": own / total if total > 0 else None,
        "own_us": round(own, 3),
        "total_us": round(total, 3),
        "own": _top(totals["own"]),
        "library": _top(totals["library"]),
    }


def span_kind(name: str, owners: Owners) -> str | None:
    """What a span says of the work launched inside it: triton, extension, launch, library, or None.

    "launch" is the interpreter's launch machinery. None decides nothing: our call's span, and annotations (the
    candidate's, inductor's per kernel) inside whatever decides.
    """
    for prefix, kind in ((kernel_marks.TRITON, "triton"), (kernel_marks.EXTENSION, "extension")):
        if name.startswith(prefix + " "):
            return kind
    if name.startswith(kernel_marks.LAUNCH + " "):
        return "launch"
    if name.startswith(COMPILED):
        return "library"
    namespace, operator, _ = name.partition("::")
    if operator:
        return "extension" if namespace in owners.namespaces else "library"
    return None


def verdict(item: Work, kinds: list[str], owners: Owners, kernels: bool) -> str | None:
    """Whose one piece of work is: "own", "library", or None (a failed launch, the interpreter's machinery).

    `kinds`: those of the deciding spans open at its launch, outermost first; `kernels`: the pieces are named
    device kernels (CUDA), not slices of the host's time.
    """
    if "failed" in kinds:  # a launch that raised did none of the work
        return None
    if "launch" in kinds:  # the interpreter: its grid is the kernel, the rest of its launch is its machinery
        return "own" if "triton" in kinds[kinds.index("launch") :] else None
    if kinds:
        innermost = kinds[-1]
        if innermost == "triton":
            return "own"
        if innermost == "extension":
            return "library" if kernels and LIBRARY_KERNEL.search(item.name) else "own"
        return "library"
    if not kernels:
        return "library"  # host time outside its kernels: Python, the harness's own calls
    if item.name in owners.triton:
        return "own"
    return "own" if owners.extension and not LIBRARY_KERNEL.search(item.name) else "library"


def _open_at(spans: list[Span], points: list[float | None]) -> list[list[Span]]:
    """For each point, the spans open there, outermost first (spans on one thread nest); [] for None."""
    timeline = [(s.start, 0, k) for k, s in enumerate(spans)] + [(s.end, 2, k) for k, s in enumerate(spans)]
    timeline += [(p, 1, j) for j, p in enumerate(points) if p is not None]
    timeline.sort()
    opened: list[int] = []
    found: list[list[Span]] = [[] for _ in points]
    for _, what, k in timeline:
        if what == 0:
            opened.append(k)
        elif what == 2:
            opened.remove(k)
        else:
            found[k] = [spans[i] for i in opened]
    return found


def _launch(inside: list[Span]) -> Span | None:
    """The innermost Triton launch among open spans: the one a FAILED marker inside them belongs to."""
    for span in reversed(inside):
        if span.name.startswith((kernel_marks.TRITON + " ", kernel_marks.LAUNCH + " ")):
            return span
    return None


def _activity(event) -> str:
    kind = getattr(event, "activity_type", None)
    if kind:
        return kind
    if event.device_type != DeviceType.CPU:  # a torch without activity types: told apart by device and name
        return "kernel"
    return "cuda_runtime" if event.name.startswith("cu") else "cpu_op"


def _label(name: str) -> str:
    return name.replace(kernel_marks.TOKEN + " ", "", 1)


def _top(times: Counter) -> list[str]:
    return [f"{name[:120]}: {us:.4g} us" for name, us in times.most_common(3)]
