"""The Ray executor: evaluations on the GPUs of a Ray cluster, retried elsewhere if a worker or node dies.

Each GPU the executor uses is held by a slot, a Ray actor asking for that one GPU, for as long as evaluations keep
it busy: its process keeps the problem's warm reference worker and the waiting candidate spares, as the local path
does. (As plain Ray tasks, a GPU evaluation got a fresh worker process and started all of them cold.) A slot idle
for IDLE_RELEASE_S goes, so the GPU returns to the cluster. The problem travels as a bundle of text files and the
candidate as its source; the slot unpacks the problem once into its node's cache (by digest) and calls
`evaluate()`, which runs reference and candidate in their own
sandboxed processes on the task's one GPU, as it does locally. Only options the caller set travel: the cache
directory and the environment-derived defaults are the node's own. The result comes back as a dict and is
rebuilt as an EvalResult; the driver alone writes archives and journals.

Importing this module imports Ray; `evaluators.executors.make_executor` does so only when a cluster is asked for.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import deque
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from urllib.parse import urlparse

import ray
from ray import exceptions as ray_errors
from ray.util.scheduling_strategies import NodeLabelSchedulingStrategy, NotIn

from evaluators.executors.local import ClusterError, ExecutorProgress, InfrastructureError, placement
from evaluators.judge import reference_pool, spares
from evaluators.judge.evaluate import evaluate
from evaluators.judge.options import EvalOptions
from evaluators.judge.result import EvalResult
from kernels.bundle import pack_problem, unpack_once
from kernels.problem_types import Problem

# A slot's process or a node that died under an evaluation: the machinery's failure, never the candidate's
# (a candidate that crashes its own sandbox is a runtime_error inside a call that ends normally).
LOST = (
    ray_errors.RayActorError,
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
IDLE_RELEASE_S = 60.0
CAPACITY_EVERY_S = 5.0  # how often a saturated executor asks whether the cluster grew


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


class EvaluationSlot:
    """One GPU (one CPU on the CPU path) of the cluster, as a Ray actor: evaluations run here one at a time."""

    def __init__(self, device: str, runner=None):
        self.device, self.runner = device, runner  # runner: what runs instead of evaluate(); tests put faults there
        gpu_ids = ray.get_gpu_ids()
        node, gpu = placement(device, str(gpu_ids[0]) if gpu_ids else None)
        self.where = {"node": node, "node_id": ray.get_runtime_context().get_node_id(), "gpu": gpu}

    def place(self) -> dict:
        """Where this slot runs: the host, Ray's node id and the GPU."""
        return self.where

    def evaluate(self, bundle: dict, source: str, options: dict) -> dict:
        """Unpack the problem once per node, evaluate, return the result as a dict."""
        options = EvalOptions(**options)
        problem = unpack_once(bundle, options.cache_dir / "problems")  # one path per problem: its warm reference
        result = (self.runner or evaluate)(problem, source, self.device, options)
        result.node, result.gpu = self.where["node"], self.where["gpu"]
        return result.model_dump(mode="json")

    def close(self) -> None:
        """End the warm reference workers and spares this process started."""
        reference_pool.close_all()
        spares.close_all()


def node_options(options: EvalOptions | None) -> dict:
    """The options the caller set, less the cache directory: a driver's paths and defaults mean nothing on a node."""
    if options is None:
        return {}
    return options.model_dump(mode="json", include=options.model_fields_set - {"cache_dir"})


@dataclass
class Evaluation:
    """One submitted evaluation across its attempts."""

    bundle: object  # the ObjectRef of the problem's bundle
    source: str
    options: dict
    future: Future
    attempts: int = 0
    failed_nodes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@dataclass
class Slot:
    """The driver's view of one slot actor: starting (where unknown), idle, or running one evaluation."""

    handle: object
    ready: object  # the ObjectRef of place(), until it resolves
    where: dict | None = None
    running: Evaluation | None = None
    idle_since: float = field(default_factory=time.monotonic)


class RayExecutor:
    """Evaluations on slots of one GPU each (one CPU on the CPU path), retried on another node when lost."""

    def __init__(
        self,
        cluster: str,
        device: str = "auto",
        *,
        max_attempts: int = DEFAULT_ATTEMPTS,
        runner=None,
        idle_release_s: float = IDLE_RELEASE_S,
    ):
        self.cluster = cluster
        self._started_ray = connect(cluster)
        try:
            self.device = cluster_device(device)
        except ClusterError:
            self._shutdown_ray()
            raise
        self.max_attempts, self.idle_release_s = max_attempts, idle_release_s
        self._runner = runner
        # Retries are ours (no restarts, no task retries), so that a retry can avoid the node that failed.
        self._slot_class = ray.remote(
            num_cpus=1, num_gpus=int(self.device == "cuda"), max_restarts=0, max_task_retries=0
        )(EvaluationSlot)
        self._slots: list[Slot] = []
        self._queue: deque[Evaluation] = deque()
        self._calls: dict[object, Slot] = {}  # evaluate() refs in flight, by the slot running them
        self._bundles: dict[tuple[str, str], object] = {}
        self._done = self._retried = self._start_failures = 0
        self._capacity_at, self._capacity_seen = -CAPACITY_EVERY_S, 0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._dispatcher = threading.Thread(target=self._dispatch, name="ks-ray-dispatch", daemon=True)
        self._dispatcher.start()

    def submit(self, problem: Problem, source: str, options: EvalOptions | None = None) -> Future[EvalResult]:
        """Queue one evaluation; the future raises InfrastructureError when it is lost for good."""
        if self._closed.is_set():
            raise RuntimeError("the Ray executor is closed")
        future: Future[EvalResult] = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            self._queue.append(Evaluation(self._bundle(problem), source, node_options(options), future))
        return future

    def _bundle(self, problem: Problem):
        """The problem's bundle in Ray's object store, put there once per problem (called under the lock)."""
        key = (str(problem.path), problem.digest)
        if key not in self._bundles:
            self._bundles[key] = ray.put(pack_problem(problem))
        return self._bundles[key]

    def _dispatch(self) -> None:
        """The one thread that talks to the slots: start, assign, collect, retry, release."""
        while not self._closed.is_set():
            try:
                self._step()
            except (ConnectionError, ray_errors.RayError) as error:  # the driver lost the cluster itself
                self._fail_all(InfrastructureError(f"evaluation not judged: the driver lost the cluster ({error})"))
                return

    def _step(self) -> None:
        with self._lock:
            starting = {slot.ready: slot for slot in self._slots if slot.where is None}
            waiting = [*starting, *self._calls]
        if waiting:
            ready, _ = ray.wait(waiting, num_returns=len(waiting), timeout=0.1, fetch_local=False)
        else:
            self._closed.wait(0.1)
            ready = []
        for ref in ready:
            if ref in starting:
                self._started(starting[ref])
            else:
                self._finish(ref)
        self._assign()
        self._release_idle()

    def _started(self, slot: Slot) -> None:
        try:
            where = ray.get(slot.ready)
        except LOST as error:  # it died starting, or its node did: another one is started while work waits
            with self._lock:
                self._slots.remove(slot)
                self._start_failures += 1
                if self._start_failures < self.max_attempts:
                    return
                queued, self._queue = list(self._queue), deque()
                self._done += len(queued)
            cause = next(iter(str(error).strip().splitlines()), type(error).__name__)
            for evaluation in queued:
                evaluation.future.set_exception(
                    InfrastructureError(f"evaluation not judged: {self.max_attempts} slots failed to start ({cause})")
                )
            return
        with self._lock:
            slot.where, slot.idle_since = where, time.monotonic()
            self._start_failures = 0

    def _assign(self) -> None:
        """Give queued evaluations to idle slots, away from the nodes they were lost on; start slots as needed."""
        with self._lock:
            nodes = {s.where["node_id"] for s in self._slots if s.where is not None}
            for evaluation in list(self._queue):
                idle = [s for s in self._slots if s.where is not None and s.running is None]
                if not idle:
                    break
                away = [s for s in idle if s.where["node_id"] not in evaluation.failed_nodes]
                # Back on a node it was lost on only when the cluster has no other.
                slot = (away or (idle if nodes <= set(evaluation.failed_nodes) else []) or [None])[0]
                if slot is None:
                    continue
                self._queue.remove(evaluation)
                evaluation.attempts += 1
                slot.running = evaluation
                call = slot.handle.evaluate.remote(evaluation.bundle, evaluation.source, evaluation.options)
                self._calls[call] = slot
            short = len(self._queue) - sum(1 for s in self._slots if s.where is None)
            if short <= 0:
                return
            avoid, slots = self._queue[0].failed_nodes, len(self._slots)
        room = self._capacity() - slots  # asks the cluster: only when work waits for a slot
        started = [self._start_slot(avoid) for _ in range(min(short, room))]
        with self._lock:
            self._slots.extend(started)

    def _capacity(self) -> int:
        """Slots the cluster has room for: its GPUs (its CPUs on the CPU path), asked at most every few seconds."""
        now = time.monotonic()
        if now - self._capacity_at > CAPACITY_EVERY_S:
            self._capacity_at = now
            self._capacity_seen = int(ray.cluster_resources().get("GPU" if self.device == "cuda" else "CPU", 0))
        return self._capacity_seen

    def _start_slot(self, avoid: list[str]) -> Slot:
        strategy = "DEFAULT"
        if avoid:  # soft: another node when there is one, the same node when it is the only one
            strategy = NodeLabelSchedulingStrategy({}, soft={NODE_ID_LABEL: NotIn(*avoid)})
        handle = self._slot_class.options(name=None, scheduling_strategy=strategy).remote(self.device, self._runner)
        return Slot(handle, handle.place.remote())

    def _finish(self, ref) -> None:
        with self._lock:
            slot = self._calls.pop(ref)
            evaluation, slot.running, slot.idle_since = slot.running, None, time.monotonic()
        try:
            data = ray.get(ref)
        except LOST as error:
            with self._lock:
                self._slots.remove(slot)
            self._lost(evaluation, error, slot.where)
            return
        except ray_errors.RayTaskError as error:  # evaluate() raised (a broken problem): as it would locally
            cause = getattr(error, "cause", None)
            evaluation.future.set_exception(cause if isinstance(cause, Exception) else error.as_instanceof_cause())
        else:
            evaluation.future.set_result(EvalResult.model_validate(data))
        with self._lock:
            self._done += 1

    def _lost(self, evaluation: Evaluation, error: Exception, where: dict) -> None:
        """Retry a lost attempt on another node while attempts remain; then fail it as not judged."""
        evaluation.failures.append(f"{type(error).__name__} on {where['node']} ({where['gpu']})")
        evaluation.failed_nodes.append(where["node_id"])
        with self._lock:
            if evaluation.attempts < self.max_attempts and not self._closed.is_set():
                self._retried += 1
                self._queue.appendleft(evaluation)
                return
            self._done += 1
        lost = "; ".join(evaluation.failures)
        evaluation.future.set_exception(
            InfrastructureError(f"evaluation not judged: lost {evaluation.attempts} times ({lost})")
        )

    def _release_idle(self) -> None:
        """Slots idle for idle_release_s go (their warm workers with them): the GPU returns to the cluster."""
        now = time.monotonic()
        with self._lock:
            if self._queue:
                return
            idle = [s for s in self._slots if s.where is not None and s.running is None]
            gone = [s for s in idle if now - s.idle_since > self.idle_release_s]
            for slot in gone:
                self._slots.remove(slot)
        self._end(gone)

    def _end(self, slots: list[Slot]) -> None:
        """Close each slot's warm workers (an idle slot answers at once), then end its actor."""
        closing = [slot.handle.close.remote() for slot in slots if slot.running is None and slot.where is not None]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=10)
        for slot in slots:
            ray.kill(slot.handle)

    def _fail_all(self, error: Exception) -> None:
        with self._lock:
            pending = [*self._queue, *(slot.running for slot in self._slots if slot.running is not None)]
            self._queue.clear()
            self._calls.clear()
            self._done += len(pending)
        for evaluation in pending:
            if not evaluation.future.done():
                evaluation.future.set_exception(error)

    def progress(self) -> ExecutorProgress:
        """Evaluations waiting for a GPU, running per node, done and retried."""
        with self._lock:
            running: dict[str, int] = {}
            for slot in self._slots:
                if slot.running is not None:
                    running[slot.where["node"]] = running.get(slot.where["node"], 0) + 1
            return ExecutorProgress(queued=len(self._queue), running=running, done=self._done, retried=self._retried)

    def describe(self) -> str:
        """The cluster's size now: "ray (auto): 2 nodes, 16 GPUs, 256 CPUs; one GPU per evaluation"."""
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
        resources = ray.cluster_resources()
        per_task = "one GPU per evaluation" if self.device == "cuda" else "one CPU per evaluation"
        size = f"{nodes} node(s), {int(resources.get('GPU', 0))} GPU(s), {int(resources.get('CPU', 0))} CPU(s)"
        return f"ray ({self.cluster}): {size}; {per_task}"

    def close(self) -> None:
        """Fail what is still queued or running, end every slot, and stop Ray if this executor started it."""
        self._closed.set()
        self._dispatcher.join()
        self._fail_all(CancelledError("the Ray executor was closed"))
        with self._lock:
            slots, self._slots = self._slots, []
        if ray.is_initialized():
            self._end(slots)
        self._shutdown_ray()

    def _shutdown_ray(self) -> None:
        if self._started_ray:
            ray.shutdown()
