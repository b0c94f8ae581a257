"""Whether a watcher kernel in one process sees, as gaps in its clock, the device time another process's work takes.

Work a candidate leaves on the device runs through a block's host windows (its seal, the pipes, the pin's opens),
where the reference's own blocks leave the device idle and no span the parent reads sees it (docs/CONTRACTS.md, "What
the pin leaves"). The contexts time-slice (bench/probes/context_switch.py). If they do so by preempting a running
kernel, a one-thread kernel of the reference's that polls the device's global timer through such a window is switched
out while the other context runs, and the time it lost is the other context's work. This probe runs that watcher on
a side stream of one process while (a) nothing else runs, (b) the other process runs a burst of copies of about
--burst-ms, (c) the other process ran its burst before the watcher started, (d) this process runs its own burst on
another stream; the watcher sums the gaps between its polls longer than --gap-us.

    python bench/probes/slice_watch.py [--rounds 20] [--burst-ms 1.0] [--gap-us 20] [--out FILE.json]
"""

from __future__ import annotations

import ctypes
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from context_switch import MIB, parser_for, start_other  # this folder's probe: the other process and its bursts

from evaluators.worker import ptx_kernel

PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry watch(
    .param .u64 flag,
    .param .u32 want,
    .param .u64 cap_ns,
    .param .u64 gap_ns,
    .param .u64 out
)
{
    .reg .pred  %p<3>;
    .reg .b32   %want, %seen;
    .reg .b64   %flag, %cap, %gap, %out, %start, %last, %now, %d, %total, %count, %longest;

    ld.param.u64        %flag, [flag];
    ld.param.u32        %want, [want];
    ld.param.u64        %cap, [cap_ns];
    ld.param.u64        %gap, [gap_ns];
    ld.param.u64        %out, [out];
    cvta.to.global.u64  %flag, %flag;
    cvta.to.global.u64  %out, %out;
    mov.u64             %start, %globaltimer;
    mov.u64             %last, %start;
    mov.u64             %total, 0;
    mov.u64             %count, 0;
    mov.u64             %longest, 0;
POLL:
    ld.relaxed.sys.global.u32  %seen, [%flag];
    mov.u64             %now, %globaltimer;
    sub.u64             %d, %now, %last;
    max.u64             %longest, %longest, %d;
    setp.gt.u64         %p0, %d, %gap;
    @%p0 add.u64        %total, %total, %d;
    @%p0 add.u64        %count, %count, 1;
    mov.u64             %last, %now;
    setp.ge.u32         %p1, %seen, %want;
    @%p1 bra            DONE;
    sub.u64             %d, %now, %start;
    setp.ge.u64         %p2, %d, %cap;
    @%p2 bra            DONE;
    bra.uni             POLL;
DONE:
    sub.u64             %d, %now, %start;
    st.global.u64       [%out], %total;
    st.global.u64       [%out+8], %count;
    st.global.u64       [%out+16], %longest;
    st.global.u64       [%out+24], %d;
    ret;
}
"""


class Watcher:
    """The watch kernel on a side stream, stopped by a word of pinned host memory."""

    def __init__(self, gap_us: float):
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as file:
            file.write(PTX)
        self.kernel = ptx_kernel.load(Path(file.name), "watch")
        self.word = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        pointer = ctypes.c_uint64()
        status = self.kernel.driver.cuMemHostGetDevicePointer_v2(
            ctypes.byref(pointer), ptx_kernel.P(self.word.data_ptr()), 0
        )
        ptx_kernel.check(status, "mapping")
        self.out = torch.zeros(4, dtype=torch.int64, device="cuda")
        self.args = [ctypes.c_uint64(pointer.value), ctypes.c_uint32(0), ctypes.c_uint64(int(50e6)),
                     ctypes.c_uint64(int(gap_us * 1e3)), ctypes.c_uint64(self.out.data_ptr())]  # fmt: skip
        self.pointers = ptx_kernel.pointers(self.args)
        self.stream = torch.cuda.Stream()
        self.flag = ctypes.c_uint32.from_address(self.word.data_ptr())

    def start(self) -> None:
        self.args[1].value += 1
        self.kernel.launch(1, 1, self.pointers, self.stream.cuda_stream)

    def stop(self) -> dict:
        self.flag.value = self.args[1].value
        self.stream.synchronize()
        total, count, longest, span = self.out.tolist()
        return {"gaps_ms": total / 1e6, "gaps": count, "longest_ms": longest / 1e6, "span_ms": span / 1e6}


def main() -> None:
    parser = parser_for(__doc__, 20)
    parser.add_argument("--gap-us", type=float, default=20.0)
    args = parser.parse_args()
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
    watcher = Watcher(args.gap_us)
    side = torch.cuda.Stream()

    def quiet() -> dict:
        watcher.start()
        time.sleep(args.burst_ms * 2e-3)
        return watcher.stop()

    def theirs_during() -> dict:
        watcher.start()
        time.sleep(0.2e-3)
        ours.send((copies, True))
        ours.recv()
        return watcher.stop()

    def theirs_before() -> dict:
        ours.send((copies, True))
        ours.recv()
        watcher.start()
        time.sleep(args.burst_ms * 2e-3)
        return watcher.stop()

    def own_during() -> dict:
        watcher.start()
        with torch.cuda.stream(side):
            for _ in range(copies):
                own_target.copy_(own)
        side.synchronize()
        return watcher.stop()

    cases = {"quiet": quiet, "their burst during": theirs_during, "their burst before": theirs_before,
             "own burst during, another stream": own_during}  # fmt: skip
    results: dict[str, list[dict]] = {name: [] for name in cases}
    quiet()
    for _ in range(args.rounds):
        for name, case in cases.items():
            results[name].append(case())
            time.sleep(0.002)
    ours.send("stop")
    process.join(timeout=10)
    print(f"{torch.cuda.get_device_name()}: bursts of {copies} copies of {args.mib} MiB (about {args.burst_ms} ms), "
          f"gaps over {args.gap_us} us, {args.rounds} rounds; medians (most)")  # fmt: skip
    for name, rows in results.items():
        parts = []
        for key in ("gaps_ms", "gaps", "longest_ms", "span_ms"):
            values = [row[key] for row in rows]
            parts.append(f"{key} {statistics.median(values):.4g} ({max(values):.4g})")
        print(f"  {name}: " + ", ".join(parts))
    if args.out:
        setup = {"copies": copies, "burst_ms": args.burst_ms, "gap_us": args.gap_us, "mib": args.mib}
        args.out.write_text(json.dumps({"setup": setup, "results": results}, indent=1))


if __name__ == "__main__":
    main()
