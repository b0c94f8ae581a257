"""Why KernelBench's median of a reference differs from ours: its timing loop, one change at a time, in one process.

`python bench/probes/kb_timing_gap.py --kernelbench PATH NAMES... [--rounds 3] [--trials 100] [--out FILE]` on a GPU:
PATH is a KernelBench checkout (its `src` is imported, nothing is copied here); NAMES are files under
`KernelBench/`. Each problem's Model is built once, as KernelBench's eval builds it (seed 42, on the device, float32),
its inputs are drawn on the device, and it is timed in rounds, in a rotated order, by:
- `kb`: KernelBench's `time_execution_with_cuda_event` as its eval calls it (grad mode on, the same inputs);
- `kb_nograd`: the same under torch.no_grad(), as our workers call a reference;
- `kb_held`: kb_nograd with the stream held by a 1 ms spin before its cache flush, so the call's launches are
  queued before the device reaches the start event (as our loop holds it);
- `kb_fresh`: kb_nograd with new inputs drawn before every flush (as our loop draws them);
- `do_bench`: triton.testing.do_bench's median, no_grad, the same inputs back to back;
- `ours`: our worker's loop (worker/timing.py) with a 1 ms lead, on the same model.
Prints each variant's median per round, the median over rounds and its ratio to `kb`; writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # kernelbench_eval

import torch  # noqa: E402
import triton.testing  # noqa: E402
from kernelbench_eval import stub_llm_clients  # noqa: E402

from evaluators.worker.timing import Clocks, TimingPlan, time_reps, warm_up  # noqa: E402

LEAD_MS = 1.0


def kernelbench_timing(src: Path):
    """KernelBench's timing module; its package's LLM clients are stood in for by modules that do nothing."""
    sys.path.insert(0, str(src))
    stub_llm_clients()
    from kernelbench import timing

    return timing


def load(path: Path):
    """(model, draw(seed) -> inputs) as KernelBench's eval builds them: seed 42, float32, on the device."""
    module: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), module)

    def draw(seed: int) -> list:
        # Drawn on the device, as our workers draw them: on the CPU a draw idles the device for tens of ms.
        torch.manual_seed(seed)
        with torch.device("cuda"):
            return [x.cuda() if isinstance(x, torch.Tensor) else x for x in module["get_inputs"]()]

    torch.manual_seed(42)
    init = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module["get_init_inputs"]()]
    torch.manual_seed(42)
    model = module["Model"](*init).cuda().to(torch.float32)
    return model, draw


def variants(timing, model, draw, trials: int, clocks: Clocks) -> dict:
    """Each variant by name: a function returning one median (ms)."""
    kb_time, kb_flush = timing.time_execution_with_cuda_event, timing.clear_l2_cache
    cycles = clocks.spin_cycles(LEAD_MS)

    def kb(args, before_flush=None, grad=True):
        timing.clear_l2_cache = (lambda device="cuda": (before_flush(), kb_flush(device))) if before_flush else kb_flush
        try:
            with nullcontext() if grad else torch.no_grad():
                times = kb_time(model, args, num_trials=trials, verbose=False, device=torch.device("cuda:0"))
        finally:
            timing.clear_l2_cache = kb_flush
        return statistics.median(times)

    def fresh():
        args = draw(1)
        seeds = iter(range(2, 10**6))
        return kb(args, lambda: args.__setitem__(slice(None), draw(next(seeds))), grad=False)

    def ours():
        call = lambda a: model(*a)  # noqa: E731
        with torch.no_grad():
            warm_up(call, draw, clocks, 5, 7)
            plan = TimingPlan(0, trials, 7, False, 512, 2, "cuda", lead_ms=LEAD_MS)
            facts, _ = time_reps(call, draw, plan, clocks, 0, lambda _: nullcontext())
        return statistics.median(facts["times_ms"])

    def do_bench():
        args = draw(1)
        with torch.no_grad():
            return triton.testing.do_bench(lambda: model(*args), return_mode="median")

    return {
        "kb": lambda: kb(draw(1)),
        "kb_nograd": lambda: kb(draw(1), grad=False),
        "kb_held": lambda: kb(draw(1), lambda: clocks.spin(cycles), grad=False),
        "kb_fresh": fresh,
        "do_bench": do_bench,
        "ours": ours,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--kernelbench", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("kb_timing_gap.json"))
    args = parser.parse_args()
    timing, clocks, rows = kernelbench_timing(args.kernelbench / "src"), Clocks("cuda"), {}
    for name in args.names:
        model, draw = load(args.kernelbench / "KernelBench" / name)
        runs = variants(timing, model, draw, args.trials, clocks)
        seen: dict[str, list[float]] = {v: [] for v in runs}
        order = list(runs)
        for r in range(args.rounds):
            for v in order[r % len(order) :] + order[: r % len(order)]:
                seen[v].append(runs[v]())
        base = statistics.median(seen["kb"])
        rows[name] = {v: {"rounds": t, "median": statistics.median(t)} for v, t in seen.items()}
        print(f"## {name}")
        for v, t in seen.items():
            m = statistics.median(t)
            print(f"{v:10s} {m:8.4f} ms  {m / base:6.3f} of kb   rounds {' '.join(f'{x:.4f}' for x in t)}", flush=True)
        del model, runs
        torch.cuda.empty_cache()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
