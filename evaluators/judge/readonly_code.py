"""What a candidate's processes may not write: the code every trusted process of the machine loads.

A candidate runs as the user who owns the checkout, and the reference's worker and the parent import from the checkout
and the interpreter's own directories. A module planted there (a `statistics.py` beside the `evaluators` package,
ahead of the standard library on the workers' path) ran inside the next reference worker, before its tripwire took
its snapshot: a wrong output then read correct at 2.3x, and every later process started from the checkout imported it
too. The same holds for compiled kernels: a reference that builds Triton kernels or a torch.compile baseline loads
them from a cache keyed by their source, so its caches are its own (judge/environment.py) and the candidate's
processes see them read-only as well.

A candidate's worker already runs in a user namespace with a mount namespace of its own (judge/process.py). Before
the worker starts, the namespace's shell binds each directory below read-only over itself; the worker then runs with
no capabilities, so it cannot remount them, and a namespace it makes of its own inherits them locked. Where the
mounts cannot be made (no `mount`, or a kernel that refuses them to an unprivileged namespace) nothing is bound, and
docs/CONTRACTS.md says what that leaves open.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from evaluators.judge.environment import REPO_ROOT, build_root


def code_paths() -> list[Path]:
    """The checkout, the interpreter's prefixes and every directory on this process's import path, outermost only."""
    found = [REPO_ROOT, *map(Path, {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix})]
    found += [Path(entry) for entry in sys.path if entry and Path(entry).is_dir()]
    return outermost(p.resolve() for p in found if p.is_dir())


def outermost(paths) -> list[Path]:
    """`paths` without duplicates or any that lies inside another."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(outer) for outer in kept):
            kept.append(path)
    return kept


def mount_lines(readonly: list[Path], writable: list[Path]) -> list[str]:
    """Shell lines that bind `readonly` read-only, then those of `writable` inside them writable again."""
    lines = []
    for path in readonly:
        quoted = shlex.quote(str(path))
        lines += [f"mount --rbind {quoted} {quoted}", f"mount -o remount,bind,ro {quoted}"]
    for path in writable:
        if any(path.is_relative_to(outer) for outer in readonly):
            quoted = shlex.quote(str(path))
            lines += [f"mount --rbind {quoted} {quoted}", f"mount -o remount,bind,rw {quoted}"]
    return lines


def script_for(cache_dir: Path, scratch: Path, unshare: list[str]) -> str:
    """The mounts for a candidate's worker: the code and the reference's builds read-only, its own directories not.

    Empty where they cannot be made in a namespace that `unshare` opens (judge/process.py's, the one the worker gets).
    """
    trusted_builds = build_root(cache_dir, "reference")
    trusted_builds.mkdir(parents=True, exist_ok=True)
    lines = mount_lines(code_paths(), [cache_dir.resolve(), scratch.resolve()])
    # Inside the cache directory, which the candidate writes, the reference's own builds: bound read-only last.
    lines += mount_lines([trusted_builds.resolve()], [])
    script = "\n".join(["set -e", *lines, "set +e", ""])  # a mount that fails stops the worker before it starts
    return script if available(script, tuple(unshare)) else ""


PROBE = "ks-readonly-probe"  # a file the check below tries to make in the checkout


@functools.cache
def available(script: str, unshare: tuple[str, ...]) -> bool:
    """Whether `script` runs in a namespace `unshare` opens, and no file can be made in the checkout after it."""
    if not shutil.which("mount"):
        return False
    made = REPO_ROOT / PROBE
    check = f"{script}\n(: > {shlex.quote(str(made))}) 2>/dev/null && exit 3\nexit 0\n"
    try:
        done = subprocess.run([*unshare, "/bin/sh", "-c", check], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        made.unlink(missing_ok=True)
    return done.returncode == 0
