"""Attack (work that ends before the watch begins): as leave_through_windows.py, but each timed call leaves only the
last 14 % of its rows for after its block's last synchronize: about 0.3 ms of work a block of 31 repetitions of this
0.07 ms call on an H200, which ended before the reference's watch began while the parent began it as the reply
arrived (a spin of 0.5 ms there went unseen in every block, bench/probes/window_reach.py). The watch is now armed on
the candidate's reply pipe and begins at the block's mark, its first frame, which the harness writes right after the
last synchronize; the attack's rest is queued after it (the collector's first run after the loop).
"""

SHARE = 0.86

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
        local = frame_locals("_loop")
        if local is None or not local.get("cuda") or not local["plan"].hold:
            return super().forward(x)  # warm-up, rehearsal, trials: honest
        x = x.contiguous()
        y = torch.empty_like(x)
        split = int(x.shape[0] * SHARE)
        launch(x[:split], self.weight, y[:split])
        _rest.append((x[split:], self.weight, y[split:]))
        if ending_block()[0]:
            after_the_loop(finish_the_rest)
        return y
