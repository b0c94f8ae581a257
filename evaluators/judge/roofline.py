"""Device peaks and the roofline: achieved FLOP/s and bandwidth of a timed run against what the chip can do."""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.judge.result import Roofline


@dataclass(frozen=True)
class Peaks:
    """Dense (no sparsity) TFLOP/s per dtype and HBM bandwidth in GB/s, with where the numbers come from."""

    tflops: dict[str, float]
    gbps: float
    source: str


# Datasheet peaks, dense rates (vendors quote sparse rates at twice these). Matched by substring of the
# device name, first hit wins, so more specific names come first.
PEAKS: list[tuple[str, Peaks]] = [
    # AMD Instinct MI325X datasheet: same CDNA3 compute as MI300X, 6.0 TB/s HBM3E.
    ("MI325X", Peaks({"fp64": 163.4, "fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9},
                     6000.0, "AMD Instinct MI325X datasheet")),
    # AMD Instinct MI300X datasheet: 1307.4 TFLOPS dense FP16/BF16, 2614.9 FP8, 163.4 FP32 matrix, 5.3 TB/s.
    ("MI300X", Peaks({"fp64": 163.4, "fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9},
                     5300.0, "AMD Instinct MI300X datasheet")),
    # NVIDIA H200 datasheet (SXM): H100 SXM compute, 4.8 TB/s HBM3E.
    ("H200", Peaks({"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9},
                   4800.0, "NVIDIA H200 datasheet (SXM)")),
    # NVIDIA H100 datasheet, PCIe: 756 TFLOPS dense BF16, 1513 FP8, 51 FP32, 2.0 TB/s.
    ("H100 PCIe", Peaks({"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "fp16": 756.0, "bf16": 756.0, "fp8": 1513.0},
                        2000.0, "NVIDIA H100 datasheet (PCIe)")),
    # NVIDIA H100 datasheet, SXM5: 989.4 TFLOPS dense BF16, 1978.9 FP8, 67 FP32, 3.35 TB/s HBM3.
    ("H100", Peaks({"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9},
                   3350.0, "NVIDIA H100 datasheet (SXM5)")),
    # NVIDIA A100 datasheet (80 GB SXM): 312 TFLOPS BF16, 19.5 FP32, 2.039 TB/s.
    ("A100", Peaks({"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0},
                   2039.0, "NVIDIA A100 datasheet (80 GB SXM)")),
]  # fmt: skip


def device_peaks(device_name: str) -> Peaks | None:
    """The table's peaks for a device name as torch reports it, or None for an unknown device."""
    for key, peaks in PEAKS:
        if key.lower() in device_name.lower():
            return peaks
    return None


def roofline_report(
    work: dict, dtype: str, runtime_ms: float, peaks: Peaks | None, peak_tflops=None, peak_gbps=None
) -> Roofline:
    """Achieved rates, and the fraction of the roofline when peaks are known; measured peaks override."""
    seconds = runtime_ms * 1e-3
    flops, nbytes = int(work["flops"]), int(work["bytes"])
    tflops_peak = peak_tflops or (peaks.tflops.get(dtype) if peaks else None)
    gbps_peak = peak_gbps or (peaks.gbps if peaks else None)
    report = Roofline(
        flops=flops,
        bytes=nbytes,
        dtype=dtype,
        achieved_tflops=flops / seconds / 1e12,
        achieved_gbps=nbytes / seconds / 1e9,
        peak_tflops=tflops_peak,
        peak_gbps=gbps_peak,
        peaks_source="measured (option or KS_PEAK_*)" if (peak_tflops or peak_gbps) else (peaks and peaks.source),
    )
    if tflops_peak and gbps_peak:
        compute_s, memory_s = flops / (tflops_peak * 1e12), nbytes / (gbps_peak * 1e9)
        report.bound = "compute" if compute_s >= memory_s else "memory"
        report.fraction = max(compute_s, memory_s) / seconds
    return report
