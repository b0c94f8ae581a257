"""Compare the search strategies on the same problems and budget: best speedup, dollars, speedup per dollar.

Each (problem, strategy) is one `python -m graph.run` run in this process, with the same model, iterations,
experiments per iteration, debugger rounds and budgets; only `--strategy` differs. The model is a live one
("provider:model") or a cassette ("replay:PATH"); a cassette answers by call id, so a strategy whose choices need
calls the cassette does not hold ends with exit 3, which the table shows rather than hides.

    python bench/strategy_compare.py --model google_genai:gemini-2.5-pro --problems fused_residual_norm
        [--strategies scientist sampling tree] [--iterations 3] [--experiments-per-iteration 3] [--out DIR]
        [--json] [-- EXTRA graph.run FLAGS]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from graph import run  # noqa: E402

STRATEGIES = ("scientist", "sampling", "tree")


def compare(args: argparse.Namespace) -> list[dict]:
    """Run every (problem, strategy) and read back its summary."""
    rows = []
    for problem in args.problems:
        for strategy in args.strategies:
            out = args.out / problem.replace("/", "_") / strategy
            flags = ["--problem", problem, "--model", args.model, "--strategy", strategy, "--out", str(out)]
            flags += ["--iterations", str(args.iterations), "--experiments-per-iteration", str(args.experiments)]
            with contextlib.redirect_stdout(io.StringIO()):
                code = run.main(flags + args.extra)
            summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
            best, cost = summary.get("best_speedup"), summary.get("cost_usd")
            rows.append(
                {
                    "problem": problem,
                    "strategy": strategy,
                    "exit": code,
                    "best_speedup": best,
                    "cost_usd": cost,
                    "speedup_per_dollar": best / cost if best and cost else None,
                    "candidates": summary.get("candidates"),
                    "tokens": summary.get("tokens"),
                    "stop_reason": summary.get("stop_reason"),
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    """The comparison as a Markdown table."""
    lines = [
        "| problem | strategy | exit | best speedup | cost (USD) | speedup per dollar | candidates | stopped |",
        "|" + " --- |" * 8,
    ]
    fmt = lambda value, spec: format(value, spec) if value is not None else "-"
    for r in rows:
        cells = [r["problem"], r["strategy"], r["exit"], fmt(r["best_speedup"], ".4g"), fmt(r["cost_usd"], ".4f")]
        cells += [fmt(r["speedup_per_dollar"], ".4g"), r["candidates"] or 0, r["stop_reason"] or "-"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the comparison (or JSON); exit 2 on bad usage."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="provider:model or replay:CASSETTE")
    parser.add_argument("--problems", nargs="+", default=["fused_residual_norm"])
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--iterations", type=run.positive_int, default=3)
    parser.add_argument("--experiments-per-iteration", dest="experiments", type=run.positive_int, default=3)
    parser.add_argument("--out", type=Path, default=Path("runs") / "strategy_compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.extra = extra
    rows = compare(args)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
