"""Pre-started candidate processes: claimed as an evaluation begins, replaced at once, never reused after a job."""

from evaluators import spares
from evaluators.options import EvalOptions
from evaluators.toolchain import toolchain_key


def _waiting(options):
    return spares._spares.get(spares._key(options, toolchain_key(), "cpu"))


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
