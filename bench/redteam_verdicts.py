"""Print what the evaluator says to each red-team attack and to its control, on one device.

`python bench/redteam_verdicts.py [--device cpu|cuda] [--out FILE] [--candidates FILE ...]`: one row per candidate
(status, speedup, runtime against the control's work of 20 ms per call, flags, the parent's figure of its first shape
against its timer's claim and the allowance, the message), as Markdown, and JSON to --out. With --candidates it judges
those files, each a whole candidate for the test problem, in place of the suite's control and attacks.
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
    parser.add_argument("--candidates", type=Path, nargs="+", help="candidate files to judge instead of the suite's")
    args = parser.parse_args()
    if args.candidates:
        named = [(path.name, path.read_text()) for path in args.candidates]
    else:
        named = [(attack or "control", source(attack)) for attack in [None, *ATTACKS]]
    rows = []
    print("| candidate | status | speedup | runtime ms | flags | parent / claim / allowance ms | message |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")  # fmt: skip
    for name, code in named:
        result = evaluate(str(PROBLEM), code, args.device, EvalOptions(timeout_s=20))
        wall = result.shapes[0].wall if result.shapes else None
        row = {
            "candidate": name,
            "status": result.status,
            "speedup": result.speedup,
            "runtime_ms": result.runtime_ms,
            "flags": [f"{f.code} ({f.severity})" for f in result.flags],
            "message": result.message,
            "wall": wall.model_dump() if wall else None,
        }
        rows.append(row)
        speedup = f"{result.speedup:.3g}" if result.speedup else "-"
        runtime = f"{result.runtime_ms:.3g}" if result.runtime_ms else "-"
        clock = f"{wall.parent_ms:.4g} / {wall.claimed_ms:.4g} / {wall.slack_ms:.3g}" if wall else "-"
        print(f"| {row['candidate']} | {result.status} | {speedup} | {runtime} | {', '.join(row['flags'])} "
              f"| {clock} | {result.message[:140]} |", flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
