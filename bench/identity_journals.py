"""From kept identity journals: repetitions, the launches' share against the reading, and bands with a capped floor.

    python bench/identity_journals.py JOURNAL [JOURNAL ...] [--cap 0.01] [--shape PROBLEM ...]

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
- the harness's work per repetition in the timing command, a median (the journal's, or read back from the allowance);
- the reach of the parent's allowance: per shape, the speedup a timer could claim unflagged over calls no faster than
  the reference's, the baseline over the parent's figure less the allowance (judge/wall.py, `slack_ms`);
- how far an honest timer sat below the parent's figure, as a share of the call, and how much of the allowance's
  harness part it used: the gap beyond the call's share and the jitter, over the harness's work per repetition that
  the allowance was computed from (the allowance's own terms, judge/wall.py);
- each row wider than 2 %: its half-width, its repetitions, and how far its own band (`band_within`) reaches on
  each side;
- where the journal has them, the candidate's seal (its outputs' handoff, timed apart from its calls) and the
  reference's pin of its picked outputs (right behind the seal), each beyond the reference's own, over the
  reference's own and a block, and the two shapes that needed most of the reference's beyond the jitter term: what
  judge/wall.py's SEAL_SLACK must cover; and the work a candidate as these could move out of its calls into either
  unflagged (the tolerance and its shortfall against the reference's), as a share of the call;
- where the journal has it (1b4bc2e on), the pin's IPC open of one of the candidate's outputs;
- where the journal has them (the watch over the host windows, worker/window_watch.py), what the reference's watcher
  did not run of its own blocks' watch, and of the candidate's beyond that and a switch, a block: what judge/wall.py's
  WATCH_JITTER_MS must cover;
- each row that had a control (a confirmed change, judge/strict.py): its band as run, and as this checkout's
  `strict.standing` weighs its kept evaluations (the rule may have changed since the run);
- the seconds of each stage of the evaluations, summed, and the rows whose `build` (the candidate's import and both
  sides' models made) took longest, with their whole evaluation's seconds;
- with --shape, that problem's own figures: its baseline, repetitions and every figure its `wall` keeps.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from evaluators.judge.strict import standing
from evaluators.judge.timing_plan import block_count, checked_per_block, repetitions
from evaluators.judge.wall import CALL_SHARE, CALL_SLACK, JITTER_MS, LAUNCHES_MS, SEAL_JITTER_MS, SEAL_SLACK

# The harness's share of the allowance when journals did not yet keep the harness's work (before harness_ms).
JOURNALED_HARNESS_SLACK = 0.15

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
    rows, narrow, projected, wide = 0, 0, 0, []
    for e in entries:
        row, result = e["row"], e["strict"] or e["result"]
        if not row.get("speedup_band"):
            continue
        rows += 1
        half = half_width(row["speedup_band"], row["speedup"])
        narrow += half <= NARROW
        if half > NARROW and result.get("shapes"):
            wide.append((row["key"], half, result["shapes"][0]))
        floors = [s["process_floor"] for s in result.get("shapes", []) if s.get("process_floor")]
        withins = [half_width(s["band_within"], s["speedup"]) for s in result.get("shapes", []) if s.get("band_within")]
        host = any(s.get("host_speed_ratio") for s in result.get("shapes", []))
        floor, capped = max(floors, default=0.0), BASE + min(max(floors, default=BASE) - BASE, cap)
        if not host and floor > capped and max(withins, default=0.0) < floor:
            half = ((1 + capped) - 1 / (1 + capped)) / 2
        projected += half <= NARROW
    print(f"  rows within 2 %: {narrow} of {rows} as run, {projected} with the launches' part capped at {cap:.0%}")
    for key, half, shape in wide:
        low, high = shape.get("band_within") or (shape["speedup"], shape["speedup"])
        print(f"    wide: {key} {half:.1%}, {shape.get('reps')} repetitions, own band "
              f"-{1 - low / shape['speedup']:.1%} / +{high / shape['speedup'] - 1:.1%}")  # fmt: skip
    reach = [s["baseline_ms"] / max(s["wall"]["parent_ms"] - s["wall"]["slack_ms"], 1e-3)
             for s in shapes if s.get("wall") and s.get("baseline_ms")]  # fmt: skip
    if reach:
        print(
            f"  a timer's reach within the allowance: median {statistics.median(reach):.2f}x, over 1.2x on "
            f"{sum(r > 1.2 for r in reach)} of {len(reach)} shapes, over 1.5x on {sum(r > 1.5 for r in reach)}"
        )
    harnesses = [harness for s in shapes if s.get("wall") and (harness := harness_of(s)) is not None]
    if harnesses:
        print(f"  the harness's work a repetition in the timing command: median {statistics.median(harnesses):.2f} ms "
              f"({len(harnesses)} shapes)")  # fmt: skip
    gaps = [honest_gap(s) for s in shapes if s.get("wall") and s["wall"].get("claimed_ms")]
    gaps = [gap for gap in gaps if gap is not None]
    if len(gaps) >= 2:
        of_call = statistics.quantiles([g[0] for g in gaps], n=20)
        used = max(g[1] for g in gaps)
        print(f"  the parent's figure above the timer's: 5-95 % {of_call[0]:+.1%} to {of_call[-1]:+.1%} of the call; "
              f"the allowance's harness part used at most {used:.1%} of the harness's work")  # fmt: skip
    keyed = [(e["row"]["key"], s) for e in entries for s in ((e["strict"] or e["result"]).get("shapes") or [])]
    for after in AFTER_CALLS:
        after_calls(after, keyed)
    opens = [s["wall"]["open_ms"] for _, s in keyed if (s.get("wall") or {}).get("open_ms") is not None]
    if len(opens) >= 2:
        ventiles = statistics.quantiles(opens, n=20)
        print(f"  the pin's IPC open of one of the candidate's outputs: median {statistics.median(opens):.3f} ms, "
              f"5-95 % {ventiles[0]:.3f}-{ventiles[-1]:.3f} ({len(opens)} shapes)")  # fmt: skip
    watched = [(key, s) for key, s in keyed if (s.get("wall") or {}).get("watch_excess_ms") is not None]
    if len(watched) >= 2:
        own = [s["wall"]["watch_ms"] for _, s in watched]
        beyond = [s["wall"]["watch_excess_ms"] * block_reps(s) for _, s in watched]
        ventiles, most = statistics.quantiles(beyond, n=20), max(range(len(beyond)), key=beyond.__getitem__)
        print(f"  the reference's watch of its own blocks, what its watcher did not run: median "
              f"{statistics.median(own):.3f} ms; of the candidate's beyond it and a switch, a block: median "
              f"{statistics.median(beyond):.3f} ms, 5-95 % {ventiles[0]:.3f} to {ventiles[-1]:.3f}, most "
              f"{beyond[most]:.3f} ({watched[most][0]}; {len(watched)} shapes)")  # fmt: skip
    walls = [s["wall"] for s in shapes if (s.get("wall") or {}).get("command_ms")]
    if len(walls) >= 2:
        for name, values in (
            ("command with no repetition", [w["command_ms"] for w in walls]),
            ("ping", [w["ping_ms"] for w in walls]),
            ("command's own work, beyond the ping", [w["command_ms"] - w["ping_ms"] for w in walls]),
        ):
            ventiles = statistics.quantiles(values, n=20)
            low, high = ventiles[0], ventiles[-1]
            print(f"  the reference's {name}: median {statistics.median(values):.3f} ms, 5-95 % {low:.3f}-{high:.3f}, "
                  f"most {max(values):.3f} ({len(values)} shapes)")  # fmt: skip


def blocks_of(shape: dict) -> int:
    """The shape's blocks, as the parent splits its repetitions (its layout's limit on held outputs not journaled)."""
    reps = shape.get("reps") or 1
    return block_count(reps, reps, "cuda", reps)


def block_reps(shape: dict) -> float:
    """The repetitions of one of the shape's blocks."""
    return (shape.get("reps") or 1) / blocks_of(shape)


@dataclass(frozen=True)
class AfterCalls:
    """A command right behind a block whose span beyond the reference's own counts as the calls' (judge/wall.py)."""

    name: str
    key: str  # the reference's, per repetition it covers, in the journal's `wall`
    what: str

    def reference_ms(self, shape: dict) -> float:
        """The reference's own, per call of a block: the seal covers every repetition, the pin the picked ones."""
        wall = shape["wall"]
        if self.key == "seal_ms":
            return wall["seal_ms"]
        reps = block_reps(shape)
        return wall["pin_ms"] * min(reps, checked_per_block(blocks_of(shape))) / reps

    def excess_ms(self, shape: dict) -> float:
        return shape["wall"][self.key.replace("_ms", "_excess_ms")]

    def needed(self, shape: dict) -> float:
        """What share of the reference's the candidate's went beyond it, past the jitter term."""
        return (self.excess_ms(shape) - SEAL_JITTER_MS / block_reps(shape)) / self.reference_ms(shape)

    def room(self, shape: dict) -> float:
        """What a candidate's calls could move behind them unflagged, over the call.

        The tolerance (judge/wall.py's SEAL_SLACK, and SEAL_JITTER_MS over a block of the shape's repetitions as the
        parent splits them), plus what the candidate's ran under the reference's.
        """
        tolerance = SEAL_SLACK * self.reference_ms(shape) + SEAL_JITTER_MS / block_reps(shape)
        return max(0.0, tolerance - self.excess_ms(shape)) / shape["baseline_ms"]


AFTER_CALLS = (
    AfterCalls("seal", "seal_ms", "its outputs' handoff; their digests too before 4cee415"),
    AfterCalls("pin", "pin_ms", "the reference's reads of the picked outputs: digests until 3dcf0a2, then samples"),
)


def after_calls(after: AfterCalls, keyed: list[tuple[str, dict]]) -> None:
    """The candidate's `after` beyond the reference's, the shapes that needed most of it, and the room it leaves."""
    shapes = [(key, s) for key, s in keyed if (s.get("wall") or {}).get(after.key) and s.get("baseline_ms")]
    if len(shapes) < 2:
        return
    beyond = [after.excess_ms(s) / after.reference_ms(s) for _, s in shapes]
    ventiles = statistics.quantiles(beyond, n=20)
    print(f"  the candidate's {after.name} ({after.what}) beyond the reference's, over the reference's: median "
          f"{statistics.median(beyond):+.1%}, 5-95 % {ventiles[0]:+.1%} to {ventiles[-1]:+.1%}, most "
          f"{max(beyond):+.1%}, {max(after.excess_ms(s) for _, s in shapes):+.3f} ms a call at most; the reference's "
          f"a median {statistics.median(after.reference_ms(s) for _, s in shapes):.3f} ms a call ({len(shapes)} "
          f"shapes)")  # fmt: skip
    blocks = [after.excess_ms(s) * block_reps(s) for _, s in shapes]
    ventiles = statistics.quantiles(blocks, n=20)
    print(f"  the candidate's {after.name} beyond the reference's, a block: median {statistics.median(blocks):.3f} ms, "
          f"5-95 % {ventiles[0]:.3f} to {ventiles[-1]:.3f}, most {max(blocks):.3f}")  # fmt: skip
    needed = sorted((after.needed(s), key) for key, s in shapes)[-2:]
    print(f"  the share of the reference's {after.name} an honest one needed beyond SEAL_JITTER_MS, the two most: "
          + ", ".join(f"{share:.1%} ({key})" for share, key in reversed(needed)))  # fmt: skip
    moved = sorted((after.room(s), key) for key, s in shapes)
    print(f"  work a candidate as these could move from its calls into its {after.name} unflagged: median "
          f"{statistics.median(m for m, _ in moved):.1%} of the call, over 10 % on {sum(m > 0.1 for m, _ in moved)} "
          f"of {len(moved)} shapes, most {moved[-1][0]:.1%} ({moved[-1][1]})")  # fmt: skip


def honest_gap(shape: dict) -> tuple[float, float] | None:
    """(the parent's figure less the timer's, over the call; what of it the harness part covered, over the harness).

    The harness's work per repetition is harness_of's.
    """
    wall = shape["wall"]
    parent, claimed = wall["parent_ms"], wall["claimed_ms"]
    share, jitter = allowance_terms(shape)
    harness = harness_of(shape)
    if harness is None or harness <= 0 or claimed <= 0:
        return None
    return (parent - claimed) / claimed, (parent - claimed - share - jitter) / harness


def allowance_terms(shape: dict) -> tuple[float, float]:
    """(the call's share, the jitter's) of the shape's allowance, by judge/wall.py's terms."""
    wall, reps = shape["wall"], shape.get("reps") or 0
    call = max(wall["parent_ms"], 0.0)
    share = min(CALL_SLACK * call, CALL_SHARE * call + LAUNCHES_MS)
    return share, JITTER_MS / max(reps, repetitions(wall["parent_ms"], "cuda", EvalOptions()))


def harness_of(shape: dict) -> float | None:
    """The harness's work per repetition in the timing command; None where the journal has no wall figures.

    The journal's own, or read back from the allowance where the journal predates it (judged under
    JOURNALED_HARNESS_SLACK).
    """
    wall = shape["wall"]
    if wall.get("harness_ms") is not None:
        return wall["harness_ms"]
    if wall.get("slack_ms") is None:
        return None
    share, jitter = allowance_terms(shape)
    return (wall["slack_ms"] - share - jitter) / JOURNALED_HARNESS_SLACK


def controlled(path: Path) -> None:
    """Each row with a control: its band as run, and as strict.standing weighs its three evaluations now."""
    for entry in last_lines(path):
        if not entry.get("control"):
            continue
        runs = [EvalResult.model_validate(entry[k]) if entry.get(k) else None for k in ("result", "strict", "control")]
        held = standing(*runs)
        low, high = held.measured.speedup_band
        print(f"  controlled {entry['row']['key']}: {entry['row']['speedup']:.3f}x, band as run "
              f"{entry['row']['speedup_band'][0]:.3f}-{entry['row']['speedup_band'][1]:.3f} (spread "
              f"{entry['row']['process_spread']}); weighed now {low:.3f}-{high:.3f} (spread {held.spread}), "
              f"{'significant' if held.measured.significant else 'no significant change'}")  # fmt: skip


def stages(path: Path, slowest: int = 3) -> None:
    """Each stage's seconds summed over the evaluations as first run (not their strict re-runs); the longest builds."""
    timed = [(entry["result"].get("stages") or {}, entry["result"].get("problem", "?")) for entry in last_lines(path)]
    summed: dict[str, float] = {}
    for spent, _ in timed:
        for stage, seconds in spent.items():
            summed[stage] = summed.get(stage, 0.0) + (seconds or 0.0)
    print("  stages, s: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(summed.items(), key=lambda kv: -kv[1])))
    builds = sorted((spent.get("build") or 0.0, spent.get("total") or 0.0, problem) for spent, problem in timed)
    for build, total, problem in builds[::-1][:slowest]:
        print(f"  build {build:.1f} s of {total:.1f}: {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journals", type=Path, nargs="+")
    parser.add_argument("--cap", type=float, default=0.01)
    parser.add_argument("--shape", action="append", default=[], help="also print the wall figures of this problem")
    args = parser.parse_args()
    for path in args.journals:
        summary(path, args.cap)
        controlled(path)
        stages(path)
        for entry in last_lines(path):
            if entry["row"]["key"] in args.shape:
                for shape in (entry["strict"] or entry["result"]).get("shapes") or []:
                    print(f"  {entry['row']['key']} {shape['name']}: {shape_figures(shape)}")


def shape_figures(shape: dict) -> str:
    """A shape's baseline, repetitions and wall figures, on one line."""
    figures = {"baseline_ms": shape.get("baseline_ms"), "reps": shape.get("reps")} | (shape.get("wall") or {})
    return ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())


if __name__ == "__main__":
    main()
