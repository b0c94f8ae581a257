"""How far KernelBench's references, each judged as its own candidate, read from 1.0, and what another floor would give.

    python bench/identity_spread.py JOURNALS [--floor BASE SHARE]

JOURNALS is bench/data/identity_l1_l2_h200_1b1d754_c4ed323.json.gz (each run's `results.jsonl` lines, per level) or
one or more `results.jsonl` files that `bench/identity_suites.py` left under its --out. Per run, from each timed
shape's speedup: the share above 1.0, the mean log speedup, and the distance from 1.0 at the median, the 90th and
95th percentiles and the most; of the shapes whose own band (`band_within`: before the process floor) is under
0.5 % a side, the same, and the largest distance by the launches' share of the call (recovered from each shape's
process floor and the floor's rule of that run, `--old-floor`). Then, per level, the bands the floor BASE + SHARE x
(issue / call) would give (judge/bands.py): the share within 2 % and the shapes read as significant. That last is an
approximation, not the evaluator's own draws (they are not kept): each shape's own band is taken as a normal draw
from its two halves, moved uniformly within the floor, as `bands.with_process_floor` moves its draws.

With `--stages`, instead, where each evaluation's seconds went: per run and level, over the problems every run given
judged at that level, the sums of its stages (`stages` in each result: total, build, correctness, timing, the waits
for the host's timing lock and for a quiet device), and the device waits' median a problem, their median share of an
evaluation, how many problems waited over WAITED_S and how long in all, and the one that waited most.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import statistics
from pathlib import Path

TIGHT, NARROW, LEVEL = 0.005, 0.02, 0.95
STAGES = ("total", "build", "correctness", "timing", "timing_lock_wait", "device_drain_wait")
WAITED_S = 0.3


def runs(paths: list[Path]) -> dict[str, dict[str, list[dict]]]:
    """{run: {level: [journal entries]}} from a kept bundle or from results.jsonl files (one run each)."""
    out: dict[str, dict[str, list[dict]]] = {}
    for path in paths:
        if path.suffix == ".gz":
            for name, run in json.loads(gzip.decompress(path.read_bytes()))["runs"].items():
                out[name] = run["journals"]
        else:
            entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            out[str(path)] = {path.parent.name: entries}
    return out


def shapes(entries: list[dict]) -> list[dict]:
    """Each timed shape of a level with its own band, its result's last word (a strict re-evaluation's where kept)."""
    kept = []
    for entry in entries:
        result = entry["strict"] or entry["result"]
        kept += [s | {"key": entry["row"]["key"]} for s in result.get("shapes", []) if s.get("band_within")]
    return kept


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    at = [ordered[int(q * (len(ordered) - 1))] for q in (0.5, 0.9, 0.95)] + [ordered[-1]]
    return "median {:.2%}, 90th {:.2%}, 95th {:.2%}, most {:.2%}".format(*at)


def own_half(shape: dict) -> float:
    low, high = shape["band_within"]
    return max(shape["speedup"] / low - 1, high / shape["speedup"] - 1)


def projected(shape: dict, floor: float, rng: random.Random) -> tuple[float, float]:
    """The band with `floor` added to the shape's own (see the module's docstring)."""
    speedup, (low, high) = shape["speedup"], shape["band_within"]
    below, above, reach = math.log(speedup / low) / 1.96, math.log(high / speedup) / 1.96, math.log1p(floor)
    draws = sorted(
        (lambda z: z * (below if z < 0 else above))(rng.gauss(0, 1)) + rng.uniform(-reach, reach) for _ in range(4000)
    )
    tail = int((1 - LEVEL) / 2 * len(draws))
    return speedup * math.exp(min(draws[tail], -reach)), speedup * math.exp(max(draws[-tail - 1], reach))


def stage_report(journals: dict[str, dict[str, list[dict]]]) -> None:
    """Where the seconds went, run by run, over the problems every run judged at each level (--stages)."""
    last = {run: {level: {e["row"]["key"]: (e["strict"] or e["result"]).get("stages", {}) for e in entries}
                  for level, entries in levels.items()} for run, levels in journals.items()}  # fmt: skip
    for level in dict.fromkeys(level for levels in last.values() for level in levels):
        having = [run for run in last if level in last[run]]
        common = set.intersection(*(set(last[run][level]) for run in having))
        for run in having:
            stages = [last[run][level][key] for key in common]
            sums = ", ".join(f"{name} {sum(s.get(name, 0.0) for s in stages):.1f}" for name in STAGES)
            waits = [s.get("device_drain_wait", 0.0) for s in stages]
            shares = [s.get("device_drain_wait", 0.0) / s["total"] for s in stages if s.get("total")]
            long = [w for w in waits if w > WAITED_S]
            most = max(common, key=lambda key: last[run][level][key].get("device_drain_wait", 0.0))
            print(f"{run} {level}: {len(stages)} problems; seconds: {sums}; device wait a problem: median "
                  f"{statistics.median(waits):.3f} s, {statistics.median(shares):.1%} of its evaluation; over "
                  f"{WAITED_S} s: {len(long)} problems, {sum(long):.1f} s; the most {max(waits):.2f} s "
                  f"({most})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journals", type=Path, nargs="+")
    parser.add_argument("--floor", type=float, nargs=2, default=(0.01, 0.05), metavar=("BASE", "SHARE"))
    parser.add_argument("--old-floor", type=float, nargs=2, default=(0.015, 0.1), metavar=("BASE", "SHARE"),
                        help="the floor the runs were judged with: recovers each shape's issue / call")  # fmt: skip
    parser.add_argument("--stages", action="store_true", help="where each evaluation's seconds went, instead")
    args = parser.parse_args()
    if args.stages:
        stage_report(runs(args.journals))
        return
    (base, share), (old_base, old_share) = args.floor, args.old_floor
    for name, levels in runs(args.journals).items():
        every = [s for entries in levels.values() for s in shapes(entries)]
        logs = [math.log(s["speedup"]) for s in every]
        print(f"{name}: {len(every)} shapes, {sum(x > 0 for x in logs) / len(logs):.0%} above 1.0, mean log speedup "
              f"{statistics.fmean(logs):+.3%}; from 1.0: {quantiles([abs(x) for x in logs])}")  # fmt: skip
        tight = [s for s in every if own_half(s) < TIGHT]
        print(f"  own band under {TIGHT:.1%}: {len(tight)} shapes; from 1.0: "
              f"{quantiles([abs(math.log(s['speedup'])) for s in tight])}")  # fmt: skip
        for low, high in ((0, 0.02), (0.02, 0.05), (0.05, 0.1), (0.1, math.inf)):
            group = [s for s in tight if low <= (s["process_floor"] - old_base) / old_share < high]
            if group:
                worst = max(group, key=lambda s: abs(math.log(s["speedup"])))
                print(f"    issue / call {low}-{high}: {len(group)} shapes, the farthest {worst['key']} at "
                      f"{worst['speedup']:.4f}")  # fmt: skip
        for level, entries in levels.items():
            rng, level_shapes = random.Random(3), shapes(entries)
            bands = [(s, projected(s, base + share * (s["process_floor"] - old_base) / old_share, rng))
                     for s in level_shapes]  # fmt: skip
            narrow = sum((high - low) / 2 <= NARROW * s["speedup"] for s, (low, high) in bands)
            significant = [f"{s['key']} {s['speedup']:.3f}" for s, (low, high) in bands if not low <= 1.0 <= high]
            print(f"  {level}, floor {base:.2%} + {share:g} x issue/call: {narrow} of {len(bands)} within "
                  f"{NARROW:.0%}; significant: {', '.join(significant) or 'none'}")  # fmt: skip


if __name__ == "__main__":
    main()
