"""Attack (work left through the host windows): each timed call computes only the first SHARE of its rows, and its
timer honestly times that; right after the last synchronize of each block, before the reply, the rest of every
repetition's rows is queued on a stream of its own. The held outputs are finished on the device while the candidate
replies and seals and the reference opens them: windows in which the device idles in the reference's own blocks.
Before the reference watched them (worker/window_watch.py) only what outlasted the opens delayed the pin, and then
counted only into the parent's figure, below which a timer may claim the allowance.

With SHARE at 0.86 (test_redteam_timing_order.py's `finish_before_watch`), the rest is about 0.3 ms a block of 31
repetitions of this 0.07 ms call on an H200: work that ended before the watch began while the parent began it as the
reply arrived (a 0.5 ms spin there went unseen in every block, bench/probes/window_reach.py). The watch is now armed on
the candidate's marks and begins at the block's mark, which the harness writes right after the last synchronize;
the rest is queued after it (the collector's first run after the loop).
"""

SHARE = 0.5

_rest: list = []  # (x, weight, y) of each repetition's rows left for after the loop
_side: list = []


def finish_the_rest() -> None:
    if not _side:
        _side.append(torch.cuda.Stream())
    with torch.cuda.stream(_side[0]):
        for x, weight, y in _rest:
            launch(x, weight, y)
    _rest.clear()


class ModelNew(_Honest):
    def forward(self, x):
        if held_repetition() is None:
            return super().forward(x)  # warm-up, rehearsal, trials: honest
        x = x.contiguous()
        y = torch.empty_like(x)
        split = int(x.shape[0] * SHARE)
        launch(x[:split], self.weight, y[:split])
        _rest.append((x[split:], self.weight, y[split:]))
        if ending_block()[0]:
            after_the_loop(finish_the_rest)
        return y
