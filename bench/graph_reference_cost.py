"""What a graph run pays for its problem's reference: processes started, timings measured, seconds per evaluation.

`python bench/graph_reference_cost.py [GRAPH.RUN ARGS...]` runs `python -m graph.run` in this process (default:
the bundled problem and cassette, one iteration, into a temporary directory) and counts, while it runs, the
reference processes started and the reference timings measured (per benchmark shape, each beside a candidate).
Then prints each archived evaluation's reference stage: the first evaluation of the run starts the reference, every
later one, the debugger's retries included, finds it warm.
"""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluators.judge import reference_pool  # noqa: E402
from graph import run  # noqa: E402

counts = {"reference processes started": 0, "reference timings measured": 0}
started, measured = reference_pool.ReferenceWorker.__init__, reference_pool.time_side_by_side


def counting_start(self, *args, **kwargs):
    counts["reference processes started"] += 1
    started(self, *args, **kwargs)


def counting_timing(*args, **kwargs):
    counts["reference timings measured"] += 1
    return measured(*args, **kwargs)


reference_pool.ReferenceWorker.__init__ = counting_start
reference_pool.time_side_by_side = counting_timing

with tempfile.TemporaryDirectory() as scratch:
    argv = sys.argv[1:] or ["--iterations", "1"]
    if "--out" not in argv:
        argv += ["--out", str(Path(scratch) / "run")]
    code = run.main(argv)
    out = Path(argv[argv.index("--out") + 1])
    print(f"\ngraph.run {' '.join(sys.argv[1:]) or '--iterations 1'} -> exit {code}")
    for line in (out / "archive.jsonl").read_text().splitlines():
        record = json.loads(line)
        stages = (record.get("eval") or {}).get("stages") or {}
        if "reference" in stages:
            status, attempts = record["eval"]["status"], record["debug_attempts"]
            print(
                f"  {record['id']} iteration {record['iteration']}: reference stage {stages['reference']:.3f} s "
                f"of {stages.get('total', 0):.2f} s, {status}, debug attempts {attempts}"
            )
    print("  " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
