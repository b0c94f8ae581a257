"""Shared by the kernels tests: the bundled problems, a problem at one of its shapes, and its seed."""

import importlib.util
import types

from kernels.problem import load_problem
from kernels.problem_types import Shape
from kernels.runtime import import_problem_module

NAMES = ["bias_gelu", "fp8_blockscale_gemm", "fused_residual_norm", "layer_norm", "matmul_bf16", "row_softmax"]


def problem_module(name: str, config: str) -> types.ModuleType:
    """The bundled problem `name` imported at the first benchmark shape of `config` ("gpu" or "cpu")."""
    return import_problem_module(load_problem(name), config)


def shape_module(name: str, shape: Shape) -> types.ModuleType:
    """The bundled problem `name` imported with `shape`'s globals applied."""
    module = import_problem_module(load_problem(name))
    vars(module).update(shape.params)
    return module


def shape_cases(device: str) -> list[tuple[str, Shape]]:
    """(problem name, shape) for every bundled problem's shapes on `device` ("gpu" or "cpu")."""
    return [(name, shape) for name in NAMES for shape in load_problem(name).shape_sets[device]]


def case_id(case: tuple[str, Shape]) -> str:
    """A readable pytest id for a (problem name, shape) case."""
    name, shape = case
    return f"{name}[{shape.name}]"


def seed_module(name: str) -> types.ModuleType:
    """The bundled seed of problem `name`, imported as a fresh module."""
    path = load_problem(name).seed_path
    spec = importlib.util.spec_from_file_location(f"ks_seed_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
