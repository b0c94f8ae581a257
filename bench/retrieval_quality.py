"""Retrieval benchmark: recall@5 and MRR per search mode, build and rebuild times, warm query latency.

    python bench/retrieval_quality.py [--questions FILE] [--index-dir DIR] [--json OUT] [--check-labels]

Builds the bundled literature into a fresh index (unless --index-dir names one) with the real CLI in a
subprocess, so build times include start-up and model loading as a user sees them.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from retrieval.config import LITERATURE_DIR  # noqa: E402
from retrieval.query import MODES, open_index  # noqa: E402

QUESTIONS = REPO_ROOT / "bench" / "data" / "retrieval_questions.json"
RECALL_AT = 5
MRR_DEPTH = 10
LATENCY_ROUNDS = 3


def check_labels(questions: list[dict]) -> list[str]:
    """Labels whose note is missing or lacks the question's evidence."""
    problems = []
    for item in questions:
        for answer in item["answers"]:
            note = LITERATURE_DIR / answer
            if not note.exists():
                problems.append(f"{answer}: no such note (question: {item['question']})")
            elif not re.search(item["evidence"], note.read_text(encoding="utf-8"), re.IGNORECASE):
                problems.append(f"{answer}: lacks /{item['evidence']}/ (question: {item['question']})")
    return problems


def timed_build(index_dir: Path) -> tuple[float, str]:
    """Seconds for `python -m retrieval.build` on the bundled literature, and its summary line."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "retrieval.build", "--index-dir", str(index_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"retrieval_quality: build failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, done.stdout.strip()


def quality(index, questions: list[dict], mode: str) -> dict:
    """recall@5 (an answering note among the top 5 passages), the same for the first-listed note only, MRR@10."""
    hits, primary_hits, reciprocal, misses = 0, 0, 0.0, []
    for item in questions:
        wanted = {f"literature/{answer}" for answer in item["answers"]}
        paths = [passage.metadata["path"] for passage in index.search(item["question"], k=MRR_DEPTH, mode=mode)]
        rank = next((n for n, path in enumerate(paths, start=1) if path in wanted), None)
        hits += rank is not None and rank <= RECALL_AT
        primary_hits += f"literature/{item['answers'][0]}" in paths[:RECALL_AT]
        reciprocal += 1.0 / rank if rank else 0.0
        if rank is None or rank > RECALL_AT:
            misses.append(item["question"])
    count = len(questions)
    return {
        "recall@5": hits / count,
        "primary_recall@5": primary_hits / count,
        "mrr@10": reciprocal / count,
        "misses": misses,
    }


def latency(index, questions: list[dict], mode: str) -> dict:
    """Warm per-query latency in milliseconds (every question once to warm up, then timed rounds)."""
    for item in questions:
        index.search(item["question"], k=RECALL_AT, mode=mode)
    samples = []
    for _ in range(LATENCY_ROUNDS):
        for item in questions:
            start = time.perf_counter()
            index.search(item["question"], k=RECALL_AT, mode=mode)
            samples.append((time.perf_counter() - start) * 1000)
    cuts = statistics.quantiles(samples, n=20)
    return {"p50_ms": statistics.median(samples), "p95_ms": cuts[18], "queries": len(samples)}


def main() -> int:
    """Run the benchmark and print a Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--index-dir", type=Path, help="reuse this index instead of building a fresh one")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--check-labels", action="store_true", help="only verify the labels against the notes")
    args = parser.parse_args()

    questions = json.loads(args.questions.read_text(encoding="utf-8"))["questions"]
    problems = check_labels(questions)
    for problem in problems:
        print(f"retrieval_quality: label {problem}", file=sys.stderr)
    if problems or args.check_labels:
        return 1 if problems else 0

    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "load_before": os.getloadavg()[0]}
    index_dir = args.index_dir or Path(tempfile.mkdtemp(prefix="retrieval-bench-"))
    if args.index_dir is None:
        results["full_build_s"], results["full_build"] = timed_build(index_dir)
        results["noop_rebuild_s"], results["noop_rebuild"] = timed_build(index_dir)
    index = open_index(index_dir)
    for mode in MODES:
        results[mode] = {**quality(index, questions, mode), **latency(index, questions, mode)}

    results["load_after"] = os.getloadavg()[0]
    load = f"load average {results['load_before']:.1f} before, {results['load_after']:.1f} after"
    print(f"questions: {len(questions)}; machine: {results['machine']} ({load})")
    if "full_build_s" in results:
        print(f"full build: {results['full_build_s']:.1f} s ({results['full_build']})")
        print(f"no-op rebuild: {results['noop_rebuild_s']:.1f} s ({results['noop_rebuild']})")
    print("\n| mode | recall@5 | recall@5, first-listed note | MRR@10 | p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for mode in MODES:
        row = results[mode]
        print(
            f"| {mode} | {row['recall@5']:.3f} | {row['primary_recall@5']:.3f} | {row['mrr@10']:.3f} "
            f"| {row['p50_ms']:.1f} | {row['p95_ms']:.1f} |"
        )
    for mode in MODES:
        for question in results[mode]["misses"]:
            print(f"miss ({mode}): {question}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
