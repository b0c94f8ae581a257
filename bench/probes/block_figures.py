"""What the parent saw of every timing block of a few evaluations: each side's block, seal and pin, and its figure.

    python bench/probes/block_figures.py [--candidate FILE] PROBLEM [PROBLEM ...] [--device cuda]

Each PROBLEM is judged once (a KernelBench file against its own reference, unless --candidate names a candidate for
all of them). For each timed shape it prints the reference's calibration (its ping, its command with no repetition,
the harness's work a repetition, its seal and pin per repetition), then every block of both sides (repetitions, the
block's span, its own timer's mean a call, its seal's, its pin's, the repetitions pinned and the pin's facts, and each
repetition's time, host issue time and preparation before its call, in ms), what each side spent outside its own
timer a repetition (its block's span less its repetitions' times) and where its own clocks put that time (host_parts),
the parent's figure per block of the candidate,
the work the reference's watch counted in each of its blocks, and the verdict's figures. It watches
judge/wall.judge_timing from outside; nothing is changed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from reference_candidates import reference_candidate  # noqa: E402

from evaluators import EvalOptions, evaluate  # noqa: E402
from evaluators.judge import wall  # noqa: E402

_judge_timing = wall.judge_timing


def watched(side, reference, honest_reps, device):
    """judge_timing, with what it weighed printed for every side but the reference's own."""
    verdict = _judge_timing(side, reference, honest_reps, device)
    if side is not reference:
        print(f"  reference: ping {reference.floor_s * 1e3:.3f}, command {reference.fixed_s * 1e3:.3f}, harness "
              f"{wall.harness_ms(reference, device):.3f}, seal {wall.seal_ms(reference):.4f}, pin "
              f"{wall.pin_ms(reference):.4f} ms a repetition")  # fmt: skip
        for name, timing in (("ref ", reference), ("cand", side)):
            block_times = wall.block_times(timing)
            for b, times in zip(timing.blocks, block_times, strict=True):
                print(f"  {name} first {b.first:3d} reps {b.reps:2d} span {b.seconds * 1e3:7.3f} own mean "
                      f"{sum(times) / len(times):7.3f} seal {b.seal_s * 1e3:6.3f} pin {b.pin_s * 1e3:6.3f} picked "
                      f"{b.picked} {b.pin}")  # fmt: skip
                issued, prepared = (timing.facts.get(key, [])[b.first : b.first + b.reps]
                                    for key in ("issue_ms", "prepare_ms"))  # fmt: skip
                print(f"       times {[round(t, 3) for t in times]} issue {[round(t, 3) for t in issued]} prepare "
                      f"{[round(t, 3) for t in prepared]}")  # fmt: skip
            outside = [(b.seconds * 1e3 - sum(times)) / b.reps
                       for b, times in zip(timing.blocks[1:], block_times[1:], strict=True)]  # fmt: skip
            if outside:
                print(f"  {name} outside its own timer a repetition, the blocks after the first: median "
                      f"{statistics.median(outside):.3f} ms ({min(outside):.3f}-{max(outside):.3f})"
                      f"{host_parts(timing, block_times)}")  # fmt: skip
        print("  the parent's figure a block:", [round(ms, 4) for ms in verdict.blocks_ms])
        counted = [ms * b.reps for ms, b in zip(verdict.counted or [], side.blocks, strict=False)]
        print("  the watch's count a block (ms):", [round(ms, 3) for ms in counted])
        print(f"  parent {verdict.parent_ms:.4f}, claimed {verdict.claimed_ms:.4f}, slack {verdict.slack_ms:.4f}, "
              f"pin beyond {verdict.pin_excess_ms:.4f} ms a call")  # fmt: skip
    return verdict


def host_parts(timing, block_times) -> str:
    """Where a side's repetitions spent their host time, by its own process's clocks (medians, ms), the GPU's alone.

    Its preparation (draw, flush, hold, start event), the call's issue, the holding of its outputs up to the end event,
    and what the repetition took past its device time (its whole span from preparation to synchronize, less
    the timer's figure).
    """
    facts = timing.facts
    if not facts.get("prepare_ms"):
        return ""
    times = [t for block in block_times for t in block]
    named = (("prepare_ms", "preparation"), ("issue_ms", "issue"), ("hold_ms", "holding"))
    parts = [f"{name} {statistics.median(facts[key]):.3f}" for key, name in named if facts.get(key)]
    whole = facts.get("whole_ms")
    if whole and len(whole) == len(times):
        parts.append(f"past its device time {statistics.median(w - t for w, t in zip(whole, times, strict=True)):.3f}")
    return "; on its own clocks: " + ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", type=Path, nargs="+")
    parser.add_argument("--candidate", type=Path, help="one candidate for every problem (default: its reference)")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    wall.judge_timing = watched
    for path in args.problems:
        source = args.candidate.read_text() if args.candidate else reference_candidate(path.read_text(), "kernelbench")
        result = evaluate(str(path), source, args.device, EvalOptions())
        stages = {k: round(v, 2) for k, v in result.stages.items() if k in ("timing", "timing_lock_wait", "total")}
        print(f"== {path}: {result.status} {result.speedup} {[f.code for f in result.flags]} {stages}", flush=True)


if __name__ == "__main__":
    main()
