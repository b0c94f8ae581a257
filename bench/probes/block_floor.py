"""Whether blocks of five repetitions read a long call slower than blocks of ten, and narrow its band.

    python bench/probes/block_floor.py --min-blocks N -- ARGS...

Runs `python -m evaluators.batch ARGS` in this process with the timing's floor of blocks a side
(judge/timing_plan.MIN_BLOCKS) set to N: 1 lays 20 repetitions of a 10 ms call out as two blocks of ten, as before the
floor; 4 as four blocks of five. On one GPU the batch judges in threads of this process, so the change reaches every
evaluation; with several, each GPU's process imports the module afresh and the probe refuses. Judge one set of
identity candidates (bench/reference_candidates.py) both ways on one machine and compare the rows' times and bands.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evaluators import batch  # noqa: E402
from evaluators.judge import timing_plan  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-blocks", type=int, required=True)
    parser.add_argument("batch_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    forwarded = [a for a in args.batch_args if a != "--"]
    if "auto" in forwarded:
        parser.error("one GPU only: with several, each GPU's process would not see the change")
    timing_plan.MIN_BLOCKS = args.min_blocks
    return batch.main(forwarded)


if __name__ == "__main__":
    sys.exit(main())
