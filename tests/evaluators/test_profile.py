"""Profiler evidence: the ncu CSV parser and summary on a fixture, and the run going on without a profiler."""

from pathlib import Path

import pytest

from evaluators import profile
from evaluators.profile_report import parse_ncu_csv, parse_rocprof_csv, summarize
from kernels.problem import load_problem

# Hand-made (its header says so): ncu's raw-page layout, to be replaced by a report saved on a GPU machine.
FIXTURE = Path(__file__).parent / "fixtures" / "ncu_raw_handmade.csv"


def test_ncu_raw_csv_merges_launches_per_kernel_heaviest_first():
    kernels = parse_ncu_csv(FIXTURE.read_text())
    assert [k.name for k in kernels] == ["silu_gate_kernel", "residual_add_kernel", "rms_norm_row_kernel"]
    silu = kernels[0]
    assert silu.launches == 2 and silu.duration_ns == pytest.approx(820_000)
    assert silu.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(88.5, abs=0.01)
    assert silu.limiter == "registers" and kernels[2].limiter == "registers"


def test_summary_is_bounded_and_names_the_bottleneck_evidence():
    text = summarize(parse_ncu_csv(FIXTURE.read_text()), "ncu", top=2)
    lines = text.splitlines()
    assert len(lines) == 3 and "3 kernel(s)" in lines[0] and "lighter ones left out" in lines[0]
    first = lines[1]
    for part in ("silu_gate_kernel", "DRAM 2945 GB/s (88% of peak)", "SM throughput 31%", "tensor pipe 0%"):
        assert part in first, first
    assert "occupancy 72% achieved of 100% theoretical, limited by registers, 32 registers/thread" in first
    assert "L2 hit 14%" in first and "top stalls (cycles per issue): long_scoreboard 21.5, wait 2.1" in first


def test_a_csv_without_the_raw_header_is_a_clear_error():
    with pytest.raises(ValueError, match="Kernel Name"):
        parse_ncu_csv("==PROF== nothing profiled\n")


def test_rocprof_reader_maps_counters_to_the_same_summary():
    # Untested on an MI300; this checks only that the documented column names are read as intended.
    trace = "Kernel_Name,Start_Timestamp,End_Timestamp\nk,0,1000000\nk,2000000,3000000\n"
    counters = "Kernel_Name,Counter_Name,Counter_Value\nk,FETCH_SIZE,2048\nk,WRITE_SIZE,2048\nk,TCC_HIT_sum,30\n"
    counters += "k,TCC_MISS_sum,70\n"
    (kernel,) = parse_rocprof_csv(counters, trace)
    assert kernel.launches == 2 and kernel.metrics["lts__t_sector_hit_rate.pct"] == pytest.approx(30)
    assert "DRAM 2 GB/s; L2 hit 30%" in summarize([kernel], "rocprofv3")  # 4 MiB in 2 ms


def test_without_a_profiler_the_prompts_say_so(monkeypatch, tmp_path):
    problem = load_problem("fused_residual_norm")
    assert "on the CPU" in profile.profile_summary(problem, "src", "cpu", cache_dir=tmp_path)
    monkeypatch.setattr(profile.shutil, "which", lambda name: None)
    monkeypatch.setattr(profile, "profiler_for", lambda device: None)
    assert "neither ncu nor rocprofv3" in profile.profile_summary(problem, "src", "cuda", cache_dir=tmp_path)


def test_the_ncu_command_is_written_down_once():
    command = profile.ncu_profile_command(Path("/tmp/r"))
    assert command[:5] == ["ncu", "--target-processes", "all", "--profile-from-start", "off"]
    assert "lts__t_sector_hit_rate.pct" in command[command.index("--metrics") + 1]
    assert profile.ncu_csv_command(Path("/tmp/r")) == [
        "ncu", "--import", "/tmp/r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base",
    ]  # fmt: skip


@pytest.mark.gpu
def test_ncu_profiles_the_seed_on_a_gpu(tmp_path):
    problem = load_problem("fused_residual_norm")
    summary = profile.profile_summary(problem, problem.seed_path.read_text(), "cuda", cache_dir=tmp_path)
    if profile.profiler_for("cuda") is None:
        pytest.skip("no ncu on this GPU machine")
    assert summary.startswith("ncu:") and "kernel" in summary, summary
