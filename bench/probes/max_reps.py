"""Does a larger repetition cap narrow a short call's band? Each KernelBench PROBLEM judged as itself, caps in turn.

    python bench/probes/max_reps.py KB/level1/12_Matmul_with_diagonal_matrices_.py [--caps 500,2000,500,2000]

For each cap (`EvalOptions.max_reps`) it prints the status, the speedup, its band, the candidate's repetitions, the
timing stage's and the whole evaluation's seconds. Needs a GPU: the cap binds only calls under 0.2 ms there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from reference_candidates import reference_candidate  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", type=Path, nargs="+")
    parser.add_argument("--caps", default="500,2000,500,2000")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    for path in args.problems:
        for cap in (int(c) for c in args.caps.split(",")):
            began = time.perf_counter()
            source = reference_candidate(path.read_text(), "kernelbench")
            result = evaluate(str(path), source, args.device, EvalOptions(max_reps=cap))
            shape = result.shapes[0]
            stages = {k: round(v, 2) for k, v in result.stages.items() if k in ("timing", "total")}
            band = [round(x, 4) for x in shape.speedup_band] if shape.speedup_band else None
            speedup = round(result.speedup, 4) if result.speedup else None
            print(path.name, cap, result.status, speedup, band, shape.reps, stages,
                  round(time.perf_counter() - began, 2), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
