"""How long `--help` takes to print for the CLIs (start-up cost before any work): median of N runs each.

python bench/cli_startup.py [--repeat 5]
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("graph.run", "graph.batch", "evaluators.run")


def seconds(module: str) -> float:
    """Wall time of one `python -m MODULE --help`."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    """Print each CLI's median --help time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for module in MODULES:
        times = [seconds(module) for _ in range(args.repeat)]
        print(f"{module}: median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f})")


if __name__ == "__main__":
    main()
