"""Where evaluations run: this host's GPUs (local) or a Ray cluster's; journals make batches resumable.

`make_executor` picks one from a `--cluster` value. The Ray module is imported only when a cluster is asked for,
and it builds on the local one, never the other way round.
"""

from __future__ import annotations

from evaluators.executors.local import ClusterError, Executor, LocalExecutor, cluster_spec, local_devices

__all__ = ["make_executor"]


def make_executor(cluster: str | None, device: str = "auto", *, cpu_slots: int = 1) -> Executor:
    """The executor for a `--cluster` value: None or "local" evaluates on this host, the others on Ray.

    Local: one slot per GPU of `device` (`cuda:N` is one slot), or `cpu_slots` CPU slots. Ray: connects now,
    so an unreachable cluster is a ClusterError before any work is spent.
    """
    if cluster in (None, "local"):
        devices = local_devices(device)
        return LocalExecutor(devices * cpu_slots if devices == ["cpu"] else devices)
    try:
        cluster_spec(cluster)
    except ValueError as error:
        raise ClusterError(str(error)) from None
    try:
        from evaluators.executors.ray import RayExecutor
    except ImportError:
        raise ClusterError(f"--cluster {cluster} needs Ray: pip install -e '.[cluster]'") from None
    return RayExecutor(cluster, device)
