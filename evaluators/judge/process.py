"""Run one worker in isolation: fresh process group, scratch directory, scrubbed environment, stage timeouts.

The parent talks to it by command and reply only (judge/channel.py): each command has a stage, and the stage's
time limit runs on the parent's clock from the moment the command was sent. Nothing the worker sends can move a
deadline or a timestamp. Its stdout and stderr are kept only up to a cap.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evaluators.judge import parent_death, pause, readonly_code, scratch
from evaluators.judge.channel import ChannelClosed, ChannelError, ChannelTimeout, read_reply, unsolicited
from evaluators.judge.environment import worker_env

if TYPE_CHECKING:
    from pathlib import Path

    from evaluators.judge.options import EvalOptions
    from evaluators.judge.process_options import ProcessOptions


class WorkerFailure(Exception):
    """The worker timed out, died, or broke the protocol; `kind` is "timeout" or "crash"."""

    def __init__(self, kind: str, stage: str, message: str, output: str):
        super().__init__(message)
        self.kind, self.stage, self.message, self.output = kind, stage, message, output


class OutputCapture:
    """Keeps the head and tail of a stream, dropping the middle, so a flood of prints costs no memory."""

    def __init__(self, stream, cap_bytes: int):
        self.head, self.tail, self.total, self.cap = bytearray(), bytearray(), 0, cap_bytes
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(1 << 16), b""):
            self.total += len(chunk)
            room = self.cap // 4 - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail = (self.tail + chunk)[-(self.cap - self.cap // 4) :]

    def text(self, join_timeout: float = 0.0) -> str:
        """Head, an elision note, tail: what a debugger reads (waiting `join_timeout` s for the stream's end)."""
        self._thread.join(join_timeout)
        kept = len(self.head) + len(self.tail)
        middle = f"\n[... {self.total - kept} bytes of output dropped ...]\n" if self.total > kept else ""
        return self.head.decode(errors="replace") + middle + self.tail.decode(errors="replace")


@functools.cache
def pid_namespace_available() -> bool:
    """Whether `unshare` can give workers their own PID namespace (and /proc) without privileges."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run([*_UNSHARE, "true"], capture_output=True, timeout=10)
    return probe.returncode == 0


def harness_pid(root: int, own: object) -> int | None:
    """The process below (or at) `root` whose PID in its own namespace is `own`, by the parent's numbering."""
    for pid in sorted({root} | pause.descendants(root)):
        try:
            status = (pause.PROC / str(pid) / "status").read_text()
        except OSError:
            continue
        ids = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
        if ids and ids[-1] == str(own):
            return pid
    return None


def confined(command: list[str], options: ProcessOptions | EvalOptions, scratch: Path) -> list[str]:
    """`command`, to run candidate code: in a PID and mount namespace of its own where one is asked for or available.

    A shell is the namespace's PID 1, so the command is an ordinary process: PID 1 ignores signals it has no handler
    for (os.abort would then end as SIGSEGV), and its exit status tells the signal. Before it runs, the shell binds the
    code trusted processes load read-only (readonly_code.py); the command then runs without capabilities. `unshare`
    dies with the parent, and the namespace with it; nothing in it can stop that (parent_death.py).
    """
    use_ns = options.pid_namespace if options.pid_namespace is not None else pid_namespace_available()
    if not use_ns:
        return command
    inside = parent_death.without_capabilities(command)
    mounts = readonly_code.script_for(options.cache_dir, scratch)
    return parent_death.dies_with_parent([*_UNSHARE, "/bin/sh", "-c", mounts + '"$@"; exit $?', "ks-worker", *inside])


_dismissed: list[Worker] = []  # killed, maybe not yet gone (Worker.dismiss)
_dismissed_lock = threading.Lock()
_UNSHARE = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child"]


@dataclass
class Reply:
    """One reply: its event and metadata, and the parent's own clock around the command (seconds)."""

    event: str
    meta: dict
    sent: float
    received: float
    then: Reply | None = None  # the reply to the command sent right behind this one (Worker.call's `then`)

    @property
    def span(self) -> float:
        """Seconds from sending the command to having its whole reply, on the parent's clock."""
        return self.received - self.sent


_SERIALS = itertools.count()  # each worker's: a descriptor's number is reused, a serial never


class Worker:
    """One running worker process and the parent's view of it: its commands, their deadlines and stage times."""

    def __init__(self, role: str, options: ProcessOptions | EvalOptions, toolchain: str, device: str,
                 spare: bool = False):  # fmt: skip
        """Start the process; it imports torch and opens its device, then waits for its first command.

        A `spare` may wait a while for its job, so it also imports what a job may need (worker/main.py).
        """
        self.role, self.options, self.device = role, options, device
        self.scratch = scratch.directory(role)
        self._chan_r, chan_w = os.pipe()
        ctl_r, self._ctl_w = os.pipe()
        # The side channel: a candidate's marks of its blocks' ends, a pipe the parent never reads (its read end goes
        # to the reference: hand_marks); a reference's socket, over which the parent hands it those read ends.
        self.serial = next(_SERIALS)
        self._marks_serial: int | None = None  # a reference's: the candidate whose marks it was handed last
        if role == "reference":
            self._side, side = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            side_fd = side.detach()
        else:
            self._side, side_fd = os.pipe()
        try:
            self.proc = parent_death.popen(
                self._command(chan_w, ctl_r, side_fd, spare),
                cwd=self.scratch,
                env=worker_env(device, self.scratch, options, toolchain, role),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(chan_w, ctl_r, side_fd),
                start_new_session=True,  # its own process group: a timeout kills everything it started
            )
        except BaseException:
            self._release()  # no process for a close to end later: its pipes and directory go now
            raise
        finally:
            os.close(chan_w)
            os.close(ctl_r)
            os.close(side_fd)
        self.output = OutputCapture(self.proc.stdout, options.output_cap_kb * 1024)
        self.stage = "startup"
        self.assigned = False  # a process that was given a job is never handed another
        self.harness_pid: int | None = None  # the harness's process, by the parent's PIDs (assign finds it)
        self.stage_seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def _command(self, chan_w: int, ctl_r: int, side_fd: int, spare: bool) -> list[str]:
        """The worker's command line: in a PID namespace of its own where one is asked for or available."""
        # -P: the working directory (the worker's scratch, which another process of the user could write) is not on
        # the import path, so nothing planted there is imported as a module.
        command = [sys.executable, "-s", "-P", "-m", "evaluators.worker", str(chan_w), str(ctl_r), str(side_fd),
                   self.role]  # fmt: skip
        command += ["spare"] if spare else []
        # The reference runs no candidate code. Left in the parent's PID namespace, it can open the CUDA IPC
        # handles of a candidate's outputs: the driver finds an exporter from an ancestor namespace, not a sibling.
        return command if self.role == "reference" else confined(command, self.options, self.scratch)

    def assign(self, job: dict, candidate_source: str | None, stage: str) -> Reply:
        """Give the waiting process its job (and the candidate's source) and wait for the job's first reply.

        A ping first: the parent's clock then tells start-up (the spare still importing torch) from the job itself.
        The source travels in the job, over the control pipe: a file in the scratch directory, which any process of
        the user can reach, was replaced there by another evaluation's candidate.
        """
        if candidate_source is not None:
            job = job | {"candidate_source": candidate_source}
        self.assigned = True
        pong = self.call({"cmd": "ping"}, "pong", "startup")
        # Found before the job, so before any candidate code runs: the reference opens what the candidate hands over
        # through this process's descriptors (worker/handoff.py).
        self.harness_pid = harness_pid(self.proc.pid, pong.meta.get("pid"))
        return self.call({"cmd": "job", "job": job}, None, stage)

    def call(self, command: dict, event: str | None, stage: str) -> Reply:
        """Send one command and wait, under `stage`'s limit, for its one reply (`event`, or "error").

        A command may carry `then`: (a second command, its event), sent with it, whose reply is the first's `then`.
        The second is already in the pipe when the first is answered, so the parent's clock splits the two at the
        first reply with no gap between them in which the worker's process waits for the parent.

        Raises WorkerFailure: a timeout, a death, or a broken protocol (the process is killed).
        """
        with self._lock:
            self.stage = stage
            if unsolicited(self._chan_r):
                raise self._protocol_broken("sent a frame nobody asked for") if self._has_bytes() else self._died()
            then = command.get("then")
            ids = [secrets.randbits(63) for _ in range(2 if then else 1)]
            sent = time.perf_counter()
            self._send({"id": ids[0], "stage": stage, **{k: v for k, v in command.items() if k != "then"}})
            if then:
                self._send({"id": ids[1], "stage": stage, **then[0]})
            reply = self._reply(ids[0], event, stage, sent, sent)
            if then and reply.event != "error":
                second = self._reply(ids[1], then[1], stage, sent, reply.received)
                if second.event == "error":
                    return second  # the pair's failure, as the caller reads any command's
                reply.then = second
            return reply

    @property
    def marks(self) -> tuple[int, int]:
        """A candidate's marks of its blocks' ends: (this worker's serial, the read end of its side pipe)."""
        return self.serial, self._side

    def hand_marks(self, marks: tuple[int, int]) -> bool:
        """Hand this reference a candidate's marks (`Worker.marks`) over its socket (SCM_RIGHTS), unless it has them.

        Whether they were handed now. The reference gets a descriptor of its own, which nothing the candidate does to
        the pipe can take from it: opened by a path through /proc, the pipe's mode decided, and a candidate's fchmod
        shut it (a red team's).
        """
        serial, fd = marks
        if self._marks_serial == serial:
            return False
        if self._side is None:
            return True  # released: no command reaches it either
        try:
            socket.send_fds(self._side, [b"m"], [fd])
        except OSError:
            return True  # a reference already gone hears nothing, as _send; its next command's reply says how
        self._marks_serial = serial
        return True

    def post(self, command: dict, stage: str) -> None:
        """Send a command that has no reply of its own (the reference's "watch": the pin right behind it answers)."""
        with self._lock:
            self.stage = stage
            self._send({"id": secrets.randbits(63), "stage": stage, **command})

    def _reply(self, command_id: int, event: str | None, stage: str, sent: float, since: float) -> Reply:
        """The reply to `command_id`, sent at `sent` (its stage's limit runs from there), its span counted `since`."""
        limit = self._limit(stage)
        try:
            got, meta = read_reply(self._chan_r, command_id, sent + limit)
        except ChannelTimeout:
            self.kill()
            raise WorkerFailure(
                "timeout", stage, f"{stage} stage exceeded its {limit:g} s limit", self.output_text()
            ) from None
        except ChannelClosed:
            raise self._died() from None
        except ChannelError as exc:
            raise self._protocol_broken(f"sent {exc}") from None
        received = time.perf_counter()
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + received - since
        if event is not None and got not in (event, "error"):
            raise self._protocol_broken(f"sent {got!r} where {event!r} was expected")
        return Reply(got, meta, since, received)

    def _has_bytes(self) -> bool:
        """Whether the waiting data is bytes (a frame) rather than the end of the stream (a death)."""
        try:
            return bool(os.read(self._chan_r, 1))
        except OSError:
            return False

    def _protocol_broken(self, what: str) -> WorkerFailure:
        self.kill()
        return WorkerFailure("crash", self.stage, f"the {self.role} process {what}", self.output_text())

    def _limit(self, stage: str) -> float:
        opts = self.options
        # Startup (importing torch) runs no candidate code; a loaded machine must not turn it into a verdict.
        limits = {"startup": max(opts.timeout_s, 120.0), "build": opts.build_timeout_s}
        return limits.get(stage, opts.timeout_s)

    def _died(self) -> WorkerFailure:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            what = f"was killed by {_signal_name(number)}"
            if number == signal.SIGKILL:  # our own timeouts are reported as such; this came from outside
                what += " (the kernel's out-of-memory killer sends it: too little host memory?)"
        elif code == 0:
            what = "exited with status 0 before finishing (os._exit or sys.exit in candidate code?)"
        else:
            what = f"exited with status {code}"
        self.kill()
        message = f"the {self.role} process {what} during {self.stage}"
        return WorkerFailure("crash", self.stage, message, self.output_text())

    def output_text(self, settle_s: float = 0.0) -> str:
        """The worker's captured output, complete if it exits within `settle_s` seconds."""
        try:
            self.proc.wait(timeout=settle_s)
        except subprocess.TimeoutExpired:
            return self.output.text()
        return self.output.text(join_timeout=2.0)

    def _send(self, command: dict) -> None:
        """One JSON line on the control pipe; a worker that already died hears nothing (its reply says how)."""
        try:
            os.write(self._ctl_w, json.dumps(command).encode() + b"\n")
        except BrokenPipeError:
            pass

    def kill(self) -> None:
        """Kill the worker's whole process group and wait for it to go."""
        if self.proc.poll() is None:
            self.stop()
            self.proc.wait()

    def paused(self):
        """A context in which every process of the worker is stopped (judge/pause.py)."""
        return pause.stopped(self.proc.pid)

    def stop(self) -> None:
        """Send the worker's whole process group SIGKILL, without waiting (several can then go at once)."""
        if self.proc.poll() is None:  # not reaped: its pid is still its own
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        """Kill what is left, wait for it to go, and remove the scratch directory."""
        self.kill()
        self._release()

    def dismiss(self) -> None:
        """Kill the worker and remove its scratch directory; wait_for_dismissed() waits for it to go.

        A killed process with a CUDA context takes a moment to go while the driver tears the context down. The
        evaluation that used it need not wait for that; the next one must, before its workers use the memory.
        """
        self.stop()
        self._release()
        with _dismissed_lock:
            _dismissed.append(self)

    def _release(self) -> None:
        side, self._side = self._side, None
        if isinstance(side, socket.socket):
            side.close()
        for fd in (self._ctl_w, self._chan_r, side if isinstance(side, int) else -1):
            try:
                os.close(fd)
            except OSError:
                pass
        self._ctl_w = self._chan_r = -1  # a second close must not close a number the process has since reused
        shutil.rmtree(self.scratch, ignore_errors=True)


def wait_for_dismissed(device: str | None = None) -> None:
    """Wait until every dismissed worker (of `device`; None: of any) is gone and its device memory free.

    Another GPU's are not waited for, and none is waited for under the lock: evaluations on a host's other GPUs
    start meanwhile (`cuda` is `cuda:0`).
    """
    with _dismissed_lock:
        going = [w for w in _dismissed if device is None or _same_device(w.device, device)]
        _dismissed[:] = [w for w in _dismissed if w not in going]
    for worker in going:
        worker.proc.wait()


def _same_device(a: str, b: str) -> bool:
    return (f"{a}:0" if a == "cuda" else a) == (f"{b}:0" if b == "cuda" else b)


def close_together(workers: list[Worker], wait: bool = True) -> None:
    """Close several workers: all killed at once, then each waited for (each takes a moment to give its GPU back).

    Without `wait` they are dismissed: at exit, nothing that follows needs their memory.
    """
    for worker in workers:
        worker.stop()
    for worker in workers:
        worker.close() if wait else worker.dismiss()


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"
