"""Every KernelBench problem judged with its own reference as the candidate: what an honest evaluator must say.

    python bench/identity_suites.py --kernelbench PATH [--levels 1,2,3] [--problems 1-100] [--device cuda|auto]
                                    [--out DIR] [--budget-s 600]
    python bench/identity_suites.py --journals JOURNAL [JOURNAL ...]

PATH is a KernelBench checkout (or its KernelBench/ folder); nothing of it is copied here. Per level, each problem's
reference becomes its candidate (bench/reference_candidates.py) and `python -m evaluators.batch` judges the level.
Prints one row per level: problems judged of those selected, correct, set aside by no hard flag but `no_custom_kernel`
(the reference has no kernel of its own), other hard flags, rows whose timer the parent's clock disputed in either
evaluation (their figure the parent's: `timing_disputed`, soft), speedups read as significant (the noise band excludes
1.0, once the batch's strict run in other processes confirmed it and a control, the reference judged as itself again,
did not show it too: an honest evaluator says none), the share of timed problems whose band's half-width is at most
2 %, the median half-width, the median of the process floor the bands hold (judge/bands.py) and of the half-width
before it (the blocks' own band, `band_within`: what a floor of another size would be added to), the extreme speedups,
and the wall time; then the failures, flags, disputes, significant speedups, the rows weighed against a control (with
the spread that widened their bands) and the five slowest evaluations of each level. Each level's suite.json and
journal stay under --out. Level 4 is left out: its problems load model weights from a hub, which the machines measured
on cannot reach.

With --journals it judges nothing: it prints the same rows from kept journals (`results.jsonl`, or `.jsonl.gz`), the
journals of one level joined (a level run in parts: the last line of a problem counts). Their wall column is then the
sum of the rows' own seconds, which leaves out each batch's start.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HALF_WIDTH = 0.02


def judge_level(kernelbench: Path, level: int, problems: str, device: str, out: Path, budget_s: float) -> dict:
    """Write the level's identity candidates, judge them in one batch, and return its suite.json (or what ran)."""
    suite = f"kernelbench:{kernelbench}/level{level}"
    candidates, results = out / f"level{level}-candidates", out / f"level{level}"
    subprocess.run([sys.executable, str(ROOT / "bench" / "reference_candidates.py"), "--suite", suite, "--problems",
                    problems, "--out", str(candidates)], check=True, capture_output=True)  # fmt: skip
    started = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-m", "evaluators.batch", "--suite", suite, "--candidates", str(candidates),
                        "--problems", problems, "--device", device, "--out", str(results)], cwd=ROOT, check=False,
                       timeout=budget_s, capture_output=True)  # fmt: skip
        finished = True
    except subprocess.TimeoutExpired:
        finished = False
    wall = time.perf_counter() - started
    journal = results / "results.jsonl"
    lines = journal.read_text().splitlines() if journal.exists() else []
    entries = [json.loads(line) for line in lines if line.strip()]
    if (results / "suite.json").exists():
        report = json.loads((results / "suite.json").read_text())
    else:  # stopped at the budget: the verdicts reached so far, from the batch's journal
        report = {"rows": last_rows(entries)}
    return {"report": report, "wall_s": wall, "finished": finished, "journal": journal_facts(entries)}


def last_rows(entries: list[dict]) -> list[dict]:
    """The suite rows of a journal's lines, the last of each problem's.

    A rechecked candidate has two lines: its first result, then with its strict one.
    """
    return list({entry["row"]["key"]: entry["row"] for entry in entries}.values())


def journal_facts(entries: list[dict]) -> dict:
    """Per problem of a batch's journal: its evaluation's seconds, its shapes' widest process floor, any dispute."""
    facts = {}
    for entry in entries:
        result = entry["strict"] or entry["result"]
        flags = [f.get("code") for run in (entry["result"], entry["strict"] or {}) for f in run.get("flags", [])]
        shapes = result.get("shapes", [])
        floors = [s["process_floor"] for s in shapes if s.get("process_floor") is not None]
        within = [
            (s["band_within"][1] - s["band_within"][0]) / 2 / s["speedup"] for s in shapes if s.get("band_within")
        ]
        seconds = result.get("stages", {}).get("total")
        facts[entry["row"]["key"]] = {"seconds": seconds, "floor": max(floors, default=None),
                                      "within": max(within, default=None),
                                      "disputed": "timing_disputed" in flags}  # fmt: skip
    return facts


def from_journals(paths: list[Path]) -> dict[int, dict]:
    """Per level, what judge_level returns, from kept journals: their lines joined, the last of a problem counting.

    Raises ValueError naming the journal where one is not a batch's.
    """
    entries: dict[int, list[dict]] = {}
    for path in paths:
        try:
            text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
            for line in filter(str.strip, text.splitlines()):
                entry = json.loads(line)
                level = int(entry["row"]["key"].split("/")[0].removeprefix("level"))
                entries.setdefault(level, []).append(entry)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path}: not a batch journal ({type(error).__name__}: {error})") from None
    outcomes = {}
    for level, lines in sorted(entries.items()):
        rows = last_rows(lines)
        wall = sum(r.get("wall_s") or 0.0 for r in rows)
        outcomes[level] = {"report": {"rows": rows}, "wall_s": wall, "finished": True, "journal": journal_facts(lines)}
    return outcomes


def row(level: int, outcome: dict) -> dict:
    """The level's figures from its suite rows."""
    rows = outcome["report"]["rows"]
    judged = [r for r in rows if r["status"] != "not_judged"]
    correct = [r for r in judged if r["status"] == "correct"]
    # A row's set_aside joins its hard flags' reasons: one beside "no custom kernel" (side_stream, say) counts too.
    other_flags = [r for r in correct if [why for why in (r.get("set_aside") or "").split("; ")
                                          if why and not why.startswith("no custom kernel")]]  # fmt: skip
    timed = [r for r in correct if r.get("speedup_band")]
    significant = [r for r in timed if not r["speedup_band"][0] <= 1.0 <= r["speedup_band"][1]]
    narrow = [r for r in timed if (r["speedup_band"][1] - r["speedup_band"][0]) / 2 <= HALF_WIDTH * r["speedup"]]
    speedups = sorted(r["speedup"] for r in correct if r.get("speedup"))
    half_widths = [(r["speedup_band"][1] - r["speedup_band"][0]) / 2 / r["speedup"] for r in timed]
    floors = [f["floor"] for f in outcome["journal"].values() if f["floor"] is not None]
    within = [f["within"] for f in outcome["journal"].values() if f.get("within") is not None]
    seconds = sorted(((f["seconds"], key) for key, f in outcome["journal"].items() if f["seconds"]), reverse=True)
    return {
        "level": level,
        "selected": len(rows),
        "judged": len(judged),
        "correct": len(correct),
        "other_hard_flags": [(r["key"], r["set_aside"]) for r in other_flags],
        "disputed": [key for key, f in outcome["journal"].items() if f.get("disputed")],
        "failed": [(r["key"], r["status"], r["message"][:100]) for r in judged if r["status"] != "correct"],
        "significant": [(r["key"], r["speedup"], r["speedup_band"]) for r in significant],
        "controlled": [(r["key"], r["speedup"], r["process_spread"]) for r in correct if r.get("process_spread")],
        "narrow_share": len(narrow) / len(timed) if timed else None,
        "half_width_median": statistics.median(half_widths) if half_widths else None,
        "floor_median": statistics.median(floors) if floors else None,
        "within_median": statistics.median(within) if within else None,
        "slowest": [(key, round(s, 2)) for s, key in seconds[:5]],
        "timed": len(timed),
        "speedup_range": (speedups[0], speedups[-1]) if speedups else None,
        "wall_s": round(outcome["wall_s"], 1),
        "finished": outcome["finished"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path)
    parser.add_argument("--journals", type=Path, nargs="+", help="print the rows of kept journals; judge nothing")
    parser.add_argument("--levels", default="1,2,3")
    parser.add_argument("--problems", default="1-100")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=Path("runs/identity"))
    parser.add_argument("--budget-s", type=float, default=900.0, help="longest a level's batch may run")
    args = parser.parse_args(argv)
    if (args.kernelbench is None) == (args.journals is None):
        parser.error("give --kernelbench to judge the levels, or --journals to read kept ones")
    if args.journals:
        try:
            outcomes = from_journals(args.journals)
        except ValueError as error:
            parser.error(str(error))
        print_header()
        rows = [row(level, outcome) for level, outcome in outcomes.items()]
        for r in rows:
            print_row(r)
        print_details(rows)
        return
    base = args.kernelbench / "KernelBench" if (args.kernelbench / "KernelBench").is_dir() else args.kernelbench
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    print_header()
    for level in map(int, args.levels.split(",")):
        r = row(
            level, judge_level(base.resolve(), level, args.problems, args.device, args.out.resolve(), args.budget_s)
        )
        rows.append(r)
        print_row(r)
    (args.out / "identity_suites.json").write_text(json.dumps(rows, indent=1))
    print_details(rows)


def print_header() -> None:
    print("| level | judged | correct | other hard flags | disputed | significant | band half-width <= 2 % "
          "| half-width median | process floor median | before the floor | speedups | wall s |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def print_row(r: dict) -> None:
    narrow = f"{r['narrow_share']:.1%} of {r['timed']}" if r["narrow_share"] is not None else "-"
    span = f"{r['speedup_range'][0]:.3f}-{r['speedup_range'][1]:.3f}" if r["speedup_range"] else "-"
    medians = [f"{r[k]:.2%}" if r[k] is not None else "-"
               for k in ("half_width_median", "floor_median", "within_median")]  # fmt: skip
    print(f"| {r['level']} | {r['judged']}/{r['selected']}{'' if r['finished'] else ' (stopped)'} | {r['correct']} "
          f"| {len(r['other_hard_flags'])} | {len(r['disputed'])} | {len(r['significant'])} | {narrow} | {medians[0]} "
          f"| {medians[1]} | {medians[2]} | {span} | {r['wall_s']} |", flush=True)  # fmt: skip


def print_details(rows: list[dict]) -> None:
    for r in rows:
        for what in ("failed", "other_hard_flags", "disputed", "significant", "controlled", "slowest"):
            for item in r[what]:
                print(f"level {r['level']} {what}: {item}")


if __name__ == "__main__":
    main()
