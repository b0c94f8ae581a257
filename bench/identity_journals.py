"""From kept identity journals: repetitions, the launches' share against the reading, and bands with a capped floor.

    python bench/identity_journals.py JOURNAL [JOURNAL ...] [--cap 0.01]

Each JOURNAL is a `results.jsonl` (or `.jsonl.gz`) that `bench/identity_suites.py` left, one line per problem (the last
line of a problem counts). Per journal:
- the shapes given under 0.8 of the repetitions do_bench's 100 ms budget gives their timed call (20-500);
- by the launches' share of the call (the larger issue time of the two sides over the reference's median), among the
  shapes whose own band (`band_within`) is under 0.5 % a side and that are not host-bound: how many, and the farthest
  any read from 1.0;
- the rows whose band's half-width is within 2 %, as run and with the floor's launches' part capped at --cap. The
  second is a projection, not the evaluator's draws: a row wide only by its floor (its own band narrower) is taken to
  read the capped floor's half-width;
- where the journal has them (since 1919712), the reference's timing command with no repetition and its ping, and the
  difference: the command's own work, which judge/wall.py credits a candidate's block only up to a share of its calls;
- the reach of the parent's allowance: per shape, the speedup a timer could claim unflagged over calls no faster than
  the reference's, the baseline over the parent's figure less the allowance (judge/wall.py, `slack_ms`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
from pathlib import Path

SHARES = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, math.inf)
STEADY, NARROW, BASE = 0.005, 0.02, 0.01


def last_lines(path: Path) -> list[dict]:
    """The journal's last line per problem."""
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return list({entry["row"]["key"]: entry for entry in lines}.values())


def half_width(band: list[float], speedup: float) -> float:
    return (band[1] - band[0]) / 2 / speedup


def summary(path: Path, cap: float) -> None:
    entries = last_lines(path)
    shapes = [s for e in entries for s in ((e["strict"] or e["result"]).get("shapes") or []) if s.get("reps")]
    short = [s for s in shapes if s.get("runtime_ms") and s["reps"] < 0.8 * min(max(100 / s["runtime_ms"], 20), 500)]
    print(f"{path.name}: {len(short)} of {len(shapes)} shapes under 0.8 of do_bench's repetitions")
    steady = []
    for s in shapes:
        wall, within = s.get("wall") or {}, s.get("band_within")
        if s.get("host_speed_ratio") is None and within and wall.get("issue_ms") and s.get("baseline_ms"):
            if half_width(within, s["speedup"]) < STEADY:
                share = max(wall["issue_ms"], wall.get("reference_issue_ms") or 0) / s["baseline_ms"]
                steady.append((share, abs(math.log(s["speedup"]))))
    for low, high in zip(SHARES, SHARES[1:], strict=False):
        group = [d for share, d in steady if low <= share < high]
        if group:
            print(f"  launches' share {low}-{high}: {len(group)} steady shapes, farthest {max(group):.2%} from 1.0")
    rows, narrow, projected = 0, 0, 0
    for e in entries:
        row, result = e["row"], e["strict"] or e["result"]
        if not row.get("speedup_band"):
            continue
        rows += 1
        half = half_width(row["speedup_band"], row["speedup"])
        narrow += half <= NARROW
        floors = [s["process_floor"] for s in result.get("shapes", []) if s.get("process_floor")]
        withins = [half_width(s["band_within"], s["speedup"]) for s in result.get("shapes", []) if s.get("band_within")]
        host = any(s.get("host_speed_ratio") for s in result.get("shapes", []))
        floor, capped = max(floors, default=0.0), BASE + min(max(floors, default=BASE) - BASE, cap)
        if not host and floor > capped and max(withins, default=0.0) < floor:
            half = ((1 + capped) - 1 / (1 + capped)) / 2
        projected += half <= NARROW
    print(f"  rows within 2 %: {narrow} of {rows} as run, {projected} with the launches' part capped at {cap:.0%}")
    reach = [s["baseline_ms"] / max(s["wall"]["parent_ms"] - s["wall"]["slack_ms"], 1e-3)
             for s in shapes if s.get("wall") and s.get("baseline_ms")]  # fmt: skip
    if reach:
        print(
            f"  a timer's reach within the allowance: median {statistics.median(reach):.2f}x, over 1.2x on "
            f"{sum(r > 1.2 for r in reach)} of {len(reach)} shapes, over 1.5x on {sum(r > 1.5 for r in reach)}"
        )
    walls = [s["wall"] for s in shapes if (s.get("wall") or {}).get("command_ms")]
    if len(walls) >= 2:
        for name, values in (
            ("command with no repetition", [w["command_ms"] for w in walls]),
            ("ping", [w["ping_ms"] for w in walls]),
            ("command's own work, beyond the ping", [w["command_ms"] - w["ping_ms"] for w in walls]),
        ):
            low, high = statistics.quantiles(values, n=20)[0], statistics.quantiles(values, n=20)[-1]
            print(f"  the reference's {name}: median {statistics.median(values):.3f} ms, 5-95 % {low:.3f}-{high:.3f}, "
                  f"most {max(values):.3f} ({len(values)} shapes)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journals", type=Path, nargs="+")
    parser.add_argument("--cap", type=float, default=0.01)
    args = parser.parse_args()
    for path in args.journals:
        summary(path, args.cap)


if __name__ == "__main__":
    main()
