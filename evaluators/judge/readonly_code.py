"""What a candidate's processes may write: their own directories, and nothing trusted processes load.

A candidate runs as the user who owns the checkout (here, root), and the reference's worker and the parent import from
the checkout and the interpreter's own directories. A module planted there (a `statistics.py` beside the `evaluators`
package, ahead of the standard library on the workers' path) ran inside the next reference worker, before its
tripwire took its snapshot: a wrong output then read correct at 2.3x, and every later process started from the
checkout imported it too. A second red team found the same class elsewhere: a header torch.compile builds into every
kernel, planted in the reference's TMPDIR (its scratch directory, a sibling of the candidate's), ran in the warm
reference of `--compile-baseline` and made a slow kernel read 1.0x against its 0.003x; and as root a candidate could
rewrite /etc (the loader reads /etc/ld.so.preload in every program) or a program on PATH. So no list of places is
trusted to be complete: every mount the candidate sees is read-only, and only its own scratch directory, the cache
directory (its own builds, the timing locks) and a simulated device's directory are writable again. The reference
builds Triton, extension and inductor kernels into caches of its own (judge/environment.py), read-only inside the
cache directory.

A candidate's worker already runs in a user namespace with a mount namespace of its own (judge/process.py). Before
the worker starts, the namespace's shell remounts every mount read-only (/proc, /sys and /dev keep theirs); the worker
then runs with no capabilities, so it cannot remount them, and a namespace it makes of its own inherits them locked.
Where the first remount is refused (no `mount`, or a kernel that refuses it to an unprivileged namespace) nothing is
changed, and docs/CONTRACTS.md says what that leaves open.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from pathlib import Path

from evaluators.judge.environment import build_root

KEPT = ("/proc", "/sys", "/dev")  # the kernel's views and devices (/dev/shm among them) keep their own flags


@functools.cache
def mount_points() -> tuple[Path, ...]:
    """Every mount point this process sees, outside KEPT, the root first (read once: workers see the same)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return (Path("/"),)
    points = []
    for line in lines:
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
        if not any(point == kept or point.startswith(kept + "/") for kept in KEPT):
            points.append(Path(point))
    return tuple(sorted(set(points), key=lambda p: len(p.parts)))


def script_for(cache_dir: Path, scratch: Path) -> str:
    """The mounts for a candidate's worker: every mount read-only, its own directories writable again.

    Writable: its own scratch directory (not the others' beside it: the reference's is its HOME and TMPDIR), the
    cache directory and a simulated device's; inside the cache directory the reference's builds read-only again.
    """
    trusted_builds = build_root(cache_dir, "reference")
    trusted_builds.mkdir(parents=True, exist_ok=True)
    shared = shared_writable(cache_dir)
    return script(list(mount_points()), [shared[0], scratch.resolve(), *shared[1:]], trusted_builds.resolve())


def shared_writable(cache_dir: Path) -> list[Path]:
    """What every candidate's worker may write besides its own scratch: the cache directory and a simulated device's."""
    writable = [cache_dir.expanduser().resolve()]
    if os.environ.get("KS_SIMULATED_DEVICE"):  # each worker keeps its own entry there (worker/device_memory.py)
        writable.append(Path(os.environ["KS_SIMULATED_DEVICE"]).resolve())
    return writable


def script(readonly: list[Path], writable: list[Path], last: Path) -> str:
    """Shell lines remounting `readonly` read-only, binding `writable` writable, then `last` (inside one) read-only.

    Where the first remount is refused, none is made; once one is made, a later one that fails stops the worker
    before it starts.
    """
    first, *rest = [f"mount -o remount,bind,ro {shlex.quote(str(path))}" for path in readonly]
    for path in writable:
        quoted = shlex.quote(str(path))
        rest += [f"mount --rbind {quoted} {quoted}", f"mount -o remount,bind,rw {quoted}"]
    quoted = shlex.quote(str(last))
    rest += [f"mount --rbind {quoted} {quoted}", f"mount -o remount,bind,ro {quoted}"]
    # The shell started in the worker's scratch directory, before its writable mount covered it: its working directory
    # is looked up again, or the worker's relative writes would meet the read-only mount beneath.
    return "\n".join([f"if {first} 2>/dev/null; then", "set -e", *rest, 'cd "$PWD"', "set +e", "fi", ""])


def refused_results_folder(path: Path, cache_dir: Path) -> str | None:
    """Why a folder of results at `path` is one candidates can write (shared_writable, KEPT), or None.

    A batch's journal and a run's archive are read back as written on a re-run: where a candidate can write, it could
    plant a settled verdict there.
    """
    resolved, shared = path.expanduser().resolve(), shared_writable(cache_dir)
    for where in [*shared, *map(Path, KEPT)]:
        if resolved == where or where in resolved.parents:
            name = "the cache directory" if where == shared[0] else str(where)
            return f"--out {path} is inside {name} ({where}), which candidates can write; choose a folder outside it"
    return None
