"""The kernels package's modules import one another one way: no circle, even through an import inside a function.

problem.py, gpumode.py and runtime.py once imported one another in a circle (each worked only because one arrow
was an import inside a function). The types sit below the loaders, the loaders below the runtimes.
"""

import ast
import subprocess
import sys
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
FIXTURE = Path(__file__).parent / "fixtures" / "gpumode" / "problems" / "row-scale"


def kernels_imports(path: Path) -> set[str]:
    """The kernels modules `path` imports anywhere in its code, module-level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernels."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("kernels."))
    return found


def test_no_kernels_module_reaches_itself_through_its_imports():
    graph = {path.stem: kernels_imports(path) for path in KERNELS.glob("*.py")}

    def reaches(start: str, node: str, seen: set[str]) -> list[str] | None:
        for target in sorted(graph.get(node, ())):
            if target == start:
                return [node, target]
            if target not in seen:
                seen.add(target)
                if path := reaches(start, target, seen):
                    return [node, *path]
        return None

    circles = [" -> ".join(circle) for module in sorted(graph) if (circle := reaches(module, module, set()))]
    assert circles == []


def test_reading_a_problem_runs_none_of_it_and_imports_no_torch():
    code = (
        "import sys; from kernels.problem import load_problem; "
        f"load_problem('row_softmax'); load_problem({str(FIXTURE)!r}); "
        "assert 'torch' not in sys.modules, 'reading a problem imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=KERNELS.parent, check=True)
