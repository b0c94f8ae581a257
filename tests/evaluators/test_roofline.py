"""Peaks lookup and the fraction of the roofline, with measured peaks overriding the datasheet."""

import pytest

from evaluators.judge.roofline import device_peaks, roofline_report


def test_device_names_as_torch_reports_them():
    assert device_peaks("NVIDIA H100 80GB HBM3").gbps == 3350.0
    assert device_peaks("NVIDIA H100 PCIe").gbps == 2000.0
    assert device_peaks("NVIDIA H200").gbps == 4800.0
    assert device_peaks("AMD Instinct MI300X").tflops["bf16"] == pytest.approx(1307.4)
    assert device_peaks("Some Future GPU") is None


def test_memory_bound_fraction():
    # 3.35 GB moved in 2 ms on an H100 SXM (3.35 TB/s): the floor is 1 ms, so half the roofline.
    report = roofline_report({"flops": 10**9, "bytes": 3_350_000_000}, "fp32", 2.0, device_peaks("H100 SXM"))
    assert report.bound == "memory"
    assert report.fraction == pytest.approx(0.5)
    assert report.achieved_gbps == pytest.approx(1675.0)


def test_measured_peaks_override_the_table():
    report = roofline_report({"flops": 2 * 10**12, "bytes": 1}, "bf16", 4.0, device_peaks("H100"), peak_tflops=1000.0)
    assert report.bound == "compute" and report.fraction == pytest.approx(0.5)
    assert report.peaks_source.startswith("measured")


def test_unknown_device_reports_rates_without_fraction():
    report = roofline_report({"flops": 10**6, "bytes": 10**6}, "fp32", 1.0, None)
    assert report.fraction is None and report.achieved_tflops == pytest.approx(1e-3)
