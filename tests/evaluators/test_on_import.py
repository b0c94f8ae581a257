"""worker/on_import.py: a function run on a module as its import finishes, or at once if it is already imported."""

import importlib
import importlib.util
import inspect
import sys

import pytest

from evaluators.worker import on_import


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A fresh package `ks_probe_pkg` with one submodule, importable from tmp_path, removed afterwards."""
    root = tmp_path / "ks_probe_pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "builder.py").write_text('def load():\n    """The original."""\n    return "original"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ks_probe_pkg.builder"
    for name in [n for n in sys.modules if n.startswith("ks_probe_pkg")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, on_import._Finder)]
    on_import._pending.clear()


def test_a_module_not_yet_imported_is_changed_before_its_importer_sees_it(package):
    seen = []
    on_import.when_imported(package, lambda module: seen.append("first"))
    on_import.when_imported(package, lambda module: setattr(module, "load", lambda: "wrapped"))
    assert seen == [] and package not in sys.modules
    from ks_probe_pkg.builder import load

    assert load() == "wrapped" and seen == ["first"]


def test_a_module_already_imported_is_changed_at_once(package):
    module = importlib.import_module(package)
    on_import.when_imported(package, lambda m: setattr(m, "load", lambda: "wrapped"))
    assert module.load() == "wrapped"
    assert not any(isinstance(f, on_import._Finder) for f in sys.meta_path)  # nothing left waiting


def test_the_wrapped_loader_still_serves_the_source_and_other_imports_pass(package):
    on_import.when_imported(package, lambda module: None)
    import ks_probe_pkg  # the package itself is not watched: its own loader

    assert not isinstance(ks_probe_pkg.__loader__, on_import._Then)
    module = importlib.import_module(package)
    assert isinstance(module.__loader__, on_import._Then)
    assert '"""The original."""' in inspect.getsource(module.load)
    assert package not in on_import._pending  # run once; a reload is an ordinary import


def test_asking_whether_a_module_exists_does_not_use_up_what_waits_for_its_import(package):
    on_import.when_imported(package, lambda module: setattr(module, "load", lambda: "wrapped"))
    assert importlib.util.find_spec(package) is not None  # found, never loaded: as torch asks for Triton
    assert package in on_import._pending and package not in sys.modules
    from ks_probe_pkg.builder import load

    assert load() == "wrapped"
    assert package not in on_import._pending
