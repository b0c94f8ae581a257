"""Print what the evaluator says to each red-team attack and to its control, on one device.

`python bench/redteam_verdicts.py [--device cpu|cuda] [--out FILE]`: one row per candidate (status, speedup,
runtime against the control's work of 20 ms per call, flags, the message), as Markdown, and JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluators import EvalOptions, evaluate  # noqa: E402
from tests.evaluators.redteam.test_redteam import ATTACKS, PROBLEM, source  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = []
    print("| candidate | status | speedup | runtime ms | flags | message |\n| --- | --- | --- | --- | --- | --- |")
    for attack in [None, *ATTACKS]:
        result = evaluate(str(PROBLEM), source(attack), args.device, EvalOptions(timeout_s=20))
        row = {
            "candidate": attack or "control",
            "status": result.status,
            "speedup": result.speedup,
            "runtime_ms": result.runtime_ms,
            "flags": [f"{f.code} ({f.severity})" for f in result.flags],
            "message": result.message,
            "wall": result.shapes[0].wall.model_dump() if result.shapes and result.shapes[0].wall else None,
        }
        rows.append(row)
        speedup = f"{result.speedup:.3g}" if result.speedup else "-"
        runtime = f"{result.runtime_ms:.3g}" if result.runtime_ms else "-"
        print(f"| {row['candidate']} | {result.status} | {speedup} | {runtime} | {', '.join(row['flags'])} "
              f"| {result.message[:140]} |", flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
