"""Pre-started worker processes: claimed as an evaluation (or a reference) begins, replaced at once, never reused."""

from evaluators import EvalOptions, evaluate
from evaluators.judge import reference_pool, spares
from evaluators.judge.toolchain import toolchain_key
from tests.evaluators.conftest import PROBLEM, candidate


def _waiting(options):
    """The one spare waiting on the CPU (its depth is one), or None."""
    queue = spares._spares.get(spares._key("candidate", options, toolchain_key(), "cpu"))
    return queue[0] if queue else None


def test_the_queue_grows_with_the_claims_and_gives_the_oldest_spare(tmp_path, monkeypatch):
    monkeypatch.setitem(spares.DEPTH["candidate"], "cpu", 2)
    options = EvalOptions(cache_dir=tmp_path)
    key = spares._key("candidate", options, toolchain_key(), "cpu")
    first = spares.claim("candidate", options, toolchain_key(), "cpu")  # none waited: its own process, one spare
    (older,) = spares._spares[key]
    second = spares.claim("candidate", options, toolchain_key(), "cpu")  # the second claim: two wait from now on
    assert second is older and first is not older and len(spares._spares[key]) == 2
    newer = spares._spares[key][0]
    third = spares.claim("candidate", options, toolchain_key(), "cpu")
    assert third is newer and len(spares._spares[key]) == 2
    for worker in (first, second, third):
        worker.close()
    spares.close_all()


def test_a_claim_starts_the_next_spare_and_an_unused_claim_is_not_kept_twice(tmp_path):
    options = EvalOptions(cache_dir=tmp_path)
    first = spares.claim("candidate", options, toolchain_key(), "cpu")
    successor = _waiting(options)
    assert successor is not None and successor is not first and not successor.assigned
    spares.give_back(first, options, toolchain_key(), "cpu")  # a spare already waits: this one is closed
    assert first.proc.wait(timeout=60) is not None and _waiting(options) is successor
    again = spares.claim("candidate", options, toolchain_key(), "cpu")
    assert again is successor
    again.close()
    spares.close_all()


def test_a_claim_returns_to_an_empty_pool_unless_it_was_given_a_job(tmp_path):
    options = EvalOptions(cache_dir=tmp_path)
    unused = spares.claim("candidate", options, toolchain_key(), "cpu")
    spares.close_all()  # the pool is empty, as after a batch's cleanup
    spares.give_back(unused, options, toolchain_key(), "cpu")
    assert _waiting(options) is unused
    used = spares.claim("candidate", options, toolchain_key(), "cpu")
    assert used is unused
    used.assigned = True  # as Worker.assign marks it
    spares.close_all()
    spares.give_back(used, options, toolchain_key(), "cpu")
    assert _waiting(options) is None and used.proc.wait(timeout=60) is not None


def test_a_new_problems_reference_takes_the_process_started_while_the_last_one_ran(tmp_path):
    options = EvalOptions(cache_dir=tmp_path, timing=False, timeout_s=30)
    reference_pool.close_all()
    first = evaluate(str(PROBLEM), candidate("good_triton"), "cpu", options)
    (waiting,) = spares._spares[spares._key("reference", options, toolchain_key(), "cpu")]
    assert not waiting.assigned
    # Another seed is another reference (other outputs), as a suite's next problem is: it starts in the spare.
    second = evaluate(str(PROBLEM), candidate("good_triton"), "cpu", options.model_copy(update={"seed": 7}))
    assert first.status == second.status == "correct", second.message
    assert waiting.assigned and any(warm.worker is waiting for warm in reference_pool._pool.values())
    reference_pool.close_all()
    spares.close_all()


def test_only_a_spare_imports_what_a_job_may_need_and_either_wraps_the_builder(tmp_path):
    """A process claimed at once takes its job at once; the spare started after it waits, so it imports ahead."""
    options = EvalOptions(cache_dir=tmp_path, timing=False, timeout_s=30)
    spares.close_all()
    fresh = spares.claim("candidate", options, toolchain_key(), "cpu")
    waiting = _waiting(options)
    assert fresh.proc.args[-1] == "candidate" and waiting.proc.args[-1] == "spare"
    fresh.close()
    spares.close_all()
    for _ in range(2):  # the first evaluation's candidate is claimed at once, the second's is the spare after it
        result = evaluate(str(PROBLEM), candidate("sees_wrapped_builder"), "cpu", options)
        assert result.status == "correct", result.message
    spares.close_all()
