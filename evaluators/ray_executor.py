"""The Ray executor: each evaluation a Ray task on one GPU of a cluster, retried elsewhere if its worker or node dies.

The problem travels as a bundle of text files and the candidate as its source; on the node the task unpacks the
problem once into the node's cache (by digest, so a reused worker process finds its warm reference worker) and
calls `evaluate()`, which runs reference and candidate in their own
sandboxed processes on the task's one GPU, as it does locally. Only options the caller set travel: the cache
directory and the environment-derived defaults are the node's own. The result comes back as a dict and is
rebuilt as an EvalResult; the driver alone writes archives and journals.

Importing this module imports Ray; `evaluators.executor.make_executor` does so only when a cluster is asked for.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from urllib.parse import urlparse

import ray
from ray import exceptions as ray_errors
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy, NodeLabelSchedulingStrategy, NotIn

from evaluators.evaluate import evaluate
from evaluators.executor import ClusterError, ExecutorProgress, InfrastructureError, placement
from evaluators.options import EvalOptions
from evaluators.result import EvalResult
from kernels.bundle import pack_problem, unpack_once
from kernels.problem import Problem

# A worker process or a node that died under an evaluation: the machinery's failure, never the candidate's
# (a candidate that crashes its own sandbox is a runtime_error inside a task that ends normally).
LOST = (
    ray_errors.WorkerCrashedError,
    ray_errors.NodeDiedError,
    ray_errors.LocalRayletDiedError,
    ray_errors.ObjectLostError,
    ray_errors.OutOfMemoryError,
    ray_errors.RaySystemError,
)
NODE_ID_LABEL = "ray.io/node-id"
CONNECT_TIMEOUT_S = 5.0
DEFAULT_ATTEMPTS = 3


def connect(cluster: str) -> bool:
    """Join (or, for "ray" with nothing to join, start) Ray; True when this call did `ray.init` (close undoes it).

    "ray" is Ray's own default: RAY_ADDRESS, else a cluster started on this machine, else a new local one.
    "auto" must find a running cluster; "ray://HOST:PORT" is Ray Client. An address that does not answer within
    CONNECT_TIMEOUT_S is a ClusterError.
    """
    target = {"ray": os.environ.get("RAY_ADDRESS"), "auto": os.environ.get("RAY_ADDRESS")}.get(cluster, cluster)
    if target and target not in ("auto", "local"):
        _probe(target)
    if ray.is_initialized():
        return False
    address = {"ray": None}.get(cluster, cluster)
    try:
        ray.init(address=address, log_to_driver=False, logging_level="warning")
    except (ConnectionError, RuntimeError, ValueError, TimeoutError, ray_errors.RayError) as error:
        reason = next(iter(str(error).strip().splitlines()), type(error).__name__)
        raise ClusterError(f"cannot join the Ray cluster ({cluster}): {reason}") from None
    return True


def _probe(address: str) -> None:
    """Open and close a TCP connection to HOST:PORT (of `ray://HOST:PORT` or a GCS address) within the timeout."""
    parsed = urlparse(address if "://" in address else f"ray://{address}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    if not parsed.hostname or port is None:
        raise ClusterError(f"bad Ray address {address!r}; expected HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((parsed.hostname, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {error.strerror or error}") from None


def cluster_device(device: str) -> str:
    """What the tasks ask for: "cuda" (one GPU each) or "cpu"; `auto` is cuda when the cluster has GPUs."""
    gpus = ray.cluster_resources().get("GPU", 0)
    if device == "cpu":
        return "cpu"
    if device == "auto":
        return "cuda" if gpus else "cpu"
    if not gpus:
        raise ClusterError(f"--device {device} asked for, but the Ray cluster has no GPUs (use --device cpu)")
    return "cuda"  # cuda:N names a GPU of this host; on a cluster each task gets whichever GPU Ray assigns


@ray.remote(num_cpus=0)
class PlacementBoard:
    """Where each attempt started: tasks post (node, GPU) here before evaluating; the driver reads it back."""

    def __init__(self):
        self.events: list[tuple[str, dict]] = []

    def started(self, key: str, where: dict) -> None:
        """Record that attempt `key` runs at `where`."""
        self.events.append((key, where))

    def since(self, seen: int) -> list[tuple[str, dict]]:
        """The records after the first `seen`."""
        return self.events[seen:]


def evaluate_on_node(bundle: dict, source: str, options: dict, device: str, key: str, board, runner=None) -> dict:
    """The Ray task: announce its placement, unpack the problem into a node-local temp dir, evaluate, return a dict."""
    gpu_ids = ray.get_gpu_ids()
    node, gpu = placement(device, str(gpu_ids[0]) if gpu_ids else None)
    where = {"node": node, "node_id": ray.get_runtime_context().get_node_id(), "gpu": gpu}
    try:
        ray.get(board.started.remote(key, where))  # before any work: a death after this is known to be on this node
    except ray_errors.RayError:
        pass  # the board serves progress and retries; the evaluation goes on without it
    options = EvalOptions(**options)
    problem = unpack_once(bundle, options.cache_dir / "problems")  # the node's cache: the same path every time
    result = (runner or evaluate)(problem, source, device, options)
    result.node, result.gpu = node, gpu
    return result.model_dump(mode="json")


def node_options(options: EvalOptions | None) -> dict:
    """The options the caller set, less the cache directory: a driver's paths and defaults mean nothing on a node."""
    if options is None:
        return {}
    return options.model_dump(mode="json", include=options.model_fields_set - {"cache_dir"})


@dataclass
class Evaluation:
    """One submitted evaluation across its attempts."""

    number: int
    bundle: object  # the ObjectRef of the problem's bundle
    source: str
    options: dict
    future: Future
    attempts: int = 0
    failed_nodes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The current attempt's name on the placement board."""
        return f"{self.number}.{self.attempts}"


class RayExecutor:
    """Evaluations as Ray tasks: one GPU each (one CPU on the CPU path), retried on another node when lost."""

    def __init__(self, cluster: str, device: str = "auto", *, max_attempts: int = DEFAULT_ATTEMPTS, runner=None):
        self.cluster = cluster
        self._started_ray = connect(cluster)
        try:
            self.device = cluster_device(device)
        except ClusterError:
            self._shutdown_ray()
            raise
        self.max_attempts = max_attempts
        self._runner = runner  # what runs on the node instead of evaluate(); tests put faults in front of it
        gpu = self.device == "cuda"
        # Retries are ours (max_retries=0), so that a retry can avoid the node that failed. A GPU task gets a fresh
        # worker process (max_calls=1): CUDA, once initialised in a process, keeps the GPUs it saw first, and Ray
        # gives the next task on a reused worker another GPU through CUDA_VISIBLE_DEVICES.
        self._task = ray.remote(num_cpus=1, num_gpus=int(gpu), max_retries=0, max_calls=int(gpu))(evaluate_on_node)
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        self._board = PlacementBoard.options(scheduling_strategy=here).remote()
        self._bundles: dict[tuple[str, str], object] = {}
        self._pending: dict[object, Evaluation] = {}
        self._where: dict[str, dict] = {}
        self._seen = 0
        self._done = self._retried = 0
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._dispatcher = threading.Thread(target=self._dispatch, name="ks-ray-dispatch", daemon=True)
        self._dispatcher.start()

    def submit(self, problem: Problem, source: str, options: EvalOptions | None = None) -> Future[EvalResult]:
        """Queue one evaluation as a Ray task; the future raises InfrastructureError when it is lost for good."""
        if self._closed.is_set():
            raise RuntimeError("the Ray executor is closed")
        future: Future[EvalResult] = Future()
        future.set_running_or_notify_cancel()
        evaluation = Evaluation(next(self._numbers), self._bundle(problem), source, node_options(options), future)
        self._launch(evaluation)
        return future

    def _bundle(self, problem: Problem):
        """The problem's bundle in Ray's object store, put there once per problem."""
        key = (str(problem.path), problem.digest)
        with self._lock:
            if key not in self._bundles:
                self._bundles[key] = ray.put(pack_problem(problem))
            return self._bundles[key]

    def _launch(self, evaluation: Evaluation) -> None:
        evaluation.attempts += 1
        strategy = "DEFAULT"
        if evaluation.failed_nodes:  # soft: another node when there is one, the same node when it is the only one
            strategy = NodeLabelSchedulingStrategy({}, soft={NODE_ID_LABEL: NotIn(*evaluation.failed_nodes)})
        ref = self._task.options(name="ks-evaluate", scheduling_strategy=strategy).remote(
            evaluation.bundle, evaluation.source, evaluation.options, self.device, evaluation.key, self._board,
            self._runner,
        )  # fmt: skip
        with self._lock:
            self._pending[ref] = evaluation

    def _dispatch(self) -> None:
        """Collect finished tasks, resubmit lost ones, resolve futures: the one thread that waits on Ray."""
        while not self._closed.is_set():
            with self._lock:
                refs = list(self._pending)
            if not refs:
                self._closed.wait(0.1)
                continue
            try:
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0.25, fetch_local=False)
            except (ConnectionError, ray_errors.RayError) as error:  # the driver lost the cluster itself
                self._fail_all(InfrastructureError(f"evaluation not judged: the driver lost the cluster ({error})"))
                return
            self._read_board()
            for ref in ready:
                self._finish(ref)

    def _fail_all(self, error: Exception) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            self._done += len(pending)
        for evaluation in pending.values():
            evaluation.future.set_exception(error)

    def _read_board(self) -> None:
        try:
            events = ray.get(self._board.since.remote(self._seen), timeout=10)
        except ray_errors.RayError:
            return  # placements are for progress and retries; evaluations go on without them
        with self._lock:
            self._seen += len(events)
            self._where.update(events)

    def _finish(self, ref) -> None:
        with self._lock:
            evaluation = self._pending.pop(ref)
            where = self._where.pop(evaluation.key, None)
        try:
            data = ray.get(ref)
        except LOST as error:
            self._lost(evaluation, error, where)
            return
        except ray_errors.TaskCancelledError:
            evaluation.future.set_exception(CancelledError("the Ray executor was closed"))
        except ray_errors.RayTaskError as error:  # evaluate() raised (a broken problem): as it would locally
            cause = getattr(error, "cause", None)
            evaluation.future.set_exception(cause if isinstance(cause, Exception) else error.as_instanceof_cause())
        else:
            evaluation.future.set_result(EvalResult.model_validate(data))
        with self._lock:
            self._done += 1

    def _lost(self, evaluation: Evaluation, error: Exception, where: dict | None) -> None:
        """Retry a lost attempt on another node while attempts remain; then fail it as not judged."""
        place = f"{where['node']} ({where['gpu']})" if where else "a node it had not reached yet"
        evaluation.failures.append(f"{type(error).__name__} on {place}")
        if where:
            evaluation.failed_nodes.append(where["node_id"])
        if evaluation.attempts < self.max_attempts and not self._closed.is_set():
            with self._lock:
                self._retried += 1
            self._launch(evaluation)
            return
        lost = "; ".join(evaluation.failures)
        evaluation.future.set_exception(
            InfrastructureError(f"evaluation not judged: lost {evaluation.attempts} times ({lost})")
        )
        with self._lock:
            self._done += 1

    def progress(self) -> ExecutorProgress:
        """Evaluations waiting for a GPU, running per node (from the placement board), done and retried."""
        with self._lock:
            running: dict[str, int] = {}
            for evaluation in self._pending.values():
                where = self._where.get(evaluation.key)
                if where:
                    running[where["node"]] = running.get(where["node"], 0) + 1
            queued = len(self._pending) - sum(running.values())
            return ExecutorProgress(queued=queued, running=running, done=self._done, retried=self._retried)

    def describe(self) -> str:
        """The cluster's size now: "ray (auto): 2 nodes, 16 GPUs, 256 CPUs; one GPU per evaluation"."""
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        resources = ray.cluster_resources()
        per_task = "one GPU per evaluation" if self.device == "cuda" else "one CPU per evaluation"
        size = f"{nodes} node(s), {int(resources.get('GPU', 0))} GPU(s), {int(resources.get('CPU', 0))} CPU(s)"
        return f"ray ({self.cluster}): {size}; {per_task}"

    def close(self) -> None:
        """Cancel what is still queued or running, stop the dispatcher, and stop Ray if this executor started it."""
        self._closed.set()
        self._dispatcher.join()
        with self._lock:
            refs = list(self._pending)
        for ref in refs:
            ray.cancel(ref)
        self._fail_all(CancelledError("the Ray executor was closed"))
        if ray.is_initialized():
            ray.kill(self._board)
        self._shutdown_ray()

    def _shutdown_ray(self) -> None:
        if self._started_ray:
            ray.shutdown()
