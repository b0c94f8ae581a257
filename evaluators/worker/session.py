"""One worker's run: its job, its replies to the parent, the problem's runtime, its clocks and held outputs."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from evaluators.worker import device_memory, timing
from evaluators.worker.device_handoff import HeldOutputs, let_go, share_outputs
from evaluators.worker.handoff import output_name, write_outputs
from evaluators.worker.replies import Replies
from evaluators.worker.timing_cpu import pinned, timing_cpu
from kernels.bundle import unpack_problem
from kernels.problem_types import Shape
from kernels.runtime import problem_runtime

# The commands of a shape's timing: its blocks, the reference's drains, pins and checks between them, its pings after.
TIMING_COMMANDS = ("time", "seal", "watch", "pin", "check_reps", "drain", "ping")


class Session:
    """The job, the channel, the current shape; what the reference and candidate loops share."""

    def __init__(self, job: dict, replies: Replies):
        self.job, self.replies = job, replies
        self.device = job["device"]
        job["flush_mb"] = timing.flush_size(job.get("flush_mb"), self.device)
        self.stage = "startup"
        self.shape_name: str | None = None  # the shape being worked on, for error reports
        self.clocks = timing.Clocks(self.device)
        self.shapes = [Shape.from_json(s) for s in job["shapes"]]
        # Laid out in this worker's own directory from the parent's copy, checked against its digest.
        self.runtime = problem_runtime(unpack_problem(job["problem"], Path.cwd() / "problem"), self.device)
        self.held = HeldOutputs(self.device)  # outputs the reference may be reading through CUDA IPC
        self.handed: list[int] = []  # descriptors of the sealed files handed over since the last command
        self.counts: list = []  # the counts of its own outputs shared unread, let go before they are dropped (begin)
        self.timing_cpu = timing_cpu(self.device) if job.get("pin_timing") else None
        # (shape, its input sets and flush buffer): kept through the shape's timing commands (begin)
        self.timing_tensors: tuple[int, tuple] | None = None
        self.copying: set[int] = set()  # shapes whose calls reuse their output buffers: every held output copied
        self.sealing: tuple[int, dict, bool] | None = None  # the block just timed: (shape, held outputs, on device)

    def commands(self):
        """The parent's commands, one at a time, until it closes the pipe; each makes its shape current."""
        while (command := self.replies.next_command()) is not None:
            self.begin(command)
            self.stage = command.pop("stage", command["cmd"])
            if "shape" in command:
                shape = self.shapes[command["shape"]]
                self.shape_name = shape.name
                self.runtime.use_shape(shape)
            yield command

    def begin(self, command: dict) -> None:
        """Before a command: what the last one left for the reference goes, and the timing sets once timing is over.

        The sets live through a shape's timing commands and the reference's drains and checks between them, and go
        back as any other command begins: after the last block, that is the side's probe, never a timed command. Given
        back inside the candidate's last block, they slowed the reference's block after it (24 GiB given back kept
        another process's 8 GiB read 14 % slow for 60 ms on an H200), and the call's own 9-23 ms fell in the
        candidate's span alone: honest candidates read timing_disputed (docs/BENCHMARKS_HISTORY.md). A timing cut
        short leaves none behind for the next evaluation.
        """
        timing = command["cmd"] in TIMING_COMMANDS
        if command["cmd"] != "seal":
            self.sealing = None  # a block's outputs wait for its seal only: it comes right behind its timing
        if command["cmd"] in ("watch", "pin"):
            # The reference's watch and pin of its own block come right behind its seal: what it handed over stays.
            return
        # The parent asks again only once the reference has compared (and dropped) them.
        let_go(self.counts)
        self.held.release(keep_pool=timing)
        for fd in self.handed:
            os.close(fd)
        self.handed = []
        if self.timing_tensors is not None and not timing:
            self.timing_tensors = None
            device_memory.release_cache(self.device)

    def reply(self, event: str, meta: dict) -> None:
        """Answer the current command."""
        self.replies.reply(event, meta)

    def hand_over(self, name: str, outputs: list[torch.Tensor], on_device: bool, unread: bool = False) -> int:
        """Leave outputs for the reference, alive until the next command: shared on the device, or in a sealed file.

        Returns the descriptor the reference opens them by (the device's descriptor of them, or the file).
        `unread`: no process will open them (device_handoff.share_outputs).
        """
        if on_device:
            fd = share_outputs(name, outputs, self.counts if unread else None)
            self.held.hold(outputs)
        else:
            fd = write_outputs(name, outputs)
        self.handed.append(fd)
        return fd

    def inputs_at(self, seed: int) -> list:
        """One call's fresh arguments at the current shape."""
        return self.runtime.inputs(seed, "normal")

    def side_stream(self, model, seed: int) -> float:
        """Device work left running after the timed stream's end event (cuda only)."""
        if self.device != "cuda":
            return 0.0
        with torch.no_grad(), pinned(self.timing_cpu):
            reading = timing.side_stream_ms(
                lambda args: model(*args), self.inputs_at(seed), self.clocks, self.job["flush_mb"]
            )
        # Its flush buffer and input set go back: timed one after the other, the other side's timing comes next.
        device_memory.release_cache(self.device)
        return reading

    def warm(self, model, command: dict) -> None:
        """The parent's warm-up: `calls` calls before any timing."""
        with torch.no_grad(), pinned(self.timing_cpu):
            timing.warm_up(lambda args: model(*args), self.inputs_at, self.clocks, command["calls"], command["seed"])
        # Its input set goes back to the device before either side's timing tensors are made: the timing was laid
        # out on the memory free without it (worker/device_memory.py says what cached blocks cost).
        device_memory.release_cache(self.device)

    def time(self, model, command: dict) -> tuple[dict, dict]:
        """The parent's timing command at the current shape: facts and the held outputs by repetition.

        The command carries the shape's timing layout (its input sets, where held outputs live): the parent lays each
        shape's timing out on the memory free just before it. The held outputs wait for the block's seal (seal).
        """
        plan = timing.TimingPlan(
            first=command["first"],
            reps=command["reps"],
            nonce=command["nonce"],
            hold=command["hold"] is True,
            flush_mb=self.job["flush_mb"],
            timing_sets=command["timing_sets"],
            held_device=self.device if command["held_on_device"] else "cpu",
            lead_ms=command.get("lead_ms", 0.0),
            copy_all=command["shape"] in self.copying,
        )
        if self.timing_tensors is None or self.timing_tensors[0] != command["shape"]:
            self.timing_tensors = command["shape"], timing.timing_tensors(self.inputs_at, plan, self.device)
        with torch.no_grad(), pinned(self.timing_cpu):
            facts, held = timing.time_reps(
                lambda args: model(*args), self.inputs_at, plan, self.clocks, command["shape"], self.held.allocating,
                self.timing_tensors[1], self.replies.mark if command.get("mark") else None,
            )  # fmt: skip
        if plan.copy_all:
            self.copying.add(command["shape"])
        if plan.hold:
            self.sealing = command["shape"], held, self.device == "cuda" and command["held_on_device"]
        return facts, held

    def seal(self) -> dict:
        """The block just timed, sealed: its held outputs handed over, in a command of their own right behind it.

        Inside the timing command the handoff was harness work the parent credited at the reference's cost, which a
        process could skip; timed apart, a seal longer than the reference's counts as calls' work (judge/wall.py). On a
        GPU the reference then pins the outputs it will check (worker/pins.py): nothing of the check runs here.
        Each process keeps them until its next command, which comes only once the reference is done with them; the
        reference pins its own from what it handed over (`handed`, `held`), none reads them through the handoff.
        """
        if self.sealing is None:
            raise RuntimeError("a seal with no block timed just before it")
        (shape, held, on_device), self.sealing = self.sealing, None
        unread = self.job["role"] == "reference"
        handed = [self.hand_over(output_name(shape, "rep", rep), outputs, on_device, unread)
                  for rep, outputs in held.items()]  # fmt: skip
        return {"handed": handed}
