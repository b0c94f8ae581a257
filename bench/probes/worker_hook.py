"""The probes' way into the workers: a sitecustomize that runs a patch on a module as a worker imports it.

Workers take PYTHONPATH from the parent's environment (judge/environment.py), so a directory put first on it with
this file in it reaches every worker the probe's evaluations start; nothing of the project's own code changes.
"""

from pathlib import Path

FINDER = '''
import importlib.machinery
import sys


class _PatchOnImport:
    """Runs `patch(module)` once `name` has been executed, as it is first imported."""

    def __init__(self, name, patch):
        self.name, self.patch = name, patch

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            self.patch(module)

        spec.loader.exec_module = exec_module
        return spec


def patch_on_import(name, patch):
    sys.meta_path.insert(0, _PatchOnImport(name, patch))
'''


def write_site(directory: Path, body: str) -> None:
    """`directory`/sitecustomize.py: the finder, then `body`, which calls patch_on_import(name, patch)."""
    (directory / "sitecustomize.py").write_text(FINDER + body)
