"""The Ray executor on a GPU host: one GPU per task, named in the result, agreeing with the local path."""

import pytest
import torch

from evaluators import EvalOptions, evaluate
from evaluators.executors import make_executor
from kernels.problem import load_problem
from tests.evaluators.conftest import PROBLEM, candidate

pytestmark = pytest.mark.gpu
ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def gpu_executor():
    ray.init(include_dashboard=False, log_to_driver=False)
    executor = make_executor("ray", "auto")
    yield executor
    executor.close()
    ray.shutdown()


def test_auto_asks_for_one_gpu_per_task_and_says_so(gpu_executor):
    assert gpu_executor.device == "cuda"
    assert f"{torch.cuda.device_count()} GPU(s)" in gpu_executor.describe()


def test_an_evaluation_on_a_ray_gpu_agrees_with_the_local_one(gpu_executor, cache_dir):
    problem = load_problem(PROBLEM)
    remote = gpu_executor.submit(problem, candidate("good_triton")).result()
    local = evaluate(problem, candidate("good_triton"), "cuda", EvalOptions(cache_dir=cache_dir))
    assert remote.status == local.status == "correct", remote.message
    assert remote.timing == "cuda-events" and remote.speedup is not None
    assert remote.gpu.startswith(torch.cuda.get_device_name(0)) and "#" in remote.gpu


def test_evaluations_of_one_problem_on_a_ray_gpu_find_its_reference_warm(gpu_executor):
    # What stalled the first Ray GPU path: each evaluation got a fresh Ray worker and started every worker cold.
    problem, options = load_problem(PROBLEM), EvalOptions(timing=False)
    results = [gpu_executor.submit(problem, candidate("good_triton"), options).result() for _ in range(3)]
    assert {result.status for result in results} == {"correct"}, results[0].message
    assert [result.reference_warm for result in results[1:]] == [True, True]


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_concurrent_evaluations_get_different_gpus(gpu_executor):
    problem, options = load_problem(PROBLEM), EvalOptions(timing=False)
    futures = [
        gpu_executor.submit(problem, candidate("good_triton"), options) for _ in range(2 * torch.cuda.device_count())
    ]
    results = [future.result() for future in futures]
    assert {result.status for result in results} == {"correct"}
    assert len({result.gpu for result in results}) == torch.cuda.device_count()
