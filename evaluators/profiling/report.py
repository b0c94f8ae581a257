"""Profiler reports reduced to a compact, bounded summary: per kernel, the few heaviest only.

- `parse_ncu_csv(text)`: the CSV of `ncu --import REPORT --csv --page raw --print-units base` (one row per kernel
  launch, metric names as column headers, a units row under the header; lines before the header, such as
  `==PROF==` chatter, are skipped; numbers may carry thousands separators).
- `parse_rocprof_csv(counters, trace)`: rocprofv3's counter_collection.csv (long: one row per dispatch and counter)
  and kernel_trace.csv. UNTESTED until it runs on an MI300: written from rocprofv3's documented column names.
- `summarize(kernels, tool, top=3)`: a few lines for the prompts: achieved DRAM bandwidth, SM and tensor-pipe
  utilisation, occupancy and its limiter, L2 hit rate and the top stall reasons, for the heaviest kernels.
"""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from dataclasses import dataclass, field

TOP_KERNELS = 3
TOP_STALLS = 3
NAME_CHARS = 60
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
LIMITS = {
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared memory",
    "launch__occupancy_limit_warps": "warps per SM",
    "launch__occupancy_limit_blocks": "blocks per SM",
}
SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
TIME_SCALE = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}


@dataclass
class KernelProfile:
    """One kernel's launches in the profiled call, summed (time) or time-weighted (rates and percentages)."""

    name: str
    launches: int = 0
    duration_ns: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    limiter: str | None = None


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def _to_base(value: float, unit: str) -> float:
    """Bytes per second and nanoseconds whatever unit ncu printed (base units when asked with --print-units base)."""
    if unit in TIME_SCALE:
        return value * TIME_SCALE[unit]
    match = re.fullmatch(r"([KMGT]?)byte(/second)?", unit)
    return value * SCALE[match.group(1)] if match else value


def _rows(text: str) -> tuple[list[str], list[str], list[list[str]]]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if '"Kernel Name"' in line or line.startswith("ID,")), None)
    if start is None:
        raise ValueError("no ncu raw-page header (a row naming 'Kernel Name') in the CSV")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, rest = rows[0], [row for row in rows[1:] if len(row) == len(rows[0])]
    units = rest.pop(0) if rest and not rest[0][0].strip() else [""] * len(header)
    return header, units, rest


def parse_ncu_csv(text: str) -> list[KernelProfile]:
    """Kernels of an ncu raw-page CSV, launches of one name merged, heaviest first."""
    header, units, rows = _rows(text)
    name_at = header.index("Kernel Name")
    time_at = header.index("gpu__time_duration.sum") if "gpu__time_duration.sum" in header else None
    kernels: dict[str, KernelProfile] = {}
    weighted: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
    heaviest_launch: dict[str, float] = {}
    for row in rows:
        name = row[name_at]
        kernel = kernels.setdefault(name, KernelProfile(name))
        duration = _to_base(_number(row[time_at]) or 0.0, units[time_at]) if time_at is not None else 1.0
        kernel.launches += 1
        kernel.duration_ns += duration
        limits = {}
        for column, (metric, unit, cell) in enumerate(zip(header, units, row, strict=True)):
            value = _number(cell)
            if value is None or column in (name_at, time_at) or "__" not in metric:
                continue
            if metric in LIMITS:
                limits[LIMITS[metric]] = value
            else:
                weighted[name][metric] += _to_base(value, unit) * duration
        if limits and duration >= heaviest_launch.get(name, -1.0):
            heaviest_launch[name] = duration
            kernel.limiter = min(limits, key=limits.get)
    for name, kernel in kernels.items():
        kernel.metrics = {metric: total / (kernel.duration_ns or 1.0) for metric, total in weighted[name].items()}
    return sorted(kernels.values(), key=lambda kernel: -kernel.duration_ns)


def parse_rocprof_csv(counters: str, trace: str) -> list[KernelProfile]:
    """Kernels of rocprofv3's CSVs (UNTESTED until it runs on an MI300), in ncu's metric names where they map."""
    durations: defaultdict[str, float] = defaultdict(float)
    launches: defaultdict[str, int] = defaultdict(int)
    for row in csv.DictReader(io.StringIO(trace)):
        durations[row["Kernel_Name"]] += float(row["End_Timestamp"]) - float(row["Start_Timestamp"])
        launches[row["Kernel_Name"]] += 1
    totals: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in csv.DictReader(io.StringIO(counters)):
        totals[row["Kernel_Name"]][row["Counter_Name"]] += float(row["Counter_Value"])
    kernels = []
    for name, duration in durations.items():
        counts = totals.get(name, {})
        metrics = {}
        if duration and ("FETCH_SIZE" in counts or "WRITE_SIZE" in counts):
            # FETCH_SIZE and WRITE_SIZE count kilobytes.
            moved = (counts.get("FETCH_SIZE", 0.0) + counts.get("WRITE_SIZE", 0.0)) * 1024
            metrics["dram__bytes.sum.per_second"] = moved / (duration * 1e-9)
        hits, misses = counts.get("TCC_HIT_sum"), counts.get("TCC_MISS_sum")
        if hits is not None and misses is not None and hits + misses:
            metrics["lts__t_sector_hit_rate.pct"] = 100 * hits / (hits + misses)
        kernels.append(KernelProfile(name, launches[name], duration, metrics))
    return sorted(kernels, key=lambda kernel: -kernel.duration_ns)


def _dram_bandwidth(metrics: dict[str, float]) -> float | None:
    if "dram__bytes.sum.per_second" in metrics:
        return metrics["dram__bytes.sum.per_second"]
    parts = [metrics.get(f"dram__bytes_{way}.sum.per_second") for way in ("read", "write")]
    return sum(parts) if all(part is not None for part in parts) else None


def _percent(metrics: dict[str, float], name: str, label: str) -> str | None:
    return f"{label} {metrics[name]:.0f}%" if name in metrics else None


def describe_kernel(kernel: KernelProfile, total_ns: float) -> str:
    """One bounded line about one kernel."""
    m = kernel.metrics
    name = kernel.name if len(kernel.name) <= NAME_CHARS else kernel.name[: NAME_CHARS - 3] + "..."
    head = (
        f"- {name}: {kernel.duration_ns / total_ns:.0%} of GPU time ({kernel.duration_ns / 1e6:.3f} ms, "
        f"{kernel.launches} launch{'es' if kernel.launches != 1 else ''})"
    )
    parts = []
    bandwidth = _dram_bandwidth(m)
    if bandwidth is not None:
        peak = m.get("dram__throughput.avg.pct_of_peak_sustained_elapsed")
        parts.append(f"DRAM {bandwidth / 1e9:.0f} GB/s" + (f" ({peak:.0f}% of peak)" if peak is not None else ""))
    parts += [
        _percent(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput"),
        _percent(m, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe"),
    ]
    if "sm__warps_active.avg.pct_of_peak_sustained_active" in m:
        occupancy = f"occupancy {m['sm__warps_active.avg.pct_of_peak_sustained_active']:.0f}% achieved"
        if "sm__maximum_warps_per_active_cycle_pct" in m:
            occupancy += f" of {m['sm__maximum_warps_per_active_cycle_pct']:.0f}% theoretical"
        if kernel.limiter:
            occupancy += f", limited by {kernel.limiter}"
        if "launch__registers_per_thread" in m:
            occupancy += f", {m['launch__registers_per_thread']:.0f} registers/thread"
        parts.append(occupancy)
    parts.append(_percent(m, "lts__t_sector_hit_rate.pct", "L2 hit"))
    stalls = sorted(((STALL.match(k).group(1), v) for k, v in m.items() if STALL.match(k)), key=lambda s: -s[1])
    if stalls:
        parts.append("top stalls (cycles per issue): " + ", ".join(f"{r} {v:.1f}" for r, v in stalls[:TOP_STALLS]))
    return head + (": " + "; ".join(p for p in parts if p) if any(parts) else "")


def summarize(kernels: list[KernelProfile], tool: str, top: int = TOP_KERNELS) -> str:
    """The heaviest `top` kernels of one profiled call, a line each, under a one-line total."""
    if not kernels:
        return f"{tool} profiled no kernels in the call."
    total = sum(kernel.duration_ns for kernel in kernels) or 1.0
    more = f"; the {len(kernels) - top} lighter ones left out" if len(kernels) > top else ""
    lines = [f"{tool}: {len(kernels)} kernel(s), {total / 1e6:.3f} ms of GPU time in one call{more}:"]
    return "\n".join(lines + [describe_kernel(kernel, total) for kernel in kernels[:top]])
