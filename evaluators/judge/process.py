"""Run one worker in isolation: fresh process group, scratch directory, scrubbed environment, stage timeouts.

The worker talks back over a framed pipe (channel.py); its stdout and stderr are kept only up to a cap.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from evaluators.judge.channel import BLOB, MARK, ChannelError, read_frames
from evaluators.judge.environment import worker_env
from evaluators.judge.options import EvalOptions

_EOF = b"E"


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


_UNSHARE = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child"]


class Worker:
    """One running worker process and the parent's view of it (stage, deadline, marks, blobs)."""

    def __init__(self, role: str, options: EvalOptions, toolchain: str, device: str):
        """Start the process; it imports torch and opens its device, then waits for its job (`assign`)."""
        self.role, self.options = role, options
        self.scratch = Path(tempfile.mkdtemp(prefix=f"ks-{role}-"))
        chan_r, chan_w = os.pipe()
        ctl_r, self._ctl_w = os.pipe()
        command = [sys.executable, "-s", "-m", "evaluators.worker.main", str(chan_w), str(ctl_r)]
        use_ns = options.pid_namespace if options.pid_namespace is not None else pid_namespace_available()
        # The reference runs no candidate code. Left in the parent's PID namespace, it can open the CUDA IPC
        # handles of a candidate's outputs: the driver finds an exporter from an ancestor namespace, not a sibling.
        use_ns = use_ns and role != "reference"
        if use_ns:
            # A shell as the namespace's PID 1, so the worker is an ordinary process: PID 1 ignores signals
            # it has no handler for (os.abort would then end as SIGSEGV), and its exit status tells the signal.
            command = [*_UNSHARE, "/bin/sh", "-c", '"$@"; exit $?', "ks-worker", *command]
        self.proc = subprocess.Popen(
            command,
            cwd=self.scratch,
            env=worker_env(device, self.scratch, options, toolchain),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(chan_w, ctl_r),
            start_new_session=True,  # its own process group: a timeout kills everything it started
        )
        os.close(chan_w)
        os.close(ctl_r)
        self.output = OutputCapture(self.proc.stdout, options.output_cap_kb * 1024)
        self._queue: queue.Queue = queue.Queue()
        self.marks: dict[str, float] = {}
        self.stage, self.stage_start = "startup", time.perf_counter()
        self.assigned = False  # a process that was given a job is never handed another
        self.stage_seconds: dict[str, float] = {}
        self._finished: dict[str, float] = {}  # seconds of each stage's completed visits
        threading.Thread(target=self._read_channel, args=(chan_r,), daemon=True).start()

    def assign(self, job: dict, candidate_source: str | None = None) -> None:
        """Give the waiting process its job (and the candidate's source); its start-up stage begins now."""
        if candidate_source is not None:
            (self.scratch / "candidate.py").write_text(candidate_source)
        self.stage, self.stage_start = "startup", time.perf_counter()
        self.assigned = True
        self.tell({"job": job})

    def _read_channel(self, fd: int) -> None:
        error = None
        try:
            for tag, payload in read_frames(fd, self.options.max_result_mb << 20):
                self._queue.put((time.perf_counter(), tag, payload))
        except (ChannelError, OSError) as exc:
            error = str(exc)
        self._queue.put((time.perf_counter(), _EOF, error))

    def _limit(self, stage: str) -> float:
        opts = self.options
        # Startup (importing torch) runs no candidate code; a loaded machine must not turn it into a verdict.
        limits = {
            "startup": max(opts.timeout_s, 120.0),
            "build": opts.build_timeout_s,
            "lock": opts.lock_timeout_s,
            "wait": float("inf"),
        }
        return limits.get(stage, opts.timeout_s)

    def next_blob(self) -> bytes:
        """The next result blob; marks on the way update the stage clock. Raises WorkerFailure."""
        while True:
            deadline = self.stage_start + self._limit(self.stage)
            try:
                at, tag, payload = self._queue.get(timeout=max(0.0, min(deadline - time.perf_counter(), 3600)))
            except queue.Empty:
                if time.perf_counter() < deadline:
                    continue
                limit = self._limit(self.stage)
                self.kill()
                raise WorkerFailure(
                    "timeout", self.stage, f"{self.stage} stage exceeded its {limit:g} s limit", self.output_text()
                ) from None
            if tag == BLOB:
                self._count(at)
                return payload
            if tag == MARK:
                self._on_mark(at, payload.decode(errors="replace"))
                continue
            raise self._died(payload)

    def _count(self, at: float) -> None:
        """The current stage's seconds so far, on top of its earlier visits (build and correctness recur per shape)."""
        self.stage_seconds[self.stage] = self._finished.get(self.stage, 0.0) + at - self.stage_start

    def _on_mark(self, at: float, text: str) -> None:
        if text.startswith("stage:"):
            self._count(at)
            self._finished[self.stage] = self.stage_seconds[self.stage]
            self.stage, self.stage_start = text.removeprefix("stage:"), at
        else:
            self.marks.setdefault(text, at)  # the first one counts: later copies may be forged

    def _died(self, channel_error: str | None) -> WorkerFailure:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        if channel_error:
            what = f"broke the result channel ({channel_error})"
        elif code < 0 or code > 128:
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

    def tell(self, command: dict) -> None:
        """Send the worker its next command, one JSON line on the control pipe.

        A worker that already died hears nothing; its next report (`next_blob`) says how it died.
        """
        try:
            os.write(self._ctl_w, json.dumps(command).encode() + b"\n")
        except BrokenPipeError:
            pass

    def kill(self) -> None:
        """Kill the worker's whole process group."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self) -> None:
        """Kill what is left and remove the scratch directory."""
        self.kill()
        try:
            os.close(self._ctl_w)
        except OSError:
            pass
        shutil.rmtree(self.scratch, ignore_errors=True)


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"
