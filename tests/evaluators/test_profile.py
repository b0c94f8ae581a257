"""Profiler evidence: the ncu CSV parser and summary on a fixture, and the run going on without a profiler."""

import shutil
import subprocess
from pathlib import Path

import pytest

from evaluators.profiling import profile
from evaluators.profiling.report import parse_ncu_csv, parse_rocprof_csv, summarize
from kernels.problem import load_problem

# Saved from ncu on an H100 (each file's header says how), through evaluators/profiling/profile.py's own commands.
FIXTURES = Path(__file__).parent / "fixtures"
NORM = FIXTURES / "ncu_raw_h100_fused_residual_norm_seed.csv"
MATMUL = FIXTURES / "ncu_raw_h100_matmul_bf16_seed.csv"


def test_ncu_raw_csv_gives_each_kernel_heaviest_first_with_its_limiter():
    kernels = parse_ncu_csv(NORM.read_text())
    assert [k.name for k in kernels] == ["residual_add_kernel", "silu_gate_kernel", "rms_norm_row_kernel"]
    residual = kernels[0]
    assert residual.launches == 1 and residual.duration_ns == pytest.approx(128_480)
    assert residual.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(90.0, abs=0.5)
    assert residual.limiter == "warps per SM" and kernels[1].limiter == "registers"


def test_launches_of_one_kernel_are_merged_weighted_by_their_time():
    text = NORM.read_text()
    header_at = next(i for i, line in enumerate(text.splitlines()) if '"Kernel Name"' in line)
    lines = text.splitlines()
    silu = next(line for line in lines[header_at + 2 :] if "silu_gate_kernel" in line)
    kernels = parse_ncu_csv("\n".join([*lines, silu]))  # the same launch once more: a second call
    merged = next(k for k in kernels if k.name == "silu_gate_kernel")
    assert merged.launches == 2 and merged.duration_ns == pytest.approx(2 * 127_232)
    assert merged.metrics["lts__t_sector_hit_rate.pct"] == pytest.approx(34.0, abs=0.5)
    assert [k.name for k in kernels][0] == "silu_gate_kernel"  # now the heaviest


def test_summary_is_bounded_and_names_the_bottleneck_evidence():
    text = summarize(parse_ncu_csv(NORM.read_text()), "ncu", top=2)
    lines = text.splitlines()
    assert len(lines) == 3 and "3 kernel(s)" in lines[0] and "lighter ones left out" in lines[0]
    first = lines[1]
    for part in ("residual_add_kernel", "DRAM 3003 GB/s (90% of peak)", "SM throughput 10%", "tensor pipe 1%"):
        assert part in first, first
    assert "occupancy 85% achieved of 100% theoretical, limited by warps per SM, 20 registers/thread" in first
    assert "L2 hit 33%" in first and "top stalls (cycles per issue): long_scoreboard 182.5, drain 6.8" in first


def test_a_tensor_core_kernel_shows_its_tensor_pipe():
    (matmul,) = parse_ncu_csv(MATMUL.read_text())
    line = summarize([matmul], "ncu").splitlines()[1]
    assert "matmul_kernel: 100% of GPU time (6.289 ms" in line and "tensor pipe 23%" in line
    assert "limited by registers, 58 registers/thread" in line


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


def test_a_profiled_candidate_that_rewrites_the_problem_file_is_undone(monkeypatch, tmp_path):
    path = tmp_path / "fused_residual_norm.py"
    shutil.copy(load_problem("fused_residual_norm").path, path)
    original = path.read_text()

    def profiled_rewriting(command, scratch, env, timeout_s):  # the candidate's process, in the profiler's place
        path.write_text(original + "\nModel.forward = lambda self, *args: args[0]\n")
        return subprocess.CompletedProcess(command, 1, "", "")

    monkeypatch.setattr(profile, "_run", profiled_rewriting)
    said = profile.run_profiler(load_problem(path), "src", "cuda", "ncu")
    assert said.startswith("No profile: the candidate changed the problem's files (fused_residual_norm.py)"), said
    assert path.read_text() == original


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
