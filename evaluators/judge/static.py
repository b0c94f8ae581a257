"""Static checks on a candidate's source, before anything runs: syntax, its entry point, and patterns worth a flag.

Whether it has a kernel of its own is judged by what its calls did (worker/evidence.py), not by its text; only an
alias of the reference is known here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernels import python_source

# Module attributes a candidate has no business replacing: comparison, clocks, synchronization.
GUARDED_MODULES = {"torch", "time", "triton", "np", "numpy", "F", "nn", "cuda", "testing", "Event", "Tensor"}
STREAM_OR_THREAD_CALLS = {
    "Stream": "creates a CUDA stream",
    "stream": "switches CUDA streams",
    "ExternalStream": "creates a CUDA stream",
    "Thread": "starts a thread",
    "ThreadPoolExecutor": "starts a thread pool",
    "ProcessPoolExecutor": "starts processes",
    "Process": "starts a process",
    "fork": "forks a process",
    "Popen": "starts a process",
}
INTROSPECTION_CALLS = {
    "get_objects": "scans the garbage collector's objects",
    "get_referrers": "scans the garbage collector's objects",
    "_getframe": "inspects interpreter frames",
    "currentframe": "inspects interpreter frames",
    "stack": "inspects interpreter frames",
}
TORCH_NAMES = {"torch", "F", "nn", "Model"}
# Each entry point and the reference it may simply alias (KernelBench accepts `ModelNew = Model`).
REFERENCE_OF = {"ModelNew": "Model", "custom_kernel": "ref_kernel"}


@dataclass
class StaticReport:
    """What the static stage found: a fatal error (compile_error) or flags as (code, sentence) pairs."""

    error: str | None = None
    flags: list[tuple[str, str]] = field(default_factory=list)


ALIAS_END = " itself"  # how the flag of a candidate that is an alias of the reference ends (is_alias)


def is_alias(code: str, text: str) -> bool:
    """Whether a flag says the candidate is the reference itself: its times are readings of the reference's code."""
    return code == "no_custom_kernel" and text.endswith(ALIAS_END)


def check_source(source: str, entry: str = "ModelNew") -> StaticReport:
    """Parse the candidate and collect flags; a syntax error or a missing entry point is fatal.

    `entry` is "ModelNew" (KernelBench: a class, or an alias such as `ModelNew = Model`) or "custom_kernel"
    (GPU MODE: a function, or an assignment such as `custom_kernel = ref_kernel`). An alias of the reference
    is a valid candidate with no kernel of its own.
    """
    try:
        tree = python_source.parse(source, filename="candidate.py")
    except SyntaxError as exc:
        return StaticReport(error=f"syntax error at line {exc.lineno}: {exc.msg}")
    definition = _definition(tree, entry)
    if definition is None:
        return StaticReport(error=f"the candidate does not define {entry} at top level")
    flags: list[tuple[str, str]] = []
    reference = REFERENCE_OF.get(entry)
    if reference and _aliases(definition, reference):
        flags.append(("no_custom_kernel", f"no custom kernel: {entry} is the reference {reference}{ALIAS_END}"))
    for node in ast.walk(tree):
        flags.extend(_node_flags(node))
    return StaticReport(flags=list(dict.fromkeys(flags)))


def _definition(tree: ast.Module, entry: str) -> ast.stmt | None:
    """The last top-level statement that binds `entry` (the one Python keeps): def, class, assignment or import."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
            found = node
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == entry for t in node.targets):
            found = node
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _dotted(node.target) == entry:
            found = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(a.asname == entry for a in node.names):
            found = node
    return found


def _aliases(definition: ast.stmt, reference: str) -> bool:
    """`entry = reference`, or a subclass of the reference that keeps its forward (`class ModelNew(Model): pass`)."""
    if isinstance(definition, (ast.Assign, ast.AnnAssign)):
        return isinstance(definition.value, ast.Name) and definition.value.id == reference
    if isinstance(definition, ast.ClassDef) and any(_dotted(base) == reference for base in definition.bases):
        methods = {n.name for n in definition.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return not methods & {"forward", "__call__"}
    return False


def _node_flags(node: ast.AST) -> list[tuple[str, str]]:
    line = getattr(node, "lineno", "?")
    if isinstance(node, ast.Try) and any(_mentions_torch(h) for h in node.handlers):
        return [("torch_fallback", f"try/except with a PyTorch fallback at line {line}")]
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [_patch_flag(_dotted(t), line) for t in targets if _is_guarded_attribute(t)]
    if isinstance(node, ast.Call):
        name = _dotted(node.func)
        last = name.split(".")[-1]
        if last == "setattr" and node.args and _dotted(node.args[0]).split(".")[0] in GUARDED_MODULES:
            return [_patch_flag(f"{_dotted(node.args[0])}.<attr>", line)]
        if last in STREAM_OR_THREAD_CALLS and _plausible_owner(name, last):
            return [("streams_threads", f"{STREAM_OR_THREAD_CALLS[last]} at line {line} ({name})")]
        if last in INTROSPECTION_CALLS and name.split(".")[0] in {"gc", "sys", "inspect"}:
            return [("introspection", f"{INTROSPECTION_CALLS[last]} at line {line} ({name})")]
        if name in {"os.getenv", "os.getenvb"}:
            return [("environment", f"reads environment variables at line {line}")]
    if isinstance(node, ast.Attribute) and node.attr in {"f_back", "f_locals", "f_globals"}:
        return [("introspection", f"inspects interpreter frames at line {line} (.{node.attr})")]
    if isinstance(node, ast.Attribute) and _dotted(node) in {"os.environ", "os.environb"}:
        return [("environment", f"reads environment variables at line {line}")]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "/proc/" in node.value:
        return [("introspection", f"reads /proc (other processes' state) at line {line}")]
    return []


def _plausible_owner(name: str, last: str) -> bool:
    # `stream` alone is a common variable name; only flag it as torch.cuda.stream / cuda.stream.
    if last in {"stream", "Stream", "ExternalStream"}:
        return "cuda" in name or "torch" in name
    return True


def _patch_flag(target: str, line) -> tuple[str, str]:
    return ("monkey_patch", f"replaces {target} at line {line} (monkey-patching a library)")


def _is_guarded_attribute(target: ast.AST) -> bool:
    return isinstance(target, ast.Attribute) and _dotted(target).split(".")[0] in GUARDED_MODULES


def _mentions_torch(handler: ast.ExceptHandler) -> bool:
    for node in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
        if isinstance(node, ast.Name) and node.id in TORCH_NAMES:
            return True
        if isinstance(node, ast.Call) and _dotted(node.func).startswith("super"):
            return True
    return False


def _dotted(node: ast.AST) -> str:
    """`torch.cuda.Stream` for an attribute chain; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""
