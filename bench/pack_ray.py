"""Pack Ray for a GPU host that cannot reach a package index: one compressed file plus the few wheels it lacks.

    python bench/pack_ray.py [--ray-version 2.60.0] [--python-version 3.12] [--out .ray]

Ray's wheel (about 79 MB for CPython 3.12) holds much the evaluator never loads: the Java jars, the dashboard's
web client, and the RLlib, Tune, Train, Serve, Data and LLM libraries. This downloads the wheel for the target
Python on x86-64 Linux, drops those, and writes the rest (the package and its metadata) as
`ray-VERSION-slim.tar.xz` (about 20 MB), beside wheels of the dependencies `--with` names (by default those a
stock CUDA image of ours lacked: jsonschema and what it needs). On the host:

    mkdir -p /tmp/site && tar -xJf .ray/ray-*-slim.tar.xz -C /tmp/site
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .ray/*.whl
    export PYTHONPATH=/tmp/site:$PYTHONPATH

Every other dependency of Ray (click, filelock, msgpack, packaging, protobuf, pyyaml, requests, aiohttp) must
already be there; `python3 -c "import ray; ray.init(); print(ray.cluster_resources())"` tells.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

UNUSED = ("jars", "dashboard/client/build", "rllib", "tune", "train", "serve", "data", "llm")
LACKING = ("jsonschema", "jsonschema-specifications", "referencing", "rpds-py")


def download(names: list[str], python_version: str, into: Path) -> None:
    """Binary wheels for CPython `python_version` on x86-64 Linux, without their dependencies."""
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               "--python-version", python_version, "--implementation", "cp", "-d", str(into)]  # fmt: skip
    for platform in platforms:
        command += ["--platform", platform]
    done = subprocess.run(command + names, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"pack_ray: pip download failed: {done.stderr.strip().splitlines()[-1:]}")


def slim(wheel: Path, out: Path) -> Path:
    """The wheel's package and metadata, less UNUSED, as a tar.xz."""
    with tempfile.TemporaryDirectory() as staging:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                path = Path(archive.extract(member, staging))
                mode = (member.external_attr >> 16) & 0o777
                if mode:  # zipfile drops the executable bit of Ray's binaries (raylet, gcs_server)
                    path.chmod(mode)
        for part in UNUSED:
            shutil.rmtree(Path(staging) / "ray" / part, ignore_errors=True)
        version = wheel.name.split("-")[1]
        target = out / f"ray-{version}-slim.tar.xz"
        with tarfile.open(target, "w:xz") as packed:
            for entry in sorted(Path(staging).iterdir()):
                packed.add(entry, arcname=entry.name)
    return target


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ray-version", help="default: the Ray installed here")
    p.add_argument("--python-version", default="3.12", help="the host's Python (default 3.12)")
    p.add_argument("--with", dest="extra", nargs="*", default=list(LACKING), help="dependency wheels to add")
    p.add_argument("--out", type=Path, default=Path(".ray"))
    args = p.parse_args()
    version = args.ray_version
    if version is None:
        try:
            from importlib.metadata import version as installed

            version = installed("ray")
        except ImportError:
            sys.exit("pack_ray: no Ray here; name one with --ray-version")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as wheels:
        download([f"ray=={version}"], args.python_version, Path(wheels))
        packed = slim(next(Path(wheels).glob("ray-*.whl")), args.out)
    if args.extra:
        download(args.extra, args.python_version, args.out)
    sizes = sorted((f.stat().st_size, f.name) for f in args.out.iterdir())
    print(f"{packed}: {packed.stat().st_size / 2**20:.1f} MiB; with it: {', '.join(name for _, name in sizes)}")


if __name__ == "__main__":
    main()
