"""Shared by the kernels tests: a bundled problem at a config, and its seed, imported in-process."""

import importlib.util
import types

from kernels.problem import import_problem_module, load_problem


def problem_module(name: str, config: str) -> types.ModuleType:
    """The bundled problem `name` imported with `CONFIGS[config]` applied."""
    return import_problem_module(load_problem(name), config)


def seed_module(name: str) -> types.ModuleType:
    """The bundled seed of problem `name`, imported as a fresh module."""
    path = load_problem(name).seed_path
    spec = importlib.util.spec_from_file_location(f"ks_seed_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
