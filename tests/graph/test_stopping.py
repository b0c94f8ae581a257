"""graph.stopping: a signal only asks for a stop; the run sees it where it checks, and the ask ends with the run."""

import os
import signal

import pytest

from graph import stopping


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_asks_for_a_stop_that_is_raised_only_where_checked(number):
    before = signal.getsignal(number)
    with stopping.on_signals():
        stopping.check()  # nothing asked yet
        os.kill(os.getpid(), number)  # the handler runs here and raises nothing
        with pytest.raises(stopping.Stopped):
            stopping.check()
    assert signal.getsignal(number) == before
    stopping.check()  # the ask ended with the block
