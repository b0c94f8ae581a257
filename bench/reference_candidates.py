"""Write each suite problem's reference as a ready candidate, for `python -m evaluators.batch` to judge.

    python bench/reference_candidates.py --suite kernelbench:~/KernelBench --problems 1-12 --out runs/refcands

A KernelBench problem becomes its own source plus `class ModelNew(Model)`; a GPU MODE problem becomes ref_kernel
wrapped as custom_kernel. Files are named `<problem key>.py`, as the batch matches them. The copies stay in --out
(keep it outside the repository: problem files of a user's checkout are not ours to commit).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernels.gpumode import REFERENCE_SUBMISSION
from kernels.problem_types import ProblemError
from kernels.suite import SuiteError, load_suite


def reference_candidate(source: str, problem_format: str) -> str:
    """The reference as a candidate in the problem's own form."""
    if problem_format == "gpumode":
        return REFERENCE_SUBMISSION
    return source.rstrip() + "\n\n\nclass ModelNew(Model):\n    pass\n"


def main(argv: list[str] | None = None) -> int:
    """Write the candidates; exit 2 for a bad suite."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", required=True)
    p.add_argument("--problems")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    try:
        problems, broken = load_suite(args.suite, args.problems).load_all()
    except (SuiteError, ProblemError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for key, reason in broken.items():
        print(f"skipped {key}: {reason}", file=sys.stderr)
    for key, problem in problems.items():
        path = args.out / f"{key}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(reference_candidate(problem.source, problem.format))
    print(f"wrote {len(problems)} reference candidates to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
