"""Live progress of a run with rich: iteration, node, best speedup so far, tokens and cost."""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.text import Text

from kernels.speedup import format_speedup


class Progress:
    """Turns the graph's streamed updates and custom events into a status line and one line per event."""

    def __init__(self, console: Console, iterations: int):
        self.console = console
        self.iterations = iterations
        self.iteration = 0
        self.node = "setup"
        self.best: tuple[str | None, float | None] = (None, None)
        self.tokens = 0
        self.dollars = 0.0
        self.live = Live(self._status(), console=console, refresh_per_second=4, transient=True)

    def __enter__(self) -> Progress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def handle(self, namespace: tuple[str, ...], mode: str, chunk: dict) -> None:
        """Take one streamed item: ("updates", {node: update}) or ("custom", event)."""
        if mode == "custom":
            self._evaluated(chunk)
        else:
            for node, update in chunk.items():
                self.node = node
                self._updated(node, update or {})
        self.live.update(self._status())

    def _updated(self, node: str, update: dict) -> None:
        for call in update.get("llm_calls", []):
            self.tokens += call.input_tokens + call.output_tokens
            self.dollars += call.cost_usd
        if "iteration" in update:
            self.iteration = update["iteration"]
        if node == "setup":
            self.console.print(f"setup: device {update.get('device')}, run dir {update.get('run_dir')}")
        elif node == "selector" and update.get("selection"):
            selection = update["selection"]
            self.console.print(f"iteration {self.iteration}: base {selection['base_id']}: {selection['rationale']}")
        elif node == "hypothesizer":
            for task in update.get("tasks", []):
                self.console.print(f"  slot {task.slot} on {task.device}: {task.experiment.get('title')}")
        if "best_speedup" in update:
            previous = self.best[1]
            self.best = (update.get("best_id"), update["best_speedup"])
            if update["best_speedup"] is not None and (previous is None or update["best_speedup"] > previous):
                self.console.print(f"  best so far: {self.best[0]} at {format_speedup(self.best[1])}")
        for note in update.get("notes", []):
            self.console.print(f"  note: {note}", style="yellow")

    def _evaluated(self, event: dict) -> None:
        speed = f" {format_speedup(event['speedup'])}" if event.get("speedup") is not None else ""
        attempt = f" (after debug attempt {event['attempt']})" if event.get("attempt") else ""
        attempt += " (strict re-evaluation)" if event.get("strict") else ""
        attempt += " (control: the reference judged as itself)" if event.get("control") else ""
        style = "green" if event.get("status") == "correct" and not event.get("set_aside") else "red"
        line = f"  slot {event.get('slot')}: {event.get('status')}{speed}{attempt}"
        if event.get("status") != "correct" and event.get("message"):
            line += f": {event['message'][:100]}"
        elif event.get("set_aside"):
            line += f", set aside: {event['set_aside'][:100]}"
        self.console.print(line, style=style, markup=False)

    def _status(self) -> Text:
        best_id, best = self.best
        best_text = f"{format_speedup(best)} ({best_id})" if best is not None else "-"
        return Text(
            f"iteration {self.iteration}/{self.iterations} | {self.node} | best {best_text} | "
            f"{self.tokens} tokens | ${self.dollars:.4f}",
            style="bold",
        )
