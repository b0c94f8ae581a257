"""How far each candidate's own timer sat below the parent's clock, shape by shape, against the allowance.

    python bench/timer_gaps.py FILE [FILE ...]

Each FILE is a batch's `results.jsonl` (what `python -m evaluators.batch` and `bench/identity_suites.py` leave under
their --out), gzipped or not, or the JSON of `bench/redteam_verdicts.py --out`. Each timed shape's `wall`
(judge/wall.py: the parent's figure per call, what the candidate's process claimed, the noise allowed) gives its gap,
(parent - claimed) / parent: how much of the call an honest timer needs below the parent's clock, and an attack
takes. Per file: the gap at the median, the 90th and 99th percentiles and the most; how many shapes used more than 1,
2, 3, 5 and 10 % of their call; then the ten widest, with both sides' host issue times (the stream is held until a
call's launches are queued, so launches beyond the reference's are inside the parent's clock and not the events').
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

SHARES = (0.01, 0.02, 0.03, 0.05, 0.10)


def timed_shapes(path: Path) -> list[dict]:
    """Every shape with a wall record in FILE: a journal's (a strict re-evaluation's too) or a red-team table's."""
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        out = []
        for line in filter(str.strip, text.splitlines()):
            entry = json.loads(line)
            for run, result in (("first", entry["result"]), ("strict", entry.get("strict"))):
                for shape in (result or {}).get("shapes", []):
                    if shape.get("wall"):
                        out.append({"key": f"{entry['row']['key']}:{shape['name']}:{run}", **shape["wall"]})
        return out
    return [{"key": row["candidate"], **row["wall"]} for row in json.loads(text) if row.get("wall")]


def gap(shape: dict) -> float:
    return (shape["parent_ms"] - shape["claimed_ms"]) / shape["parent_ms"] if shape["parent_ms"] > 0 else 0.0


def report(path: Path) -> None:
    shapes = sorted(timed_shapes(path), key=gap, reverse=True)
    print(f"\n{path}: {len(shapes)} timed shapes")
    if not shapes:
        return
    gaps = sorted(map(gap, shapes))
    at = [gaps[int(q * (len(gaps) - 1))] for q in (0.5, 0.9, 0.99)] + [gaps[-1]]
    print("gap (parent - claimed) / parent: median {:+.2%}, 90th {:+.2%}, 99th {:+.2%}, most {:+.2%}".format(*at))
    print("shapes over: " + ", ".join(f"{share:.0%} {sum(g > share for g in gaps)}" for share in SHARES))
    print("| shape | parent ms | claimed ms | gap | allowed | issue ms (candidate / reference) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for s in shapes[:10]:
        issue = "/".join(f"{s[k]:.3g}" if s.get(k) is not None else "-" for k in ("issue_ms", "reference_issue_ms"))
        print(f"| {s['key']} | {s['parent_ms']:.4g} | {s['claimed_ms']:.4g} | {gap(s):+.2%} "
              f"| {s['slack_ms'] / s['parent_ms']:.1%} | {issue} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.files:
        if not path.is_file():
            sys.exit(f"timer_gaps: no such file: {path}")
        report(path)


if __name__ == "__main__":
    main()
