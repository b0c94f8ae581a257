"""Whether a watcher kernel in one process sees, as time it did not run, the device time another process's work takes.

Work a candidate leaves on the device runs through a block's host windows (its seal, the pipes, the pin's opens),
where the reference's own blocks leave the device idle (docs/CONTRACTS.md, "What the pin leaves"). The contexts
time-slice (bench/probes/context_switch.py): a one-thread kernel of the reference's that polls the device's global
timer through such a window is switched out while the other context runs. This probe runs the reference's watch
(evaluators/worker/window_watch.py) on a side stream of one process while (a) nothing else runs, (b) the other process
runs a burst of copies of about --burst-ms, started once the watch runs, (c) the other ran its burst before the watch
started, (d) this process runs its own burst on another stream, (e) the other's burst was queued, not waited for, just
before the watch started. It prints what the watcher did not run of the host's span (`away_ms`), its gaps and the span.

    python bench/probes/slice_watch.py [--rounds 20] [--burst-ms 1.0] [--out FILE.json]

Its first form (at 2409ad0, the watcher's PTX inline, 20 us gaps) printed the gaps, the longest and the watcher's span:
bench/data/slice_watch_h200_2409ad0_{1ms,02ms}.json.
"""

from __future__ import annotations

import json
import statistics
import time

import torch
from context_switch import MIB, parser_for, start_other  # this folder's probe: the other process and its bursts

from evaluators.worker import window_watch


def main() -> None:
    args = parser_for(__doc__, 20).parse_args()
    elements = args.mib * MIB // 4
    ours, process = start_other(elements)  # its bursts answer once run when asked to wait (context_switch.other)
    ours.recv()  # its shared tensor, not read here
    own, own_target = torch.ones(elements, device="cuda"), torch.empty(elements, device="cuda")
    copies = 1
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        own_target.copy_(own)
    end.record()
    end.synchronize()
    copies = max(1, round(args.burst_ms / (start.elapsed_time(end) / 20)))
    watcher = window_watch.load()
    if watcher is None:
        raise SystemExit("the watch kernel could not be loaded here")
    side = torch.cuda.Stream()

    def quiet() -> dict:
        watcher.start()
        time.sleep(args.burst_ms * 2e-3)
        return watcher.end()

    def theirs_during() -> dict:
        watcher.start()
        time.sleep(0.2e-3)
        ours.send((copies, True))
        ours.recv()
        return watcher.end()

    def theirs_before() -> dict:
        ours.send((copies, True))
        ours.recv()
        watcher.start()
        time.sleep(args.burst_ms * 2e-3)
        return watcher.end()

    def theirs_queued_before() -> dict:
        ours.send((copies, False))
        ours.recv()  # queued, not run: the watch starts while it runs
        watcher.start()
        time.sleep(args.burst_ms * 2e-3)
        return watcher.end()

    def own_during() -> dict:
        watcher.start()
        with torch.cuda.stream(side):
            for _ in range(copies):
                own_target.copy_(own)
        side.synchronize()
        return watcher.end()

    cases = {"quiet": quiet, "their burst during": theirs_during, "their burst before": theirs_before,
             "own burst during, another stream": own_during,
             "their burst queued before": theirs_queued_before}  # fmt: skip
    results: dict[str, list[dict]] = {name: [] for name in cases}
    quiet()
    for _ in range(args.rounds):
        for name, case in cases.items():
            results[name].append(case())
            time.sleep(0.002)
    ours.send("stop")
    process.join(timeout=10)
    print(f"{torch.cuda.get_device_name()}: bursts of {copies} copies of {args.mib} MiB (about {args.burst_ms} ms), "
          f"gaps over {window_watch.GAP_NS / 1e3:g} us, {args.rounds} rounds; medians (most)")  # fmt: skip
    for name, rows in results.items():
        parts = []
        for key in ("away_ms", "gaps_ms", "gaps", "watched_ms"):
            values = [row[key] for row in rows]
            parts.append(f"{key} {statistics.median(values):.4g} ({max(values):.4g})")
        print(f"  {name}: " + ", ".join(parts))
    if args.out:
        setup = {"copies": copies, "burst_ms": args.burst_ms, "gap_us": window_watch.GAP_NS / 1e3, "mib": args.mib}
        args.out.write_text(json.dumps({"setup": setup, "results": results}, indent=1))


if __name__ == "__main__":
    main()
