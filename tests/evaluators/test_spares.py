"""Pre-started candidate processes: claimed as an evaluation begins, replaced at once, never reused after a job."""

from evaluators import spares
from evaluators.options import EvalOptions
from evaluators.toolchain import toolchain_key


def _waiting(options):
    """The one spare waiting on the CPU (its depth is one), or None."""
    queue = spares._spares.get(spares._key(options, toolchain_key(), "cpu"))
    return queue[0] if queue else None


def test_the_queue_grows_with_the_claims_and_gives_the_oldest_spare(tmp_path, monkeypatch):
    monkeypatch.setitem(spares.DEPTH, "cpu", 2)
    options = EvalOptions(cache_dir=tmp_path)
    key = spares._key(options, toolchain_key(), "cpu")
    first = spares.claim(options, toolchain_key(), "cpu")  # nothing waited: a process of its own and one spare
    (older,) = spares._spares[key]
    second = spares.claim(options, toolchain_key(), "cpu")  # the second claim: two wait from now on
    assert second is older and first is not older and len(spares._spares[key]) == 2
    newer = spares._spares[key][0]
    third = spares.claim(options, toolchain_key(), "cpu")
    assert third is newer and len(spares._spares[key]) == 2
    for worker in (first, second, third):
        worker.close()
    spares.close_all()


def test_a_claim_starts_the_next_spare_and_an_unused_claim_is_not_kept_twice(tmp_path):
    options = EvalOptions(cache_dir=tmp_path)
    first = spares.claim(options, toolchain_key(), "cpu")
    successor = _waiting(options)
    assert successor is not None and successor is not first and not successor.assigned
    spares.give_back(first, options, toolchain_key(), "cpu")  # a spare already waits: this one is closed
    assert first.proc.wait(timeout=60) is not None and _waiting(options) is successor
    again = spares.claim(options, toolchain_key(), "cpu")
    assert again is successor
    again.close()
    spares.close_all()


def test_a_claim_returns_to_an_empty_pool_unless_it_was_given_a_job(tmp_path):
    options = EvalOptions(cache_dir=tmp_path)
    unused = spares.claim(options, toolchain_key(), "cpu")
    spares.close_all()  # the pool is empty, as after a batch's cleanup
    spares.give_back(unused, options, toolchain_key(), "cpu")
    assert _waiting(options) is unused
    used = spares.claim(options, toolchain_key(), "cpu")
    assert used is unused
    used.assigned = True  # as Worker.assign marks it
    spares.close_all()
    spares.give_back(used, options, toolchain_key(), "cpu")
    assert _waiting(options) is None and used.proc.wait(timeout=60) is not None
