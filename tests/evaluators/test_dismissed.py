"""A finished evaluation's candidate is killed and left to go; the next evaluation waits for it before it starts."""

from evaluators.judge import process
from evaluators.judge.options import EvalOptions
from evaluators.judge.process import Worker
from evaluators.judge.toolchain import toolchain_key


def test_the_next_evaluation_waits_for_the_last_ones_candidate(run_cpu):
    process.wait_for_dismissed()
    first = run_cpu("torch_only")
    (dismissed,) = process._dismissed
    assert first.status == "correct" and not dismissed.scratch.exists()  # killed, its directory gone
    second = run_cpu("torch_only")
    assert second.status == "correct"
    assert dismissed.proc.returncode is not None  # reaped before the second evaluation began
    assert process._dismissed != [dismissed] and len(process._dismissed) == 1
    process.wait_for_dismissed()
    assert not process._dismissed


def test_closing_without_a_wait_leaves_the_workers_to_go(tmp_path):
    """At exit nothing needs the workers' memory: they are killed and not waited for."""
    options = EvalOptions(cache_dir=tmp_path)
    workers = [Worker(role, options, toolchain_key(), "cpu") for role in ("reference", "candidate")]
    waited = []
    for worker in workers:
        worker.proc.wait = lambda timeout=None, wait=worker.proc.wait, pid=worker.proc.pid: waited.append(pid) or wait()
    process.close_together(workers, wait=False)
    assert not waited and not any(worker.scratch.exists() for worker in workers)
    process.wait_for_dismissed()
    assert sorted(waited) == sorted(worker.proc.pid for worker in workers)
    assert all(worker.proc.returncode < 0 for worker in workers)


class Gone:
    def __init__(self, device, waited):
        self.device, self.proc = device, self
        self.waited = waited

    def wait(self):
        self.waited.append(self.device)


def test_an_evaluation_waits_only_for_its_own_gpus_dismissed_workers(monkeypatch):
    waited = []
    monkeypatch.setattr(process, "_dismissed", [Gone("cuda:1", waited), Gone("cuda", waited), Gone("cuda:0", waited)])
    process.wait_for_dismissed("cuda:0")
    assert waited == ["cuda", "cuda:0"]  # `cuda` is GPU 0
    assert [w.device for w in process._dismissed] == ["cuda:1"]
    process.wait_for_dismissed()
    assert waited[-1] == "cuda:1" and not process._dismissed
