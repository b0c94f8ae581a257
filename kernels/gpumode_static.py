"""What a GPU MODE problem's sources say without running them: its tolerance, its output buffers, CUDA-only code.

Everything here reads syntax trees; no problem code runs.
"""

from __future__ import annotations

import ast
import re

TOLERANCE_KEYS = ("atol", "rtol")
ALLOCATORS = {"empty", "zeros", "empty_like", "zeros_like", "empty_strided"}
LAYOUT_CALLS = {"contiguous", "to", "cuda", "permute", "transpose", "t", "view", "reshape"}
# Code that needs a real GPU: mapping device='cuda' onto the CPU cannot make these run.
# FP4 (float4_e2m1fn_x2) exists only on GPUs that have it: torch's CPU kernels reject it.
CUDA_ONLY = re.compile(
    r"torch\.cuda\.(?!is_available|manual_seed)|load_inline|cpp_extension|float4_?e2m1fn"
    r"|^\s*(?:import|from)\s+(?:triton|cutlass|cuda|aiter|tilelang)\b",
    re.MULTILINE,
)


def read_tolerance(reference: ast.Module, helpers: list[ast.Module]) -> tuple[float | None, float | None, str]:
    """(atol, rtol, note) from reference.py's `check_implementation`; None where the source does not say.

    Reads `check_implementation = f(ref_kernel, rtol=..., atol=...)` (defaults of f, or of what f calls, fill in
    a keyword it leaves out) and the rtol/atol keywords of calls inside `def check_implementation`.
    """
    functions = _functions([reference, *helpers])
    for node in reference.body:
        if isinstance(node, ast.Assign) and _assigns(node, "check_implementation") and isinstance(node.value, ast.Call):
            called = _name(node.value.func)
            # Keywords given in the call win over the defaults of the function it calls.
            found = _defaults(called, functions) | _keywords(node.value)
            return _tolerance_from([found], f"{called}(...)")
        if isinstance(node, ast.FunctionDef) and node.name == "check_implementation":
            calls = [_keywords(call) for call in ast.walk(node) if isinstance(call, ast.Call)]
            return _tolerance_from([c for c in calls if c], "the def of check_implementation", custom=True)
    return None, None, "reference.py has no check_implementation; using the evaluator's per-dtype tolerance"


def output_buffers(reference: ast.Module) -> set[int]:
    """Positions, in generate_input's returned tuple, of buffers it allocates empty or zeroed for the kernel to fill.

    A buffer generate_input fills itself (`x.uniform_(...)`, `x[...] = ...`) is an input, not an output.
    """
    generate = next((n for n in reference.body if isinstance(n, ast.FunctionDef) and n.name == "generate_input"), None)
    if generate is None:
        return set()
    allocated = {
        target.id
        for node in ast.walk(generate)
        if isinstance(node, ast.Assign) and _is_allocation(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    allocated -= _filled(generate)
    returns = [n.value for n in ast.walk(generate) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)]
    if len(returns) != 1:
        return set()
    return {
        index
        for index, element in enumerate(returns[0].elts)
        if (isinstance(element, ast.Name) and element.id in allocated) or _is_allocation(element)
    }


def _filled(function: ast.FunctionDef) -> set[str]:
    """Names written in place inside `function`: receivers of an in-place method or of a subscript assignment."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_"):
            receiver = node.func.value
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            receiver = next((t.value for t in targets if isinstance(t, ast.Subscript)), None)
        else:
            continue
        if isinstance(receiver, ast.Name):
            names.add(receiver.id)
    return names


def cuda_only(sources: dict[str, str]) -> str | None:
    """The first file whose code needs a real GPU (torch.cuda calls, extensions, GPU-only packages), or None."""
    for name, text in sources.items():
        match = CUDA_ONLY.search(text)
        if match:
            return f"{name} uses {match.group(0).strip()}"
    return None


def _tolerance_from(found: list[dict], where: str, custom: bool = False) -> tuple[float | None, float | None, str]:
    pairs = {(f.get("atol"), f.get("rtol")) for f in found if f.get("atol") is not None or f.get("rtol") is not None}
    if not pairs:
        return None, None, "tolerance not readable from check_implementation; using the evaluator's per-dtype default"
    atol = max((a for a, _ in pairs if a is not None), default=None)
    rtol = max((r for _, r in pairs if r is not None), default=None)
    note = f"from check_implementation ({where}): atol={atol}, rtol={rtol}"
    if len(pairs) > 1:
        note += " (the loosest of its several checks)"
    if custom:
        note += "; outputs are compared with ref_kernel's, which may be stricter than its own property checks"
    return atol, rtol, note


def _functions(trees: list[ast.Module]) -> dict[str, ast.FunctionDef]:
    return {node.name: node for tree in trees for node in tree.body if isinstance(node, ast.FunctionDef)}


def _defaults(name: str | None, functions: dict[str, ast.FunctionDef]) -> dict[str, float]:
    """rtol/atol defaults of function `name`, else of the functions it calls (one level down)."""
    function = functions.get(name or "")
    if function is None:
        return {}
    own = _parameter_defaults(function)
    if own:
        return own
    for call in ast.walk(function):
        if isinstance(call, ast.Call) and _name(call.func) in functions and _name(call.func) != name:
            inner = _parameter_defaults(functions[_name(call.func)])
            if inner:
                return inner
    return {}


def _parameter_defaults(function: ast.FunctionDef) -> dict[str, float]:
    args = function.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    pairs += [(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default]
    return {arg.arg: value for arg, node in pairs if arg.arg in TOLERANCE_KEYS and (value := _number(node)) is not None}


def _keywords(call: ast.Call) -> dict[str, float]:
    return {k.arg: value for k in call.keywords if k.arg in TOLERANCE_KEYS and (value := _number(k.value)) is not None}


def _number(node: ast.AST) -> float | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _assigns(node: ast.Assign, name: str) -> bool:
    return any(isinstance(target, ast.Name) and target.id == name for target in node.targets)


def _name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _is_allocation(node: ast.AST) -> bool:
    """An empty or zeroed allocation, possibly followed by layout calls (`torch.empty(...).contiguous()`)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LAYOUT_CALLS:
        node = node.func.value
    return isinstance(node, ast.Call) and _name(node.func) in ALLOCATORS
